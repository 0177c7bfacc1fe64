#include "heavy.hpp"

std::uint64_t unit11() { return demo::sweep<11>(std::make_index_sequence<220>{}); }
