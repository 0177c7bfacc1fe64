#include "heavy.hpp"

std::uint64_t unit5() { return demo::sweep<5>(std::make_index_sequence<60>{}); }
