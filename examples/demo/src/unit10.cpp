#include "heavy.hpp"

std::uint64_t unit10() { return demo::sweep<10>(std::make_index_sequence<220>{}); }
