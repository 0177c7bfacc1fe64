#include "heavy.hpp"

std::uint64_t unit2() { return demo::sweep<2>(std::make_index_sequence<60>{}); }
