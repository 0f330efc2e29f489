#pragma once
// Unicode helpers for the tokenizer: UTF-8 decoding that survives invalid
// bytes, property lookups for the pre-tokenizer regexes, and NFC.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sdw::unicode {

// An invalid UTF-8 byte b decodes to kInvalidByteBase + b: outside Unicode,
// so it has no property and only matches negated classes ("other").
inline constexpr char32_t kInvalidByteBase = 0x110000;
inline constexpr char32_t kReplacement = 0xFFFD;

enum class Property {
    Letter,          // L
    LetterUpper,     // Lu
    LetterLower,     // Ll
    LetterTitle,     // Lt
    LetterModifier,  // Lm
    LetterOther,     // Lo
    Mark,            // M
    Number,          // N
    DecimalNumber,   // Nd
    WhiteSpace,      // White_Space
};

bool hasProperty(char32_t cp, Property p);
// "L", "Letter", "Lu", "N", "Nd", "M", "White_Space", ... ; nullopt if unknown.
std::optional<Property> propertyByName(std::string_view name);

// Decoded text: code points with the byte offset each one starts at;
// offsets has one extra entry, the total length.
struct DecodedText {
    std::u32string codePoints;
    std::vector<std::uint32_t> offsets;
};
DecodedText decodeUtf8(std::string_view text);

void appendUtf8(std::string& out, char32_t cp);

// Rust's String::from_utf8_lossy: each maximal invalid subpart becomes U+FFFD.
std::string utf8Lossy(std::string_view bytes);
// Length of the longest prefix of `bytes` that ends on a character boundary,
// not counting a trailing incomplete (but so far valid) sequence.
std::size_t utf8CompletePrefix(std::string_view bytes);

std::uint8_t combiningClass(char32_t cp);
// Canonical composition (NFC) of UTF-8 text; invalid bytes pass through.
std::string nfc(std::string_view text);
// Compatibility composition (NFKC): compatibility decomposition, then as NFC.
std::string nfkc(std::string_view text);

const char* unicodeVersion();

}  // namespace sdw::unicode
