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
//    bytes and drops the one space that the encoder put in front (Llama-2;
//    Gemma puts none there and drops none).

#include "core/split_regex.h"
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

    // Added tokens. Those with normalized=false are matched on the raw text,
    // those with normalized=true on each normalized segment (their content
    // normalized too), both leftmost-longest, as the reference does.
    struct AddedToken {
        std::int32_t id;
        bool lstrip = false;
        bool rstrip = false;
        bool singleWord = false;  // only where no word character touches either end
    };
    struct TrieNode {
        std::map<unsigned char, std::int32_t> children;
        std::int32_t token = -1;  // index into added
    };
    struct Matcher {
        std::vector<TrieNode> trie{TrieNode{}};
        bool empty() const { return trie.size() == 1; }
    };
    struct Segment {
        std::size_t begin, end;
        std::int32_t id;  // -1: text to encode
    };
    std::vector<AddedToken> added;
    Matcher rawMatcher, normalizedMatcher;
    std::vector<std::pair<std::string, std::int32_t>> normalizedPending;  // (content, index) until the normalizer is known
    void addToMatcher(Matcher& m, std::string_view content, std::int32_t index);
    // Splits text into added tokens and the text between them (empty pieces dropped).
    std::vector<Segment> splitAdded(const Matcher& m, std::string_view text) const;

    // Normalizers in file order.
    struct NormalizerStep {
        enum class Kind { Nfc, Nfkc, Prepend, Replace, Strip } kind;
        std::string text;         // Prepend: what; Replace: the pattern
        std::string replacement;  // Replace: by what
        bool left = false, right = false;  // Strip: which ends lose their white space
    };
    std::vector<NormalizerStep> normalizers;

    // Pre-tokenizer steps in file order; each splits every piece further.
    struct Metaspace {
        std::string replacement = "\xE2\x96\x81";  // U+2581
        enum class Prepend { Always, First, Never } prepend = Prepend::Always;
        bool split = true;
    };
    enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };
    struct PreStep {
        enum class Kind { Split, ByteLevel, Metaspace } kind = Kind::Split;
        std::optional<Regex> regex;  // Split; ByteLevel when use_regex
        Behavior behavior = Behavior::Isolated;
        bool invert = false;
        bool addPrefixSpace = false;  // ByteLevel
        Metaspace meta;               // Metaspace
    };
    std::vector<PreStep> preSteps;
    struct Piece {
        std::string text;
        bool atStart;  // begins at offset 0 of the input (Metaspace prepend_scheme "first")
    };

    // Decoder (SentencePiece-style): text replacements, "<0xXX>" to bytes,
    // and what Strip removes from the ends of the fused text.
    bool decoderByteLevel = false;
    bool decoderByteFallback = false;
    bool decoderFused = false;  // a Fuse step was seen
    std::vector<std::pair<std::string, std::string>> decoderReplace;
    std::string stripContent = " ";
    std::size_t stripStart = 0, stripStop = 0;
    std::vector<std::uint8_t> isByteToken;  // "<0xXX>" under a ByteFallback decoder

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
    // Sequence steps nest at most kMaxSequenceDepth deep and each section
    // holds at most kMaxSteps steps: real files nest one level and hold a few.
    static constexpr int kMaxSequenceDepth = 8;
    static constexpr std::size_t kMaxSteps = 256;
    void checkSequence(const char* section, int depth, std::size_t steps) const;
    void loadNormalizer(const json& n, int depth = 0);
    void loadPreTokenizer(const json& p, bool& byteLevelSeen, int depth = 0);
    void loadDecoder(const json& d, int depth = 0);
    void finishDecoder();  // the bytes of every token, once the decoder is known
    void loadPostProcessor(const json& p, int depth = 0);
    std::size_t decoderSteps = 0, postProcessorSteps = 0;
    void loadConfig(const json& cfg);

    std::string normalize(std::string_view text) const;
    std::vector<Piece> preTokenize(std::string_view text, bool atStart) const;  // RegexError -> TokenizerError
    std::vector<Piece> preTokenizeSteps(std::string_view text, bool atStart) const;
    void initialSymbols(std::string_view piece, std::vector<std::int32_t>& ids) const;
    void bpe(std::string_view piece, std::vector<std::int32_t>& out) const;
    // One stretch of raw text between added tokens: normalized, split on the
    // normalized added tokens, pre-tokenized and merged.
    void encodeText(std::string_view text, bool atStart, std::vector<std::int32_t>& out) const;
};

}  // namespace sdw
