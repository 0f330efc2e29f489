#include "core/unicode.h"

#include "core/unicode_tables.h"

#include <algorithm>
#include <array>

namespace sdw::unicode {

namespace {

namespace t = tables;

bool inRanges(const t::CodePointRange* ranges, std::size_t n, char32_t cp) {
    const auto* end = ranges + n;
    const auto* it = std::upper_bound(ranges, end, cp,
                                      [](char32_t c, const t::CodePointRange& r) { return c < r.first; });
    if (it == ranges) return false;
    --it;
    return cp <= it->last;
}

enum class Utf8Status { Ok, Invalid, Incomplete };

// Decodes one sequence at p[0..n). Ok: `len` bytes give `cp`. Invalid: `len`
// is the maximal invalid subpart (>= 1). Incomplete: a valid prefix runs into
// the end of the input (`len` == n).
Utf8Status decodeOne(const unsigned char* p, std::size_t n, char32_t& cp, std::size_t& len) {
    const unsigned char b0 = p[0];
    if (b0 < 0x80) {
        cp = b0;
        len = 1;
        return Utf8Status::Ok;
    }
    std::size_t need = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        need = 1;
        cp = b0 & 0x1F;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        need = 2;
        cp = b0 & 0x0F;
        if (b0 == 0xE0) lo = 0xA0;
        if (b0 == 0xED) hi = 0x9F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        need = 3;
        cp = b0 & 0x07;
        if (b0 == 0xF0) lo = 0x90;
        if (b0 == 0xF4) hi = 0x8F;
    } else {
        len = 1;
        return Utf8Status::Invalid;
    }
    for (std::size_t k = 1; k <= need; ++k) {
        if (k >= n) {
            len = n;
            return Utf8Status::Incomplete;
        }
        const unsigned char b = p[k];
        const unsigned char l = k == 1 ? lo : 0x80;
        const unsigned char h = k == 1 ? hi : 0xBF;
        if (b < l || b > h) {
            len = k;
            return Utf8Status::Invalid;
        }
        cp = (cp << 6) | (b & 0x3F);
    }
    len = need + 1;
    return Utf8Status::Ok;
}

constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28;
constexpr char32_t kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

void decomposeInto(std::u32string& out, char32_t cp) {
    if (cp >= kSBase && cp < kSBase + kSCount) {
        const char32_t s = cp - kSBase;
        out.push_back(kLBase + s / kNCount);
        out.push_back(kVBase + (s % kNCount) / kTCount);
        if (s % kTCount != 0) out.push_back(kTBase + s % kTCount);
        return;
    }
    const auto* end = t::kDecomposition + t::kDecompositionSize;
    const auto* it = std::lower_bound(t::kDecomposition, end, cp,
                                      [](const t::Decomposition& d, char32_t c) { return d.codePoint < c; });
    if (it != end && it->codePoint == cp) {
        out.append(it->mapping, it->length);
        return;
    }
    out.push_back(cp);
}

// NFKD of one code point where it differs from NFD (already fully decomposed).
bool compatDecomposeInto(std::u32string& out, char32_t cp) {
    const auto* end = t::kCompatDecomposition + t::kCompatDecompositionSize;
    const auto* it = std::lower_bound(t::kCompatDecomposition, end, cp,
                                      [](const t::CompatDecomposition& d, char32_t c) { return d.codePoint < c; });
    if (it == end || it->codePoint != cp) return false;
    out.append(t::kCompatPool + it->offset, it->length);
    return true;
}

std::optional<char32_t> compose(char32_t a, char32_t b) {
    if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
        return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
    if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase &&
        b < kTBase + kTCount)
        return a + (b - kTBase);
    const auto* end = t::kComposition + t::kCompositionSize;
    const auto* it = std::lower_bound(t::kComposition, end, std::pair{a, b},
                                      [](const t::Composition& c, const std::pair<char32_t, char32_t>& k) {
                                          return std::pair{c.first, c.second} < k;
                                      });
    if (it != end && it->first == a && it->second == b) return it->composite;
    return std::nullopt;
}

void appendCodePoint(std::string& out, char32_t cp) {
    if (cp >= kInvalidByteBase) {
        out.push_back(static_cast<char>(cp - kInvalidByteBase));
        return;
    }
    appendUtf8(out, cp);
}

}  // namespace

bool hasProperty(char32_t cp, Property p) {
    switch (p) {
        case Property::Letter: return inRanges(t::kLetter, t::kLetterSize, cp);
        case Property::LetterUpper: return inRanges(t::kLetterUpper, t::kLetterUpperSize, cp);
        case Property::LetterLower: return inRanges(t::kLetterLower, t::kLetterLowerSize, cp);
        case Property::LetterTitle: return inRanges(t::kLetterTitle, t::kLetterTitleSize, cp);
        case Property::LetterModifier: return inRanges(t::kLetterModifier, t::kLetterModifierSize, cp);
        case Property::LetterOther: return inRanges(t::kLetterOther, t::kLetterOtherSize, cp);
        case Property::Mark: return inRanges(t::kMark, t::kMarkSize, cp);
        case Property::Number: return inRanges(t::kNumber, t::kNumberSize, cp);
        case Property::DecimalNumber: return inRanges(t::kDecimalNumber, t::kDecimalNumberSize, cp);
        case Property::WhiteSpace: return inRanges(t::kWhiteSpace, t::kWhiteSpaceSize, cp);
    }
    return false;
}

