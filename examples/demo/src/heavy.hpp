// Template-heavy code whose only purpose is to keep the compiler busy for a while.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

namespace demo {

template <std::size_t N>
struct Fib {
  static constexpr std::uint64_t value = Fib<N - 1>::value + Fib<N - 2>::value;
};
template <>
struct Fib<0> { static constexpr std::uint64_t value = 0; };
template <>
struct Fib<1> { static constexpr std::uint64_t value = 1; };

template <std::size_t Seed, std::size_t... I>
constexpr std::uint64_t mix(std::index_sequence<I...>) {
  std::uint64_t h = Seed;
  ((h = h * 1099511628211ULL ^ (Fib<(I * 7 + Seed) % 90>::value + I)), ...);
  return h;
}

template <std::size_t Seed, std::size_t Width>
struct Layer {
  using Tuple = decltype(std::tuple_cat(std::declval<std::array<int, (Seed % 7) + 1>>(),
                                        std::declval<std::array<long, (Width % 5) + 1>>()));
  static constexpr std::uint64_t value = mix<Seed>(std::make_index_sequence<Width>{});
};

template <std::size_t Seed, std::size_t... I>
std::uint64_t sweep(std::index_sequence<I...>) {
  std::map<std::string, std::variant<int, double, std::string, std::vector<int>>> m;
  std::uint64_t acc = 0;
  ((acc += Layer<Seed * 131 + I, 48 + (I % 16)>::value,
    m[std::to_string(I)] = std::vector<int>(I % 5, static_cast<int>(I))), ...);
  return acc + m.size();
}

}  // namespace demo
