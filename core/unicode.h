#pragma once
// Unicode helpers for the tokenizer: UTF-8 decoding that survives invalid
// bytes, the few character properties the tokenizer checks itself (the
// pre-tokenizer regexes have Oniguruma's, core/split_regex.h), and NFC / NFKC.
// Categories and normalization come from utf8proc; White_Space is a list here
// (utf8proc has general categories only).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sdw::unicode {

// An invalid UTF-8 byte b decodes to kInvalidByteBase + b: outside Unicode,
// so it has no property.
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

// Decoded text: code points with the byte offset each one starts at;
// offsets has one extra entry, the total length.
struct DecodedText {
    std::u32string codePoints;
    std::vector<std::uint32_t> offsets;
};
DecodedText decodeUtf8(std::string_view text);

void appendUtf8(std::string& out, char32_t cp);
bool isValidUtf8(std::string_view text);

// Rust's String::from_utf8_lossy: each maximal invalid subpart becomes U+FFFD.
std::string utf8Lossy(std::string_view bytes);
// Length of the longest prefix of `bytes` that ends on a character boundary,
// not counting a trailing incomplete (but so far valid) sequence.
std::size_t utf8CompletePrefix(std::string_view bytes);

// Canonical composition (NFC) of UTF-8 text; invalid bytes pass through and
// nothing composes or reorders across them.
std::string nfc(std::string_view text);
// Compatibility composition (NFKC): compatibility decomposition, then as NFC.
std::string nfkc(std::string_view text);

// The Unicode version of the categories and normalization (utf8proc's).
const char* unicodeVersion();

}  // namespace sdw::unicode
