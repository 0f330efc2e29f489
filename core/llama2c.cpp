#include "core/llama2c.h"

#include "core/safetensors.h"
#include "core/sha256.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

namespace sdw {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr std::uint32_t kMagic = 0x616b3432;  // "ak42"
constexpr std::size_t kV1Header = 256;
const std::string kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space

std::string readAll(const fs::path& path, const char* what) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Llama2cError(path.string() + ": cannot open the " + what);
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) throw Llama2cError(path.string() + ": read error");
    return ss.str();
}

template <class T>
T readScalar(const std::string& bytes, std::size_t offset) {
    T v{};
    std::memcpy(&v, bytes.data() + offset, sizeof v);
    return v;
}

// Reads the float32 tensors in file order.
class FloatCursor {
public:
    FloatCursor(const std::string& bytes, std::size_t offset, const fs::path& path)
        : bytes_(bytes), offset_(offset), path_(path) {}
    std::vector<float> take(std::int64_t count) {
        const auto n = static_cast<std::size_t>(count) * sizeof(float);
        if (offset_ + n > bytes_.size())
            throw Llama2cError(path_.string() + ": the file ends inside the weights (truncated?)");
        std::vector<float> v(static_cast<std::size_t>(count));
        std::memcpy(v.data(), bytes_.data() + offset_, n);
        offset_ += n;
        return v;
    }
    void skip(std::int64_t count) { offset_ += static_cast<std::size_t>(count) * sizeof(float); }
    std::size_t offset() const { return offset_; }

private:
    const std::string& bytes_;
    std::size_t offset_;
    const fs::path& path_;
};

// llama2.c keeps each head's rotary pairs interleaved (2i, 2i+1); Hugging
// Face's Llama rotates halves (i, i + head_dim/2). Same as its conversion
// script: view(heads, head_dim/2, 2, in).transpose(1, 2).
std::vector<float> permuteRotary(const std::vector<float>& w, int heads, int headDim, int in) {
    std::vector<float> out(w.size());
    const int half = headDim / 2;
    for (int h = 0; h < heads; ++h)
        for (int i = 0; i < half; ++i)
            for (int k = 0; k < 2; ++k) {
                const auto src = static_cast<std::size_t>(h * headDim + 2 * i + k) * static_cast<std::size_t>(in);
                const auto dst = static_cast<std::size_t>(h * headDim + k * half + i) * static_cast<std::size_t>(in);
                std::copy_n(w.begin() + static_cast<std::ptrdiff_t>(src), in, out.begin() + static_cast<std::ptrdiff_t>(dst));
            }
    return out;
}

void checkConfig(const Llama2cConfig& c, const fs::path& path) {
    auto bad = [&](const std::string& why) {
        throw Llama2cError(path.string() + ": not a llama2.c checkpoint (" + why + ")");
    };
    const int fields[] = {c.dim, c.hiddenDim, c.nLayers, c.nHeads, c.nKvHeads, c.vocabSize, c.seqLen};
    for (int v : fields)
        if (v <= 0 || v > (1 << 24)) bad("header field " + std::to_string(v) + " out of range");
    if (c.dim % c.nHeads != 0) bad("dim " + std::to_string(c.dim) + " is not a multiple of n_heads");
    if (c.nHeads % c.nKvHeads != 0) bad("n_heads is not a multiple of n_kv_heads");
    if (c.headDim() % 2 != 0) bad("odd head dimension");
}

}  // namespace

