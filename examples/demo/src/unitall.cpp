#include <cstdint>
std::uint64_t unit1();
std::uint64_t unit2();
std::uint64_t unit3();
std::uint64_t unit4();
std::uint64_t unit5();
std::uint64_t unit6();
std::uint64_t unit7();
std::uint64_t unit8();
std::uint64_t unit9();
std::uint64_t unit10();
std::uint64_t unit11();
std::uint64_t unit12();
std::uint64_t unit_total() {
  return 0 + unit1() + unit2() + unit3() + unit4() + unit5() + unit6() + unit7() + unit8() + unit9() + unit10() + unit11() + unit12();
}
