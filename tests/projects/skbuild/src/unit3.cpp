#include "heavy.hpp"

std::uint64_t unit3() { return demo::sweep<3>(std::make_index_sequence<60>{}); }