std::optional<Property> propertyByName(std::string_view name) {
    struct Named {
        std::string_view name;
        Property property;
    };
    static constexpr std::array<Named, 20> kNames{{
        {"L", Property::Letter},          {"Letter", Property::Letter},
        {"Lu", Property::LetterUpper},    {"Uppercase_Letter", Property::LetterUpper},
        {"Ll", Property::LetterLower},    {"Lowercase_Letter", Property::LetterLower},
        {"Lt", Property::LetterTitle},    {"Titlecase_Letter", Property::LetterTitle},
        {"Lm", Property::LetterModifier}, {"Modifier_Letter", Property::LetterModifier},
        {"Lo", Property::LetterOther},    {"Other_Letter", Property::LetterOther},
        {"M", Property::Mark},            {"Mark", Property::Mark},
        {"N", Property::Number},          {"Number", Property::Number},
        {"Nd", Property::DecimalNumber},  {"Decimal_Number", Property::DecimalNumber},
        {"White_Space", Property::WhiteSpace}, {"Whitespace", Property::WhiteSpace},
    }};
    for (const auto& n : kNames)
        if (n.name == name) return n.property;
    return std::nullopt;
}

DecodedText decodeUtf8(std::string_view text) {
    DecodedText d;
    d.codePoints.reserve(text.size());
    d.offsets.reserve(text.size() + 1);
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    std::size_t i = 0;
    while (i < text.size()) {
        char32_t cp = 0;
        std::size_t len = 0;
        if (decodeOne(p + i, text.size() - i, cp, len) == Utf8Status::Ok) {
            d.codePoints.push_back(cp);
            d.offsets.push_back(static_cast<std::uint32_t>(i));
            i += len;
        } else {
            // Each invalid byte stands alone.
            d.codePoints.push_back(kInvalidByteBase + p[i]);
            d.offsets.push_back(static_cast<std::uint32_t>(i));
            ++i;
        }
    }
    d.offsets.push_back(static_cast<std::uint32_t>(text.size()));
    return d;
}

void appendUtf8(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

std::string utf8Lossy(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
    std::size_t i = 0;
    while (i < bytes.size()) {
        char32_t cp = 0;
        std::size_t len = 0;
        if (decodeOne(p + i, bytes.size() - i, cp, len) == Utf8Status::Ok)
            out.append(bytes.substr(i, len));
        else
            appendUtf8(out, kReplacement);
        i += len;
    }
    return out;
}

std::size_t utf8CompletePrefix(std::string_view bytes) {
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
    std::size_t i = 0;
    while (i < bytes.size()) {
        char32_t cp = 0;
        std::size_t len = 0;
        if (decodeOne(p + i, bytes.size() - i, cp, len) == Utf8Status::Incomplete) return i;
        i += len;
    }
    return i;
}

std::uint8_t combiningClass(char32_t cp) {
    const auto* end = t::kCombiningClass + t::kCombiningClassSize;
    const auto* it = std::upper_bound(t::kCombiningClass, end, cp,
                                      [](char32_t c, const t::CombiningClassRange& r) { return c < r.first; });
    if (it == t::kCombiningClass) return 0;
    --it;
    return cp <= it->last ? it->combiningClass : 0;
}

namespace {

// NFC (compat false) or NFKC (compat true) of UTF-8 text: decomposition (canonical,
// or compatibility), canonical ordering, canonical composition (UAX #15).
std::string normalize(std::string_view text, bool compat) {
    const DecodedText in = decodeUtf8(text);
    std::u32string buf;
    buf.reserve(in.codePoints.size() + 8);
    for (char32_t cp : in.codePoints) {
        if (cp >= kInvalidByteBase)
            buf.push_back(cp);
        else if (!compat || !compatDecomposeInto(buf, cp))
            decomposeInto(buf, cp);
    }
    // Canonical ordering: stable sort of every run of non-starters.
    for (std::size_t i = 0; i < buf.size();) {
        if (combiningClass(buf[i]) == 0) {
            ++i;
            continue;
        }
        std::size_t j = i;
        while (j < buf.size() && buf[j] < kInvalidByteBase && combiningClass(buf[j]) != 0) ++j;
        std::stable_sort(buf.begin() + static_cast<std::ptrdiff_t>(i), buf.begin() + static_cast<std::ptrdiff_t>(j),
                         [](char32_t a, char32_t b) { return combiningClass(a) < combiningClass(b); });
        i = j;
    }
    // Canonical composition (UAX #15).
    if (!buf.empty()) {
        std::size_t starterPos = 0;
        char32_t starter = buf[0];
        int lastClass = combiningClass(starter) ? 256 : 0;
        std::size_t outPos = 1;
        for (std::size_t k = 1; k < buf.size(); ++k) {
            const char32_t ch = buf[k];
            const int chClass = ch >= kInvalidByteBase ? 0 : combiningClass(ch);
            const auto composite = (lastClass < chClass || lastClass == 0) && starter < kInvalidByteBase
                                       ? compose(starter, ch)
                                       : std::nullopt;
            if (composite) {
                buf[starterPos] = *composite;
                starter = *composite;
                continue;
            }
            if (chClass == 0) {
                starterPos = outPos;
                starter = ch;
            }
            lastClass = chClass;
            buf[outPos++] = ch;
        }
        buf.resize(outPos);
    }
    std::string out;
    out.reserve(text.size());
    for (char32_t cp : buf) appendCodePoint(out, cp);
    return out;
}

}  // namespace

std::string nfc(std::string_view text) {
    // Everything below U+0300 is stable under NFC; its UTF-8 never has a
    // lead byte of 0xCC or more.
    if (std::none_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) >= 0xCC; }))
        return std::string(text);
    return normalize(text, false);
}

std::string nfkc(std::string_view text) {
    // ASCII is stable under NFKC (compatibility mappings start at U+00A0).
    if (std::none_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; }))
        return std::string(text);
    return normalize(text, true);
}

const char* unicodeVersion() { return t::kUnicodeVersion; }

}  // namespace sdw::unicode