Llama2cCheckpoint readLlama2cCheckpoint(const fs::path& path) {
    const std::string bytes = readAll(path, "checkpoint");
    if (bytes.size() < 28) throw Llama2cError(path.string() + ": too short for a llama2.c checkpoint");
    Llama2cCheckpoint ck;
    Llama2cConfig& c = ck.config;
    std::size_t offset = 0;
    std::size_t headerInts = 0;
    if (readScalar<std::uint32_t>(bytes, 0) == kMagic) {
        c.version = readScalar<std::int32_t>(bytes, 4);
        if (c.version == 2)
            throw Llama2cError(path.string() + ": an int8-quantized llama2.c checkpoint (version 2); import the "
                                               "float32 export (version 0 or 1) instead");
        if (c.version != 1) throw Llama2cError(path.string() + ": unknown llama2.c version " + std::to_string(c.version));
        if (bytes.size() < kV1Header) throw Llama2cError(path.string() + ": truncated header");
        headerInts = 8;
        offset = kV1Header;
    }
    auto field = [&](int i) { return readScalar<std::int32_t>(bytes, headerInts + 4 * static_cast<std::size_t>(i)); };
    c.dim = field(0);
    c.hiddenDim = field(1);
    c.nLayers = field(2);
    c.nHeads = field(3);
    c.nKvHeads = field(4);
    c.vocabSize = field(5);
    c.seqLen = field(6);
    if (c.version == 0) {
        c.sharedClassifier = c.vocabSize > 0;
        c.vocabSize = std::abs(c.vocabSize);
        offset = 28;
    } else {
        c.sharedClassifier = bytes[headerInts + 28] != 0;
    }
    checkConfig(c, path);

    const std::int64_t D = c.dim, H = c.hiddenDim, L = c.nLayers, V = c.vocabSize, KV = c.kvDim();
    const std::int64_t perLayer = 2 * D + 2 * D * D + 2 * KV * D + 3 * H * D;
    std::int64_t expected = V * D + L * perLayer + D + (c.sharedClassifier ? 0 : V * D);
    if (c.version == 0) expected += static_cast<std::int64_t>(c.seqLen) * c.headDim();  // RoPE tables
    const auto want = offset + static_cast<std::size_t>(expected) * sizeof(float);
    if (bytes.size() != want)
        throw Llama2cError(path.string() + ": " + std::to_string(bytes.size()) + " bytes, but a llama2.c checkpoint " +
                           "with dim " + std::to_string(c.dim) + ", hidden " + std::to_string(c.hiddenDim) + ", " +
                           std::to_string(c.nLayers) + " layers, vocab " + std::to_string(c.vocabSize) + " has " +
                           std::to_string(want) + " (wrong file, or another format)");

    FloatCursor cur(bytes, offset, path);
    auto layerTensors = [&](std::int64_t rows, std::int64_t cols) {
        std::vector<std::vector<float>> v;
        for (std::int64_t l = 0; l < L; ++l) v.push_back(cur.take(rows * cols));
        return v;
    };
    std::vector<float> embedding, finalNorm, classifier;
    std::vector<std::vector<float>> attnNorm, ffnNorm, wq, wk, wv, wo, w1, w2, w3;
    if (c.version == 0) {
        embedding = cur.take(V * D);
        attnNorm = layerTensors(1, D);
        wq = layerTensors(D, D);
        wk = layerTensors(KV, D);
        wv = layerTensors(KV, D);
        wo = layerTensors(D, D);
        ffnNorm = layerTensors(1, D);
        w1 = layerTensors(H, D);
        w2 = layerTensors(D, H);
        w3 = layerTensors(H, D);
        finalNorm = cur.take(D);
        cur.skip(static_cast<std::int64_t>(c.seqLen) * c.headDim());
    } else {
        attnNorm = layerTensors(1, D);
        ffnNorm = layerTensors(1, D);
        finalNorm = cur.take(D);
        embedding = cur.take(V * D);
        wq = layerTensors(D, D);
        wk = layerTensors(KV, D);
        wv = layerTensors(KV, D);
        wo = layerTensors(D, D);
        w1 = layerTensors(H, D);
        w2 = layerTensors(D, H);
        w3 = layerTensors(H, D);
    }
    if (!c.sharedClassifier) classifier = cur.take(V * D);

    auto& t = ck.tensors;
    t.push_back({"model.embed_tokens.weight", {V, D}, std::move(embedding)});
    for (std::int64_t l = 0; l < L; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        const auto i = static_cast<std::size_t>(l);
        t.push_back({p + "input_layernorm.weight", {D}, std::move(attnNorm[i])});
        t.push_back({p + "self_attn.q_proj.weight", {D, D}, permuteRotary(wq[i], c.nHeads, c.headDim(), c.dim)});
        t.push_back({p + "self_attn.k_proj.weight", {KV, D}, permuteRotary(wk[i], c.nKvHeads, c.headDim(), c.dim)});
        t.push_back({p + "self_attn.v_proj.weight", {KV, D}, std::move(wv[i])});
        t.push_back({p + "self_attn.o_proj.weight", {D, D}, std::move(wo[i])});
        t.push_back({p + "post_attention_layernorm.weight", {D}, std::move(ffnNorm[i])});
        t.push_back({p + "mlp.gate_proj.weight", {H, D}, std::move(w1[i])});
        t.push_back({p + "mlp.down_proj.weight", {D, H}, std::move(w2[i])});
        t.push_back({p + "mlp.up_proj.weight", {H, D}, std::move(w3[i])});
    }
    t.push_back({"model.norm.weight", {D}, std::move(finalNorm)});
    if (!c.sharedClassifier) t.push_back({"lm_head.weight", {V, D}, std::move(classifier)});
    return ck;
}

