#include "heavy.hpp"

std::uint64_t unit1() { return demo::sweep<1>(std::make_index_sequence<60>{}); }
