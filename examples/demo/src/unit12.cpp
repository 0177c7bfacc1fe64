#include "heavy.hpp"

std::uint64_t unit12() { return demo::sweep<12>(std::make_index_sequence<220>{}); }