std::vector<Llama2cPiece> readLlama2cTokenizer(const fs::path& path, int vocabSize) {
    const std::string bytes = readAll(path, "tokenizer");
    auto bad = [&](const std::string& why) {
        throw Llama2cError(path.string() + ": not a llama2.c tokenizer for a vocabulary of " +
                           std::to_string(vocabSize) + " (" + why + ")");
    };
    if (bytes.size() < 4) bad("too short");
    std::size_t pos = 4;
    std::vector<Llama2cPiece> pieces;
    pieces.reserve(static_cast<std::size_t>(vocabSize));
    for (int i = 0; i < vocabSize; ++i) {
        if (pos + 8 > bytes.size()) bad("ends after " + std::to_string(i) + " tokens");
        const auto score = readScalar<float>(bytes, pos);
        const auto len = readScalar<std::int32_t>(bytes, pos + 4);
        pos += 8;
        if (len < 0 || pos + static_cast<std::size_t>(len) > bytes.size()) bad("token " + std::to_string(i) + " has a bad length");
        pieces.push_back({bytes.substr(pos, static_cast<std::size_t>(len)), score});
        pos += static_cast<std::size_t>(len);
    }
    if (pos != bytes.size()) bad(std::to_string(bytes.size() - pos) + " bytes left after the last token");
    return pieces;
}

