#include "heavy.hpp"

std::uint64_t unit4() { return demo::sweep<4>(std::make_index_sequence<60>{}); }
