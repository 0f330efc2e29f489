#pragma once
// SHA-256 (FIPS 180-4), streaming. Used to fingerprint model files in run
// provenance; kept dependency-free so sdw_core needs no crypto library.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace sdw {

class Sha256 {
public:
    using Digest = std::array<std::uint8_t, 32>;

    Sha256() { reset(); }

    void reset();
    void update(std::span<const std::byte> data);
    void update(std::string_view data) { update(std::as_bytes(std::span(data.data(), data.size()))); }

    // Finishes the hash; the object is reset afterwards and can be reused.
    Digest finish();
    std::string finishHex();

    static std::string toHex(const Digest& digest);

private:
    void compress(const std::uint8_t* block);

    std::array<std::uint32_t, 8> state_{};
    std::array<std::uint8_t, 64> buffer_{};
    std::size_t buffered_ = 0;
    std::uint64_t totalBytes_ = 0;
};

// Lower-case hex SHA-256 of an in-memory buffer.
std::string sha256Hex(std::string_view data);

}  // namespace sdw