json llama2cTokenizerJson(const std::vector<Llama2cPiece>& pieces) {
    // Token texts as SentencePiece writes them.
    std::vector<std::string> text;
    for (const auto& p : pieces) {
        if (p.text == "\n<s>\n") text.push_back("<s>");
        else if (p.text == "\n</s>\n") text.push_back("</s>");
        else {
            std::string t;
            for (char ch : p.text) {
                if (ch == ' ') t += kSpace;
                else t.push_back(ch);
            }
            text.push_back(std::move(t));
        }
    }
    json vocab = json::object();
    std::map<std::string, std::int32_t> id;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (id.count(text[i])) continue;  // the first id of a repeated text wins
        id[text[i]] = static_cast<std::int32_t>(i);
        vocab[text[i]] = static_cast<std::int32_t>(i);
    }
    // Merges: every split of a piece, at character boundaries, into two
    // pieces; ranked by the merged piece's score, highest first (stable:
    // piece order, then the ids of the halves).
    struct M {
        float score;
        std::size_t piece;
        std::int32_t left, right;
        std::string a, b;
    };
    std::vector<M> merges;
    for (std::size_t i = 3; i < text.size(); ++i) {
        const std::string& s = text[i];
        std::vector<M> local;
        for (std::size_t cut = 1; cut < s.size(); ++cut) {
            if ((static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) continue;  // inside a character
            const auto l = id.find(s.substr(0, cut)), r = id.find(s.substr(cut));
            if (l != id.end() && r != id.end()) local.push_back({pieces[i].score, i, l->second, r->second, l->first, r->first});
        }
        std::sort(local.begin(), local.end(), [](const M& x, const M& y) {
            return std::tie(x.left, x.right) < std::tie(y.left, y.right);
        });
        merges.insert(merges.end(), local.begin(), local.end());
    }
    std::stable_sort(merges.begin(), merges.end(), [](const M& x, const M& y) { return x.score > y.score; });
    json mergeList = json::array();
    for (const auto& m : merges) mergeList.push_back(json::array({m.a, m.b}));

    auto added = [&](int i) {
        return json{{"id", i},           {"content", text[static_cast<std::size_t>(i)]}, {"single_word", false},
                    {"lstrip", false},   {"rstrip", false},                               {"normalized", false},
                    {"special", true}};
    };
    json j;
    j["version"] = "1.0";
    j["truncation"] = nullptr;
    j["padding"] = nullptr;
    j["added_tokens"] = json::array({added(0), added(1), added(2)});
    j["normalizer"] = {{"type", "Sequence"},
                       {"normalizers",
                        json::array({json{{"type", "Prepend"}, {"prepend", kSpace}},
                                     json{{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kSpace}}})}};
    j["pre_tokenizer"] = nullptr;
    j["post_processor"] = {
        {"type", "TemplateProcessing"},
        {"single", json::array({json{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                json{{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
        {"pair", json::array({json{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                              json{{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                              json{{"SpecialToken", {{"id", "<s>"}, {"type_id", 1}}}},
                              json{{"Sequence", {{"id", "B"}, {"type_id", 1}}}}})},
        {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}};
    j["decoder"] = {{"type", "Sequence"},
                    {"decoders", json::array({json{{"type", "Replace"}, {"pattern", {{"String", kSpace}}}, {"content", " "}},
                                              json{{"type", "ByteFallback"}}, json{{"type", "Fuse"}},
                                              json{{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}})}};
    j["model"] = {{"type", "BPE"},
                  {"dropout", nullptr},
                  {"unk_token", text.at(0)},
                  {"continuing_subword_prefix", nullptr},
                  {"end_of_word_suffix", nullptr},
                  {"fuse_unk", true},
                  {"byte_fallback", true},
                  {"ignore_merges", false},
                  {"vocab", vocab},
                  {"merges", mergeList}};
    return j;
}

namespace {

void writeText(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
    out.close();
    if (!out) throw Llama2cError(path.string() + ": cannot write (disk full or no permission?)");
}

std::string fileSha256(const fs::path& path) { return sha256Hex(readAll(path, "file")); }

}  // namespace

Llama2cImportResult importLlama2c(const Llama2cImport& r, const ProgressFn& progress) {
    if (r.outDir.empty()) throw Llama2cError("no output folder given");
    std::error_code ec;
    if (fs::exists(r.outDir, ec) && !r.overwrite)
        throw Llama2cError(r.outDir.string() + " exists; choose another folder or overwrite it (--force)");
    reportOrThrow(progress, {0, 4, "steps", "reading the checkpoint", "read"});
    const Llama2cCheckpoint ck = readLlama2cCheckpoint(r.checkpoint);
    const Llama2cConfig& c = ck.config;
    reportOrThrow(progress, {1, 4, "steps", "reading the tokenizer", "tokenizer"});
    const auto pieces = readLlama2cTokenizer(r.tokenizer, c.vocabSize);
    const json tok = llama2cTokenizerJson(pieces);

    fs::path partial = r.outDir;
    partial += ".partial";
    fs::remove_all(partial, ec);
    if (!fs::create_directories(partial, ec) || ec)
        throw Llama2cError(partial.string() + ": cannot create the folder (" + ec.message() + ")");
    try {
        reportOrThrow(progress, {2, 4, "steps", "writing model.safetensors", "write"});
        const std::string ckSha = fileSha256(r.checkpoint), tokSha = fileSha256(r.tokenizer);
        std::vector<TensorToWrite> tensors;
        std::int64_t params = 0;
        for (const auto& t : ck.tensors) {
            tensors.push_back({t.name, "F32", t.shape,
                               std::as_bytes(std::span<const float>(t.values.data(), t.values.size()))});
            params += static_cast<std::int64_t>(t.values.size());
        }
        writeSafetensors(partial / "model.safetensors", tensors,
                         {{"format", "pt"},
                          {"source", "llama2.c checkpoint " + r.checkpoint.filename().string() + " sha256 " + ckSha}});

        const json config = {{"architectures", {"LlamaForCausalLM"}},
                             {"model_type", "llama"},
                             {"hidden_size", c.dim},
                             {"intermediate_size", c.hiddenDim},
                             {"num_hidden_layers", c.nLayers},
                             {"num_attention_heads", c.nHeads},
                             {"num_key_value_heads", c.nKvHeads},
                             {"head_dim", c.headDim()},
                             {"vocab_size", c.vocabSize},
                             {"max_position_embeddings", c.seqLen},
                             {"rms_norm_eps", 1e-5},
                             {"rope_theta", 10000.0},
                             {"hidden_act", "silu"},
                             {"attention_bias", false},
                             {"mlp_bias", false},
                             {"tie_word_embeddings", c.sharedClassifier},
                             {"bos_token_id", 1},
                             {"eos_token_id", 2},
                             {"torch_dtype", "float32"}};
        writeText(partial / "config.json", config.dump(2) + "\n");
        writeText(partial / "generation_config.json",
                  json{{"bos_token_id", 1}, {"eos_token_id", {2, 1}}}.dump(2) + "\n");
        writeText(partial / "tokenizer.json", tok.dump(1) + "\n");
        const json tokConfig = {{"tokenizer_class", "PreTrainedTokenizerFast"},
                                {"bos_token", "<s>"},
                                {"eos_token", "</s>"},
                                {"unk_token", "<unk>"},
                                {"add_bos_token", true},
                                {"add_eos_token", false},
                                {"clean_up_tokenization_spaces", false},
                                {"model_max_length", c.seqLen}};
        writeText(partial / "tokenizer_config.json", tokConfig.dump(2) + "\n");
        std::ostringstream md;
        md << "# Imported llama2.c checkpoint\n\n"
           << "Made by `" << (r.command.empty() ? "sdw-cli import llama2c" : r.command) << "` from:\n\n"
           << "| file | SHA-256 |\n|---|---|\n"
           << "| `" << r.checkpoint.filename().string() << "` | `" << ckSha << "` |\n"
           << "| `" << r.tokenizer.filename().string() << "` | `" << tokSha << "` |\n\n"
           << "llama2.c format version " << c.version << "; dim " << c.dim << ", hidden " << c.hiddenDim << ", "
           << c.nLayers << " layers, " << c.nHeads << " heads (" << c.nKvHeads << " key/value), vocabulary "
           << c.vocabSize << ", context " << c.seqLen << ", classifier "
           << (c.sharedClassifier ? "tied to the embedding" : "separate") << "; " << params
           << " parameters, float32.\n\n"
           << "The query and key rows are permuted from llama2.c's interleaved rotary pairs to the half-split\n"
           << "layout of Hugging Face's Llama. `generation_config.json` stops at `</s>` and at `<s>` (llama2.c's\n"
           << "training text separates stories with `<s>`). The tokenizer is SentencePiece-style BPE with byte\n"
           << "fallback; its merges rank every split of a piece by the piece's score.\n";
        writeText(partial / "IMPORT.md", md.str());

        reportOrThrow(progress, {3, 4, "steps", "finishing", "finish"});
        if (fs::exists(r.outDir, ec)) fs::remove_all(r.outDir);
        fs::rename(partial, r.outDir);
        return {c, r.outDir, params, static_cast<std::int64_t>(tok["model"]["merges"].size())};
    } catch (...) {
        fs::remove_all(partial, ec);
        throw;
    }
}

}  // namespace sdw
