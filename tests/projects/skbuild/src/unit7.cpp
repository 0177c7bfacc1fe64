#include "heavy.hpp"

std::uint64_t unit7() { return demo::sweep<7>(std::make_index_sequence<60>{}); }
