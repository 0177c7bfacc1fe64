#include "heavy.hpp"

std::uint64_t unit9() { return demo::sweep<9>(std::make_index_sequence<220>{}); }
