#include "heavy.hpp"

std::uint64_t unit8() { return demo::sweep<8>(std::make_index_sequence<60>{}); }
