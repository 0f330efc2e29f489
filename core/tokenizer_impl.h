#pragma once
// Internals of core/tokenizer.cpp shared with core/tokenizer_load.cpp: the
// parsed tokenizer (Tokenizer::Impl) and the byte-level helpers. Not a public
// header.
//
// Two kinds of BPE are held:
//  - byte-level (GPT-2, Llama-3, Qwen): text is mapped byte by byte onto 256
//    printable characters before the merges; a ByteLevel pre-tokenizer and
//    decoder say so;
//  - SentencePiece-style (Llama-2, Mistral, llama2.c): spaces become U+2581
//    "▁" (a Prepend + Replace normalizer or a Metaspace pre-tokenizer), the
//    merges start from Unicode characters, and a character missing from the
//    vocabulary falls back to its UTF-8 bytes as "<0xXX>" tokens
//    (byte_fallback); the decoder turns "▁" back into spaces, "<0xXX>" into
//    bytes and drops the one space that the encoder put in front.

#include "core/regex_lite.h"
#include "core/tokenizer.h"

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sdw::tokenizer_detail {

using json = nlohmann::json;

inline constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// GPT-2's reversible map from bytes to printable code points.
const std::array<char32_t, 256>& byteToUnicode();
// The bytes a vocabulary string stands for if every character is one of the
// 256 byte characters.
std::optional<std::string> byteLevelBytes(std::string_view token);
// "<0x0A>" -> 0x0A; -1 when the text is not a byte-fallback token.
int byteFallbackByte(std::string_view token);

inline bool isAsciiSpace(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// Every occurrence of `from` (non-empty) replaced by `to`.
inline std::string replaceAll(std::string_view s, std::string_view from, std::string_view to) {
    std::string out;
    std::size_t pos = 0;
    for (std::size_t hit; !from.empty() && (hit = s.find(from, pos)) != std::string_view::npos; pos = hit + from.size())
        out.append(s, pos, hit - pos).append(to);
    out.append(s, pos);
    return out;
}

inline std::uint64_t pairKey(std::int32_t a, std::int32_t b) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) | static_cast<std::uint32_t>(b);
}

}  // namespace sdw::tokenizer_detail

namespace sdw {

struct Tokenizer::Impl {
    using json = tokenizer_detail::json;

    std::string source;

    // Vocabulary: model vocab and added tokens.
    std::unordered_map<std::string, std::int32_t> textToId;
    std::vector<std::string> idToText;
    std::vector<std::string> idToBytes;  // filled by finishDecoder()
    std::vector<std::uint8_t> special;
    std::unordered_map<std::string, std::int32_t> bytesToModelId;  // for ignore_merges
    std::array<std::int32_t, 256> byteId{};          // byte-level: byte -> its character's id
    std::array<std::int32_t, 256> byteFallbackId{};  // SentencePiece: byte -> "<0xXX>" id
    std::optional<std::int32_t> unkId;

    bool byteLevel = true;      // false: SentencePiece-style (see the top of this file)
    bool byteFallback = false;  // model.byte_fallback
    bool fuseUnk = false;       // model.fuse_unk

    struct Merge {
        std::int32_t rank;
        std::int32_t newId;
    };
    std::unordered_map<std::uint64_t, Merge> merges;
    bool ignoreMerges = false;

    // Added tokens, matched on raw text through a byte trie.
    struct AddedToken {
        std::int32_t id;
        bool lstrip = false;
        bool rstrip = false;
    };
    struct TrieNode {
        std::map<unsigned char, std::int32_t> children;
        std::int32_t token = -1;  // index into added
    };
    std::vector<AddedToken> added;
    std::vector<TrieNode> trie{TrieNode{}};

    // Normalizers in file order.
    struct NormalizerStep {
        enum class Kind { Nfc, Prepend, Replace } kind;
        std::string text;         // Prepend: what; Replace: the pattern
        std::string replacement;  // Replace: by what
    };
    std::vector<NormalizerStep> normalizers;

    struct SplitStage {
        RegexLite regex;
        bool removeMatches = false;  // behaviour "Removed" rather than "Isolated"
    };
    std::vector<SplitStage> splits;           // before the ByteLevel step
    bool addPrefixSpace = false;              // ByteLevel add_prefix_space
    std::optional<RegexLite> byteLevelRegex;  // ByteLevel use_regex

    struct Metaspace {
        std::string replacement = "\xE2\x96\x81";  // U+2581
        enum class Prepend { Always, First, Never } prepend = Prepend::Always;
        bool split = true;
    };
    std::optional<Metaspace> metaspace;  // the Metaspace pre-tokenizer

    // Decoder (SentencePiece-style): text replacements, "<0xXX>" to bytes,
    // and how many leading spaces of the decoded text are dropped.
    bool decoderByteLevel = false;
    bool decoderByteFallback = false;
    std::vector<std::pair<std::string, std::string>> decoderReplace;
    std::size_t stripLeadingSpaces = 0;

    std::vector<std::int32_t> prefixIds, suffixIds;  // post-processor template
    std::optional<std::int32_t> bos, eos;
    std::string chatTemplate;

    mutable std::mutex cacheMutex;
    mutable std::unordered_map<std::string, std::vector<std::int32_t>> cache;

    [[noreturn]] void fail(const std::string& what) const { throw TokenizerError(source + ": " + what); }

    std::optional<std::int32_t> find(std::string_view text) const {
        const auto it = textToId.find(std::string(text));
        if (it == textToId.end()) return std::nullopt;
        return it->second;
    }

    void setToken(std::int32_t id, const std::string& text, bool isSpecial);

    void load(const json& root);
    void loadModel(const json& model);
    void loadAddedTokens(const json& list);
    void loadNormalizer(const json& n);
    void loadPreTokenizer(const json& p, bool& byteLevelSeen);
    void loadDecoder(const json& d);
    void finishDecoder();  // the bytes of every token, once the decoder is known
    void loadPostProcessor(const json& p);
    void loadConfig(const json& cfg);
    void guessBosEos();

    std::string normalize(std::string_view text) const;
    std::vector<std::string> preTokenize(std::string_view text, bool atStart) const;
    void initialSymbols(std::string_view piece, std::vector<std::int32_t>& ids) const;
    void bpe(std::string_view piece, std::vector<std::int32_t>& out) const;
    void encodeText(std::string_view text, bool atStart, std::vector<std::int32_t>& out) const;
};

}  // namespace sdw
