#include <cstdint>
#include <cstdio>

std::uint64_t unit_total();

int main() {
  std::printf("demo built: %llu\n", static_cast<unsigned long long>(unit_total()));
  return 0;
}
