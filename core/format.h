#pragma once
// Quantities as people read them, for messages and command-line output.

#include <cstdint>
#include <string>

namespace sdw {

// Binary units with one decimal: 512 -> "512 B", 1536 -> "1.5 KiB",
// 64 << 20 -> "64.0 MiB", up to EiB.
std::string humanBytes(std::uint64_t bytes);

}  // namespace sdw
