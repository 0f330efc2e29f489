#pragma once
// Name tables for settings enums: inside the code a setting is an enum; its
// name is what the CLI, the GUI forms, JSON and run files carry. A table lists
// every value once with its name; name() and parse() go through it.
//
//   inline constexpr NameEntry<Order> kOrderNames[] = {{Order::Parallel, "parallel"}, ...};
//   parseName(kOrderNames, "order", "sequential")  // Order::Sequential
//   parseName(kOrderNames, "order", "x")           // invalid_argument "order must be parallel or sequential, got 'x'"

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace sdw {

template <class E>
struct NameEntry {
  E value;
  std::string_view name;
};

// The accepted names for messages: "a", "a or b", "a, b or c".
template <class E, std::size_t N>
std::string acceptedNames(const NameEntry<E> (&table)[N]) {
  std::string out;
  for (std::size_t i = 0; i < N; ++i) {
    if (i > 0) out += i + 1 == N ? " or " : ", ";
    out += table[i].name;
  }
  return out;
}

template <class E, std::size_t N>
std::string_view nameOf(const NameEntry<E> (&table)[N], E value) {
  for (const auto& e : table)
    if (e.value == value) return e.name;
  throw std::logic_error("name table: value without a name");
}

// Throws std::invalid_argument "<what> must be <accepted>, got '<text>'".
template <class E, std::size_t N>
E parseName(const NameEntry<E> (&table)[N], std::string_view what, std::string_view text) {
  for (const auto& e : table)
    if (e.name == text) return e.value;
  throw std::invalid_argument(std::string(what) + " must be " + acceptedNames(table) + ", got '" + std::string(text) +
                              "'");
}

}  // namespace sdw
