#pragma once
// Import of llama2.c checkpoints (Karpathy's `run.c` format) into a Hugging
// Face Llama folder that every part of the workbench reads.
//
// Checkpoint formats read:
//  - version 0 ("legacy", e.g. stories260K.bin): seven int32 (dim,
//    hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len; a
//    negative vocab_size means an untied classifier), then float32 tensors:
//    token embedding, attention norms, wq, wk, wv, wo, ffn norms, w1, w2, w3,
//    final norm, the RoPE tables (skipped), the classifier when untied;
//  - version 1: magic "ak42", int32 version, the seven int32, uint8
//    shared_classifier, zero padding to 256 bytes, then float32: attention
//    norms, ffn norms, final norm, embedding, wq, wk, wv, wo, w1, w2, w3 and
//    the classifier when untied.
// Version 2 (int8) is refused with a message saying so.
//
// The tokenizer file (`tokenizer.bin`, `tok512.bin`) is: int32
// max_token_length, then per token float32 score, int32 length, bytes; spaces
// stand for SentencePiece's "▁", "\n<s>\n" and "\n</s>\n" for BOS and EOS.
//
// What is written (float32, as stored):
//  - model.safetensors with Hugging Face Llama names; wq and wk rows are
//    permuted from llama2.c's interleaved rotary pairs (2i, 2i+1) to the
//    half-split layout (i, i + head_dim/2) that Hugging Face's Llama uses;
//  - config.json (LlamaForCausalLM, rope_theta 10000, rms_norm_eps 1e-5 as in
//    run.c), generation_config.json (stops at </s> and at <s>: llama2.c's
//    training data separates stories by BOS, and run.c stops there);
//  - tokenizer.json: SentencePiece-style BPE with byte fallback; the merges
//    are every split of a piece into two pieces, ranked by the merged piece's
//    score, highest first (what SentencePiece's BPE and run.c pick);
//  - tokenizer_config.json and IMPORT.md (sources with SHA-256, the command).
// The folder is written as `<out>.partial` and renamed when complete.

#include "core/progress.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace sdw {

class Llama2cError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct Llama2cConfig {
    int version = 0;  // 0 (legacy) or 1
    int dim = 0, hiddenDim = 0, nLayers = 0, nHeads = 0, nKvHeads = 0, vocabSize = 0, seqLen = 0;
    bool sharedClassifier = true;
    int headDim() const { return dim / nHeads; }
    int kvDim() const { return nKvHeads * headDim(); }
};

struct Llama2cTensor {
    std::string name;  // Hugging Face name
    std::vector<std::int64_t> shape;
    std::vector<float> values;  // row-major, already in Hugging Face layout
};

struct Llama2cCheckpoint {
    Llama2cConfig config;
    std::vector<Llama2cTensor> tensors;
};

// Throws Llama2cError naming the file and what does not fit.
Llama2cCheckpoint readLlama2cCheckpoint(const std::filesystem::path& path);

struct Llama2cPiece {
    std::string text;  // as in the file ("\n<s>\n", " the", "<0x0A>")
    float score = 0.f;
};
std::vector<Llama2cPiece> readLlama2cTokenizer(const std::filesystem::path& path, int vocabSize);

// The tokenizer.json for a llama2.c vocabulary (see the top of this file).
nlohmann::json llama2cTokenizerJson(const std::vector<Llama2cPiece>& pieces);

struct Llama2cImport {
    std::filesystem::path checkpoint;
    std::filesystem::path tokenizer;
    std::filesystem::path outDir;
    bool overwrite = false;
    std::string command;  // recorded in IMPORT.md
};

struct Llama2cImportResult {
    Llama2cConfig config;
    std::filesystem::path outDir;
    std::int64_t parameters = 0;
    std::int64_t merges = 0;
};

Llama2cImportResult importLlama2c(const Llama2cImport& request, const ProgressFn& progress = {});

}  // namespace sdw
