#pragma once
// BPE tokenizer read from a Hugging Face tokenizer.json, plus a streaming
// detokenizer. Encoding and decoding match the `tokenizers` library.
//
// Two kinds:
//  - byte-level BPE (the Llama-3 and Qwen2/3 families, GPT-2 style files):
//    pre-tokenizer Split(Regex) and ByteLevel (use_regex, add_prefix_space)
//    alone or in a Sequence, decoder ByteLevel;
//  - SentencePiece-style BPE (Llama-2, Mistral, Gemma 3, imported llama2.c
//    models): normalizer Prepend("▁") + Replace(" " -> "▁") (Gemma: Replace
//    alone) or a Metaspace pre-tokenizer (prepend_scheme always/first/never,
//    split), model byte_fallback / fuse_unk, decoder Replace + ByteFallback +
//    Fuse [+ Strip] or Metaspace.
// Both: model "BPE" (vocab, merges as "a b" or ["a","b"], ignore_merges),
// added tokens (special or not; lstrip, rstrip, single_word, normalized),
// normalizer NFC / NFKC / Prepend / Replace(String) / Strip / Sequence, pre-tokenizer
// Split (Regex or String, every behaviour, invert), post-processor
// TemplateProcessing / BertProcessing / RobertaProcessing / ByteLevel /
// Sequence. Other components (NFKD, Lowercase, WordPiece, ...) are rejected
// with a TokenizerError naming them.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace sdw {

class TokenizerError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class Tokenizer {
public:
    // Reads tokenizer.json, and tokenizer_config.json next to it when present
    // (bos_token / eos_token; for transformers' Llama and Gemma classes also
    // add_bos_token / add_eos_token, which replace the template as there).
    // Without the config there is no bos or eos: never guessed from spellings.
    // fromJson reads no config. Throws TokenizerError naming the file.
    static Tokenizer fromFile(const std::filesystem::path& tokenizerJson);
    static Tokenizer fromJson(std::string_view json, std::string sourceName = "tokenizer.json");

    // Added tokens are split out first (exact match, leftmost, longest first);
    // the rest is normalized, pre-tokenized and BPE-merged piece by piece.
    // addSpecialTokens adds what the post-processor's template adds (Llama-2,
    // Gemma: bos in front); without a template it does nothing.
    std::vector<std::int32_t> encode(std::string_view text, bool addSpecialTokens = false) const;
    // Exact inverse of encode for byte-level BPE; invalid UTF-8 in the joined
    // bytes becomes U+FFFD (as Rust's from_utf8_lossy), only at the end; an
    // invalid run of "<0xXX>" tokens, one U+FFFD per byte (ByteFallback).
    std::string decode(std::span<const std::int32_t> ids, bool skipSpecialTokens = false) const;

    std::string tokenText(std::int32_t id) const;  // raw vocab string ("Ġthe"); empty if unknown
    std::optional<std::int32_t> tokenId(std::string_view tokenText) const;
    std::int32_t vocabSize() const;  // max id + 1 over vocab and added tokens
    bool isSpecial(std::int32_t id) const;
    std::optional<std::int32_t> bosId() const;
    std::optional<std::int32_t> eosId() const;
    // eos plus <|eot_id|>, <|im_end|>, <|end_of_text|>, <|endoftext|>,
    // <end_of_turn> where they are special tokens.
    std::vector<std::int32_t> stopIds() const;

    // The bytes a token stands for (before UTF-8 repair); empty if unknown.
    const std::string& tokenBytes(std::int32_t id) const;
    // How many leading spaces decoding drops (1 for SentencePiece-style
    // decoders, which remove the space the encoder put in front).
    std::size_t leadingSpacesDropped() const;
    bool isByteLevel() const;
    // Text of tokenizer_config.json's chat_template ("" if none or not read).
    const std::string& chatTemplate() const;
    const std::string& sourceName() const;

    Tokenizer(Tokenizer&&) noexcept;
    Tokenizer& operator=(Tokenizer&&) noexcept;
    Tokenizer(const Tokenizer&);
    Tokenizer& operator=(const Tokenizer&);
    ~Tokenizer();

    struct Impl;

private:
    explicit Tokenizer(std::shared_ptr<Impl> impl);
    std::shared_ptr<Impl> impl_;  // immutable once built; copies share it
};

// Incremental detokenizer for streaming: feed ids one at a time, get the
// newly completed UTF-8 text. Incomplete multi-byte sequences are held back
// until a later token completes them; the concatenation of all push() and
// flush() results equals decode() of all the ids (for valid UTF-8, and
// without a Strip decoder's trailing cut, which no real file uses).
class StreamDecoder {
public:
    explicit StreamDecoder(const Tokenizer& tokenizer, bool skipSpecialTokens = false);
    std::string push(std::int32_t id);
    std::string flush();

private:
    const Tokenizer* tokenizer_;
    bool skipSpecial_;
    std::size_t stripLeft_;
    std::string pending_;
};

}  // namespace sdw
