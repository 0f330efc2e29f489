#include "core/unicode.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <new>
#include <stdexcept>

namespace sdw::unicode {

namespace {

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

// White_Space (PropList.txt), stable since Unicode 6: the categories Zs, Zl
// and Zp plus these controls.
bool isWhiteSpaceControl(char32_t cp) { return (cp >= 0x09 && cp <= 0x0D) || cp == 0x85; }

}  // namespace

bool hasProperty(char32_t cp, Property p) {
    if (cp > 0x10FFFF) return false;
    const auto c = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
    switch (p) {
        case Property::Letter:
            return c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LL || c == UTF8PROC_CATEGORY_LT ||
                   c == UTF8PROC_CATEGORY_LM || c == UTF8PROC_CATEGORY_LO;
        case Property::LetterUpper: return c == UTF8PROC_CATEGORY_LU;
        case Property::LetterLower: return c == UTF8PROC_CATEGORY_LL;
        case Property::LetterTitle: return c == UTF8PROC_CATEGORY_LT;
        case Property::LetterModifier: return c == UTF8PROC_CATEGORY_LM;
        case Property::LetterOther: return c == UTF8PROC_CATEGORY_LO;
        case Property::Mark:
            return c == UTF8PROC_CATEGORY_MN || c == UTF8PROC_CATEGORY_MC || c == UTF8PROC_CATEGORY_ME;
        case Property::Number:
            return c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_NO;
        case Property::DecimalNumber: return c == UTF8PROC_CATEGORY_ND;
        case Property::WhiteSpace:
            return c == UTF8PROC_CATEGORY_ZS || c == UTF8PROC_CATEGORY_ZL || c == UTF8PROC_CATEGORY_ZP ||
                   isWhiteSpaceControl(cp);
    }
    return false;
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

bool isValidUtf8(std::string_view text) {
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    std::size_t i = 0;
    while (i < text.size()) {
        if (p[i] < 0x80) {
            ++i;
            continue;
        }
        char32_t cp = 0;
        std::size_t len = 0;
        if (decodeOne(p + i, text.size() - i, cp, len) != Utf8Status::Ok) return false;
        i += len;
    }
    return true;
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

namespace {

// utf8proc_map of valid UTF-8 (the whole of it: NUL bytes included).
void appendMapped(std::string& out, std::string_view valid, utf8proc_option_t options) {
    if (valid.empty()) return;
    utf8proc_uint8_t* mapped = nullptr;
    const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(valid.data()),
                                            static_cast<utf8proc_ssize_t>(valid.size()), &mapped, options);
    const std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(mapped, &std::free);
    if (n == UTF8PROC_ERROR_NOMEM) throw std::bad_alloc();
    if (n < 0) throw std::runtime_error(std::string("Unicode normalization: ") + utf8proc_errmsg(n));
    out.append(reinterpret_cast<const char*>(mapped), static_cast<std::size_t>(n));
}

// NFC (compat false) or NFKC (compat true) of UTF-8 text: each run of valid
// UTF-8 normalized by utf8proc, the invalid bytes between them kept as they are.
std::string normalize(std::string_view text, bool compat) {
    const auto options = static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE |
                                                        (compat ? UTF8PROC_COMPAT : 0));
    std::string out;
    out.reserve(text.size() + text.size() / 8);
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    std::size_t runStart = 0, i = 0;
    while (i < text.size()) {
        char32_t cp = 0;
        std::size_t len = 0;
        if (p[i] < 0x80 || decodeOne(p + i, text.size() - i, cp, len) == Utf8Status::Ok) {
            i += p[i] < 0x80 ? 1 : len;
            continue;
        }
        appendMapped(out, text.substr(runStart, i - runStart), options);
        out.push_back(text[i]);  // each invalid byte stands alone
        runStart = ++i;
    }
    appendMapped(out, text.substr(runStart), options);
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

const char* unicodeVersion() { return utf8proc_unicode_version(); }

}  // namespace sdw::unicode
