#include "heavy.hpp"

std::uint64_t unit6() { return demo::sweep<6>(std::make_index_sequence<60>{}); }
