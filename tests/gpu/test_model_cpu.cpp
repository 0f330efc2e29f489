// The model runtime on CPU: safetensors parsing, config errors, logits and
// greedy tokens against transformers' goldens (tests/data/reference), the KV
// cache against teacher forcing, sampling, stop tokens, ragged batches and
// the activation observer. Label: engine (runs in CI).

#include "core/safetensors.h"
#include "gpu/model.h"
#include "gpu/model_config.h"
#include "gpu/sampling.h"

#include <nlohmann/json.hpp>

#include <QTemporaryDir>
#include <QtTest>

#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <span>

using namespace sdw;
using namespace sdw::gpu;
namespace fs = std::filesystem;

namespace {

const fs::path kRef = fs::path(SDW_SOURCE_DIR) / "tests/data/reference";

nlohmann::json readJson(const fs::path& p) {
  std::ifstream in(p);
  if (!in) throw std::runtime_error("cannot open " + p.string());
  return nlohmann::json::parse(in);
}

// The golden of a model folder (the sharded copy shares qwen3-tiny's).
nlohmann::json golden(const std::string& model) {
  return readJson(kRef / (model == "qwen3-tiny-sharded" ? "qwen3-tiny" : model) / "golden.json");
}

std::vector<std::int32_t> ids(const nlohmann::json& j) { return j.get<std::vector<std::int32_t>>(); }

// The Gemma 3 goldens come from tools/reference/arch_goldens.py on a machine with transformers.
bool goldenMissing(const QString& model) {
  const std::string m = model.toStdString();
  return !fs::exists(kRef / m) || !fs::exists(kRef / (m == "qwen3-tiny-sharded" ? "qwen3-tiny" : m) / "golden.json");
}
#define SKIP_WITHOUT_GOLDEN(model)                                                                                   \
  do {                                                                                                               \
    if (goldenMissing(model))                                                                                        \
      QSKIP(qPrintable(QStringLiteral("tests/data/reference/%1: golden not generated yet "                           \
                                      "(tools/reference/arch_goldens.py)").arg(model)));                             \
  } while (0)

// A Gemma 3 text config like gemma3-tiny's, in transformers 5's form (rope_parameters per layer type).
nlohmann::json gemma3Config() {
  return nlohmann::json::parse(R"({
    "architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "vocab_size": 512, "hidden_size": 64,
    "intermediate_size": 160, "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2,
    "head_dim": 16, "query_pre_attn_scalar": 24, "rms_norm_eps": 1e-6, "sliding_window": 8,
    "layer_types": ["sliding_attention", "sliding_attention", "full_attention"],
    "hidden_activation": "gelu_pytorch_tanh", "max_position_embeddings": 256, "bos_token_id": 1, "eos_token_id": 2,
    "pad_token_id": 0, "final_logit_softcapping": null, "attn_logit_softcapping": null,
    "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 4.0, "rope_theta": 1000000.0},
                        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}})");
}

// The same in the Hub's older form: rope_theta + rope_scaling + rope_local_base_freq, sliding_window_pattern.
void toHubForm(nlohmann::json& c) {
  const auto rp = c["rope_parameters"];
  c.erase("rope_parameters");
  c.erase("layer_types");
  c["rope_theta"] = rp["full_attention"]["rope_theta"];
  c["rope_local_base_freq"] = rp["sliding_attention"]["rope_theta"];
  auto full = rp["full_attention"];
  full.erase("rope_theta");
  c["rope_scaling"] = full["rope_type"] == "default" ? nlohmann::json(nullptr) : full;
  c["sliding_window_pattern"] = 3;  // layer i global where (i + 1) % 3 == 0: sliding, sliding, full
}

template <typename T>
std::span<const std::byte> bytesOf(const std::vector<T>& v) {
  return std::as_bytes(std::span<const T>(v));
}

double maxAbsDiff(std::span<const float> a, std::span<const float> b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(double(a[i]) - double(b[i])));
  return m;
}

QString msg(const std::exception& e) { return QString::fromStdString(e.what()); }

// Copies a reference model folder, letting `edit` change config.json and
// which tensors end up in model.safetensors.
void writeVariant(const fs::path& src, const fs::path& dst,
                  const std::function<void(nlohmann::json&)>& editConfig,
                  const std::function<bool(const std::string&)>& keepTensor) {
  fs::create_directories(dst);
  auto cfg = readJson(src / "config.json");
  if (editConfig) editConfig(cfg);
  std::ofstream(dst / "config.json") << cfg.dump(2);
  const auto f = SafetensorsFile::open(src / "model.safetensors");
  std::vector<TensorToWrite> out;
  for (const auto& [name, v] : f.tensors())
    if (!keepTensor || keepTensor(name)) out.push_back({name, v.dtype, v.shape, v.bytes});
  writeSafetensors(dst / "model.safetensors", out);
}

}  // namespace

class TestModelCpu : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  // ---------------------------------------------------------------- safetensors
  void safetensorsRoundTrip() {
    QTemporaryDir dir;
    const fs::path p = fs::path(dir.path().toStdString()) / "t.safetensors";
    const std::vector<float> a = {1, 2, 3, 4, 5, 6};
    const std::vector<std::uint16_t> b = {0x3f80, 0x4000, 0xbf80};  // bf16 1, 2, -1
    writeSafetensors(p, {{"a.weight", "F32", {2, 3}, bytesOf(a)}, {"b", "BF16", {3}, bytesOf(b)}},
                     {{"format", "pt"}});
    const auto f = SafetensorsFile::open(p);
    QCOMPARE(f.tensors().size(), std::size_t(2));
    QCOMPARE(f.metadata().at("format"), std::string("pt"));
    const TensorView* ta = f.find("a.weight");
    QVERIFY(ta);
    QCOMPARE(ta->dtype, std::string("F32"));
    QCOMPARE(ta->shape, (std::vector<std::int64_t>{2, 3}));
    QCOMPARE(ta->bytes.size(), std::size_t(24));
    float back[6];
    std::memcpy(back, ta->bytes.data(), 24);
    QCOMPARE(back[5], 6.0f);
    const TensorView* tb = f.find("b");
    QVERIFY(tb && tb->dtype == "BF16" && tb->numel() == 3);
    QVERIFY(!f.find("missing"));

    // A checkpoint opened on the single file sees the same tensors.
    const auto c = SafetensorsCheckpoint::open(p);
    QCOMPARE(c.names().size(), std::size_t(2));
    QCOMPARE(c.totalTensorBytes(), std::uint64_t(30));
  }

  void safetensorsTruncatedNamesTensor() {
    QTemporaryDir dir;
    const fs::path p = fs::path(dir.path().toStdString()) / "trunc.safetensors";
    const std::vector<float> a(100, 1.0f), b(50, 2.0f);
    writeSafetensors(p, {{"first", "F32", {100}, bytesOf(a)}, {"second.weight", "F32", {5, 10}, bytesOf(b)}});
    fs::resize_file(p, fs::file_size(p) - 16);
    try {
      (void)SafetensorsFile::open(p);
      QFAIL("a truncated file was accepted");
    } catch (const std::runtime_error& e) {
      const QString m = msg(e);
      QVERIFY2(m.contains("second.weight") && m.contains("truncated") && m.contains("trunc.safetensors"), qPrintable(m));
    }
  }

  void safetensorsMalformed() {
    QTemporaryDir dir;
    const fs::path p = fs::path(dir.path().toStdString()) / "bad.safetensors";
    {  // header length far beyond the file
      std::ofstream out(p, std::ios::binary);
      const std::uint64_t n = 1000;
      out.write(reinterpret_cast<const char*>(&n), 8);
      out << "{}";
    }
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, SafetensorsFile::open(p));
    {  // byte count that does not match dtype x shape
      const std::string h = R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[0,8]}})";
      std::ofstream out(p, std::ios::binary | std::ios::trunc);
      const std::uint64_t n = h.size();
      out.write(reinterpret_cast<const char*>(&n), 8);
      out << h << std::string(16, '\0');
    }
    try {
      (void)SafetensorsFile::open(p);
      QFAIL("inconsistent entry accepted");
    } catch (const std::runtime_error& e) {
      QVERIFY2(msg(e).contains("'x'"), qPrintable(msg(e)));
    }
  }

  void shardedIndex() {
    const auto c = SafetensorsCheckpoint::open(kRef / "qwen3-tiny-sharded");
    QCOMPARE(c.files().size(), std::size_t(3));
    const auto single = SafetensorsCheckpoint::open(kRef / "qwen3-tiny");
    QCOMPARE(c.names(), single.names());
    QCOMPARE(c.totalTensorBytes(), single.totalTensorBytes());
  }

  // ---------------------------------------------------------------- config
  void configParses() {
    const auto q = loadModelConfig(kRef / "qwen3-tiny");
    QCOMPARE(q.architecture, Architecture::Qwen3);
    QCOMPARE(q.headDim, std::int64_t(32));  // != hidden / heads = 16
    QCOMPARE(q.ropeTheta, 1e6);              // from rope_parameters
    QVERIFY(q.tieWordEmbeddings);
    QVERIFY(q.generation.present);
    const auto l = loadModelConfig(kRef / "llama-tiny");
    QCOMPARE(l.architecture, Architecture::Llama);
    QCOMPARE(l.ropeScaling.type, std::string("llama3"));
    QCOMPARE(l.ropeScaling.originalMaxPositionEmbeddings, std::int64_t(64));
    QCOMPARE(l.numKvHeads, std::int64_t(2));
    QCOMPARE(l.eosTokenIds, (std::vector<std::int32_t>{2}));
    const auto big = llama31_8bConfig();
    QCOMPARE(big.parameterCount(), std::int64_t(8030261248));  // Llama-3.1-8B's published count
  }

  void configErrors_data() {
    QTest::addColumn<QString>("json");
    QTest::addColumn<QString>("expect");
    const QString base =
        R"({"architectures":["%1"],"vocab_size":10,"hidden_size":8,"intermediate_size":16,)"
        R"("num_hidden_layers":1,"num_attention_heads":2%2})";
    QTest::newRow("unsupported architecture") << base.arg("GPT2LMHeadModel", "") << "GPT2LMHeadModel";
    QTest::newRow("names the supported ones") << base.arg("GemmaForCausalLM", "")
                                              << "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, "
                                                 "Qwen3ForCausalLM, Gemma3ForCausalLM";
    QTest::newRow("multimodal gemma3") << base.arg("Gemma3ForConditionalGeneration", "") << "only the text model";
    QTest::newRow("gemma3 activation")
        << base.arg("Gemma3ForCausalLM", R"(,"head_dim":4,"hidden_activation":"gelu")") << "hidden_activation";
    QTest::newRow("gemma3 layer types")
        << base.arg("Gemma3ForCausalLM", R"(,"head_dim":4,"layer_types":["sliding_attention","full_attention"])")
        << "layer_types";
    QTest::newRow("gemma3 layer type name")
        << base.arg("Gemma3ForCausalLM", R"(,"head_dim":4,"layer_types":["chunked_attention"])") << "chunked_attention";
    QTest::newRow("gemma3 rope type")
        << base.arg("Gemma3ForCausalLM",
                    R"(,"head_dim":4,"rope_parameters":{"full_attention":{"rope_type":"yarn","factor":2,"rope_theta":1e6}})")
        << "yarn";
    QTest::newRow("linear rope factor")
        << base.arg("LlamaForCausalLM", R"(,"rope_scaling":{"rope_type":"linear"})") << "factor";
    QTest::newRow("gemma3 bidirectional")
        << base.arg("Gemma3ForCausalLM", R"(,"head_dim":4,"use_bidirectional_attention":true)")
        << "use_bidirectional_attention";
    QTest::newRow("missing field")
        << R"({"architectures":["LlamaForCausalLM"],"vocab_size":10,"intermediate_size":16,"num_hidden_layers":1,"num_attention_heads":2})"
        << "hidden_size";
    QTest::newRow("rope type") << base.arg("LlamaForCausalLM", R"(,"rope_scaling":{"rope_type":"yarn","factor":4})")
                               << "yarn";
    QTest::newRow("llama3 field") << base.arg("LlamaForCausalLM", R"(,"rope_scaling":{"rope_type":"llama3","factor":8})")
                                  << "low_freq_factor";
    QTest::newRow("kv heads") << base.arg("LlamaForCausalLM", R"(,"num_key_value_heads":3)") << "num_key_value_heads";
    QTest::newRow("activation") << base.arg("LlamaForCausalLM", R"(,"hidden_act":"gelu")") << "gelu";
  }
  void configErrors() {
    QFETCH(QString, json);
    QFETCH(QString, expect);
    try {
      (void)parseModelConfig(json.toStdString(), "x/config.json");
      QFAIL("accepted");
    } catch (const std::exception& e) {
      QVERIFY2(msg(e).contains(expect) && msg(e).contains("x/config.json"), qPrintable(msg(e)));
    }
  }

  // Gemma 3's fields in both config forms; RoPE tables computed here independently.
  void gemma3ConfigParses() {
    auto j = gemma3Config();
    const auto v5 = parseModelConfig(j.dump(), "gemma3/config.json");
    toHubForm(j);
    const auto hub = parseModelConfig(j.dump(), "gemma3/config.json");
    for (const ModelConfig* c : {&v5, &hub}) {
      QCOMPARE(c->architecture, Architecture::Gemma3);
      QVERIFY(c->isGemma() && c->hasQkNorm());
      QCOMPARE(c->slidingLayers, (std::vector<bool>{true, true, false}));
      QVERIFY(c->slidingLayer(0) && c->slidingLayer(1) && !c->slidingLayer(2));
      QVERIFY(c->localRopeLayer(0) && !c->localRopeLayer(2));
      QCOMPARE(c->slidingWindow, std::int64_t(8));
      QCOMPARE(c->ropeTheta, 1e6);
      QCOMPARE(c->ropeLocalTheta, 1e4);
      QCOMPARE(c->ropeScaling.type, std::string("linear"));
      QCOMPARE(c->ropeScaling.factor, 4.0);
      QVERIFY(c->ropeLocalScaling.type.empty());
      QCOMPARE(c->attentionScale(), std::pow(24.0, -0.5));
      QCOMPARE(c->finalLogitSoftcap, 0.0);
      QVERIFY(c->tieWordEmbeddings);  // Gemma 3's default
      QCOMPARE(c->hiddenAct, std::string("gelu_pytorch_tanh"));
      const auto global = ropeInvFreq(*c), local = ropeInvFreq(*c, true);
      QCOMPARE(global.size(), std::size_t(8));
      for (std::size_t i = 0; i < global.size(); ++i) {
        const double g = 1.0 / std::pow(1e6, 2.0 * double(i) / 16.0) / 4.0, l = 1.0 / std::pow(1e4, 2.0 * double(i) / 16.0);
        QVERIFY2(std::abs(global[i] - g) <= 1e-6 * g, qPrintable(QStringLiteral("global %1: %2 vs %3").arg(i).arg(global[i]).arg(g)));
        QVERIFY2(std::abs(local[i] - l) <= 1e-6 * l, qPrintable(QStringLiteral("local %1: %2 vs %3").arg(i).arg(local[i]).arg(l)));
      }
      // 4 norms per layer + q/k norms; tied embeddings counted once.
      const std::int64_t perLayer = 64 * 64 + 2 * 64 * 32 + 64 * 64 + 3 * 64 * 160 + 4 * 64 + 2 * 16;
      QCOMPARE(c->parameterCount(), std::int64_t(512 * 64 + 3 * perLayer + 64));
      const std::string summary = architectureSummary(*c);
      QVERIFY2(summary.find("2 sliding (window 8) + 1 global") != std::string::npos, summary.c_str());
      // Serialised and parsed again: the same model.
      const auto back = parseModelConfig(modelConfigToJson(*c), "round trip");
      QCOMPARE(back.slidingLayers, c->slidingLayers);
      QCOMPARE(back.slidingWindow, c->slidingWindow);
      QCOMPARE(back.ropeLocalTheta, c->ropeLocalTheta);
      QCOMPARE(back.ropeScaling.type, c->ropeScaling.type);
      QCOMPARE(back.ropeScaling.factor, c->ropeScaling.factor);
      QCOMPARE(back.queryPreAttnScalar, c->queryPreAttnScalar);
      QCOMPARE(back.parameterCount(), c->parameterCount());
    }
    // Older configs without layer_types: every 6th layer global (transformers' default pattern).
    auto old = gemma3Config();
    old.erase("layer_types");
    old["num_hidden_layers"] = 12;
    const auto six = parseModelConfig(old.dump(), "x");
    for (std::int64_t l = 0; l < 12; ++l) QCOMPARE(six.slidingLayer(l), l != 5 && l != 11);
    // Soft-capping: the final cap is applied; transformers' Gemma3Attention drops the attention cap.
    auto capped = gemma3Config();
    capped["final_logit_softcapping"] = 30.0;
    capped["attn_logit_softcapping"] = 50.0;
    const auto cc = parseModelConfig(capped.dump(), "x");
    QCOMPARE(cc.finalLogitSoftcap, 30.0);
    QCOMPARE(cc.attnLogitSoftcapDeclared, 50.0);
    QCOMPARE(cc.attnLogitSoftcap, 0.0);
    // A window at least the context long is never reached: no sliding layer.
    auto wide = gemma3Config();
    wide["sliding_window"] = 256;
    const auto wc = parseModelConfig(wide.dump(), "x");
    QVERIFY(!wc.slidingLayer(0));
    QVERIFY(wc.localRopeLayer(0));  // the sliding layers keep their local RoPE
  }

  // Gemma 3 with random weights: the (1 + w) norms start at w = 0, the forward is finite and
  // deterministic, the KV-cache decode path equals teacher forcing across the window.
  void gemma3RandomInit() {
    const auto c = parseModelConfig(gemma3Config().dump(), "gemma3");
    const auto a = Model::randomInit(c, {}, 3, 0.2);
    QCOMPARE(a->parameterCount(), std::uint64_t(c.parameterCount()));
    std::vector<std::int32_t> seq;
    for (int t = 0; t < 20; ++t) seq.push_back((7 + 37 * t) % 512);
    const auto la = a->logits(seq);
    for (const float v : la) QVERIFY(std::isfinite(v));
    QCOMPARE(Model::randomInit(c, {}, 3, 0.2)->logits(seq), la);
    QCOMPARE(a->engineDescription(), std::string("eager CPU forward, LibTorch matmul"));
    GenerationOptions o;
    o.maxNewTokens = 16;
    o.keepLogits = true;
    const std::vector<std::int32_t> prompt(seq.begin(), seq.begin() + 5);
    const auto r = a->generate(prompt, o);
    std::vector<std::int32_t> full = prompt;
    full.insert(full.end(), r.tokens.begin(), r.tokens.end() - 1);
    const auto tf = a->logits(full);
    const auto V = std::size_t(512);
    QVERIFY(maxAbsDiff(r.logits, std::span(tf).subspan((prompt.size() - 1) * V, r.tokens.size() * V)) <= 1e-4);
  }

  void ropeMatchesReference_data() {
    QTest::addColumn<QString>("model");
    for (const char* m : {"llama-tiny", "llama-tiny-tied", "qwen3-tiny", "qwen2-tiny", "mistral-tiny"})
      QTest::newRow(m) << m;
  }
  void ropeMatchesReference() {
    QFETCH(QString, model);
    const auto g = golden(model.toStdString());
    const auto ref = g["rope"]["inv_freq"].get<std::vector<float>>();
    const auto ours = ropeInvFreq(loadModelConfig(kRef / model.toStdString()));
    QCOMPARE(ours.size(), ref.size());
    for (std::size_t i = 0; i < ref.size(); ++i)
      QVERIFY2(std::abs(ours[i] - ref[i]) <= 1e-6f * std::abs(ref[i]),
               qPrintable(QStringLiteral("inv_freq[%1]: %2 vs %3").arg(i).arg(ours[i]).arg(ref[i])));
  }

  // ---------------------------------------------------------------- loading errors
  void loadErrors() {
    QTemporaryDir dir;
    const fs::path root = dir.path().toStdString();
    const fs::path src = kRef / "llama-tiny";
    // missing tensor
    writeVariant(src, root / "missing", {}, [](const std::string& n) { return n != "model.layers.1.mlp.up_proj.weight"; });
    try {
      (void)Model::load(root / "missing");
      QFAIL("missing tensor accepted");
    } catch (const std::runtime_error& e) {
      QVERIFY2(msg(e).contains("model.layers.1.mlp.up_proj.weight") && msg(e).contains("missing"), qPrintable(msg(e)));
    }
    // shape mismatch: the config asks for a wider MLP
    writeVariant(src, root / "shape", [](nlohmann::json& c) { c["intermediate_size"] = 192; }, {});
    try {
      (void)Model::load(root / "shape");
      QFAIL("shape mismatch accepted");
    } catch (const std::runtime_error& e) {
      QVERIFY2(msg(e).contains("mlp.gate_proj.weight") && msg(e).contains("model.safetensors") && msg(e).contains("192"),
               qPrintable(msg(e)));
    }
    // untied model without lm_head
    writeVariant(src, root / "nohead", {}, [](const std::string& n) { return n != "lm_head.weight"; });
    try {
      (void)Model::load(root / "nohead");
      QFAIL("missing lm_head accepted");
    } catch (const std::runtime_error& e) {
      QVERIFY2(msg(e).contains("lm_head.weight"), qPrintable(msg(e)));
    }
    // truncated checkpoint: the error names the file and the last tensor
    fs::create_directories(root / "trunc");
    fs::copy_file(src / "config.json", root / "trunc/config.json");
    fs::copy_file(src / "model.safetensors", root / "trunc/model.safetensors");
    fs::resize_file(root / "trunc/model.safetensors", fs::file_size(src / "model.safetensors") - 100);
    try {
      (void)Model::load(root / "trunc");
      QFAIL("truncated checkpoint accepted");
    } catch (const std::runtime_error& e) {
      QVERIFY2(msg(e).contains("trunc/model.safetensors") && msg(e).contains("tensor '") && msg(e).contains("truncated"),
               qPrintable(msg(e)));
    }
    // unsupported architecture through the folder
    writeVariant(src, root / "arch", [](nlohmann::json& c) { c["architectures"] = {"PhiForCausalLM"}; }, {});
    try {
      (void)Model::load(root / "arch");
      QFAIL("unsupported architecture accepted");
    } catch (const std::runtime_error& e) {
      QVERIFY2(msg(e).contains("PhiForCausalLM"), qPrintable(msg(e)));
    }
  }

  void loadProgressAndCancel() {
    double last = -1, total = 0;
    int calls = 0;
    const auto m = Model::load(kRef / "llama-tiny", {}, [&](const Progress& p) {
      ++calls;
      last = p.done;
      total = p.total;
      return true;
    });
    QVERIFY(calls > 10);
    QCOMPARE(last, total);
    QVERIFY(total > 500000);
    int seen = 0;
    QVERIFY_THROWS_EXCEPTION(Cancelled, Model::load(kRef / "llama-tiny", {}, [&](const Progress&) { return ++seen < 3; }));
    QCOMPARE(seen, 3);
  }

  void moduleRegistry() {
    const auto m = Model::load(kRef / "qwen3-tiny");
    const auto mods = m->modules();
    QCOMPARE(mods.size(), std::size_t(2 * 7 + 1));
    QCOMPARE(mods[0].name, std::string("model.layers.0.self_attn.q_proj"));
    QCOMPARE(mods[0].outFeatures, std::int64_t(128));  // 4 heads x head_dim 32
    QCOMPARE(mods[0].inFeatures, std::int64_t(64));
    QCOMPARE(mods[0].bytes, std::uint64_t(128 * 64 * 4));
    QCOMPARE(mods[3].name, std::string("model.layers.0.self_attn.o_proj"));
    QCOMPARE(mods[3].inFeatures, std::int64_t(128));
    QCOMPARE(mods[6].name, std::string("model.layers.0.mlp.down_proj"));
    QCOMPARE(mods[6].inFeatures, std::int64_t(160));
    QCOMPARE(mods.back().name, std::string("lm_head"));
    QCOMPARE(mods.back().layer, -1);
  }

  // ---------------------------------------------------------------- goldens
  void goldenLogits_data() {
    QTest::addColumn<QString>("model");
    // qwen2-tiny: q/k/v biases; mistral-tiny: a sliding window of 16 positions, crossed by
    // the 24-position input and the 40-position greedy runs.
    // gemma3-tiny: two sliding layers (window 8) and a global one with linear RoPE scaling,
    // (1 + w) norms, GELU-tanh, bf16; gemma3-softcap-tiny: final-logit soft-capping, fp32.
    for (const char* m : {"llama-tiny", "llama-tiny-tied", "qwen3-tiny", "qwen3-tiny-sharded", "qwen2-tiny",
                          "mistral-tiny", "gemma3-tiny", "gemma3-softcap-tiny"})
      QTest::newRow(m) << m;
  }
  void goldenLogits() {
    QFETCH(QString, model);
    SKIP_WITHOUT_GOLDEN(model);
    const auto g = golden(model.toStdString());
    const auto m = Model::load(kRef / model.toStdString());
    const auto input = ids(g["input_ids"]);
    const auto out = m->logits(input);
    const auto V = static_cast<std::size_t>(m->config().vocabSize);
    QCOMPARE(out.size(), input.size() * V);
    double worst = 0;
    for (std::size_t t = 0; t < input.size(); ++t) {
      const auto ref = g["logits"][t].get<std::vector<float>>();
      QCOMPARE(ref.size(), V);
      worst = std::max(worst, maxAbsDiff(std::span(out).subspan(t * V, V), ref));
    }
    qInfo("%s: max |logit - transformers| = %.3g over %zu positions", qPrintable(model), worst, input.size());
    QVERIFY2(worst <= 1e-4, qPrintable(QStringLiteral("max abs diff %1").arg(worst)));
  }

  void goldenGreedy_data() { goldenLogits_data(); }
  void goldenGreedy() {
    QFETCH(QString, model);
    SKIP_WITHOUT_GOLDEN(model);
    const auto g = golden(model.toStdString());
    const auto m = Model::load(kRef / model.toStdString());
    GenerationOptions o;
    o.maxNewTokens = 32;
    const auto r = m->generate(ids(g["greedy_prompt_ids"]), o);
    const auto ref = ids(g["greedy_fp32_cpu"]);
    QCOMPARE(r.tokens, ref);
    QCOMPARE(r.stopReason, StopReason::MaxTokens);
  }

  // gemma3-tiny's weights under the Hub's older config form (rope_scaling,
  // rope_local_base_freq, sliding_window_pattern) give the same logits.
  void gemma3HubFormEqualsV5Form() {
    SKIP_WITHOUT_GOLDEN(QStringLiteral("gemma3-tiny"));
    QTemporaryDir dir;
    const fs::path hub = fs::path(dir.path().toStdString()) / "hub";
    writeVariant(kRef / "gemma3-tiny", hub, [](nlohmann::json& c) {
      if (c.contains("rope_parameters") && c["rope_parameters"].contains("full_attention")) toHubForm(c);
    }, {});
    const auto input = ids(golden("gemma3-tiny")["input_ids"]);
    const auto a = Model::load(kRef / "gemma3-tiny")->logits(input);
    const auto b = Model::load(hub)->logits(input);
    QCOMPARE(a, b);
  }

  // The sample model (bf16 on disk, computed in fp32): greedy continuations of
  // six prompts and the last prompt logits of "The jury said" from transformers.
  void sampleModelGolden() {
    const fs::path dir = fs::path(SDW_SOURCE_DIR) / "samples/model/brown-llama";
    const auto g = readJson(kRef / "brown-llama/golden.json");
    const auto m = Model::load(dir);
    GenerationOptions o;
    o.maxNewTokens = g["max_new_tokens"].get<int>();
    o.stopIds = m->config().eosTokenIds;
    for (const auto& c : g["cases"]) {
      const auto prompt = ids(c["prompt_ids"]);
      QCOMPARE(m->generate(prompt, o).tokens, ids(c["greedy_ids"]));
      if (c.contains("last_prompt_logits_fp32_cpu")) {
        const auto out = m->logits(prompt);
        const auto V = static_cast<std::size_t>(m->config().vocabSize);
        const double d = maxAbsDiff(std::span(out).subspan((prompt.size() - 1) * V, V),
                                    c["last_prompt_logits_fp32_cpu"].get<std::vector<float>>());
        qInfo("brown-llama: max |logit - transformers| = %.3g", d);
        QVERIFY2(d <= 1e-4, qPrintable(QStringLiteral("max abs diff %1").arg(d)));
      }
    }
  }

  // A real pretrained checkpoint imported from llama2.c (float32): greedy
  // continuations and last prompt logits from transformers on the same folder.
  void importedLlama2cGolden() {
    const fs::path dir = fs::path(SDW_SOURCE_DIR) / "samples/model/stories260K";
    const fs::path file = kRef / "stories260K/golden.json";
    if (!fs::exists(file)) QSKIP("tests/data/reference/stories260K/golden.json not made yet (tools/reference/llama2c_goldens.py)");
    const auto g = readJson(file);
    const auto m = Model::load(dir);
    GenerationOptions o;
    o.maxNewTokens = g["max_new_tokens"].get<int>();
    o.stopIds = g["stop_ids"].get<std::vector<std::int32_t>>();
    for (const auto& c : g["cases"]) {
      const auto prompt = ids(c["prompt_ids"]);
      QCOMPARE(m->generate(prompt, o).tokens, ids(c["greedy_ids"]));
      const auto out = m->logits(prompt);
      const auto V = static_cast<std::size_t>(m->config().vocabSize);
      const double d = maxAbsDiff(std::span(out).subspan((prompt.size() - 1) * V, V),
                                  c["last_prompt_logits_fp32_cpu"].get<std::vector<float>>());
      QVERIFY2(d <= 1e-4, qPrintable(QStringLiteral("%1: max abs diff %2").arg(QString::fromStdString(c["id"])).arg(d)));
    }
  }

  // The KV-cache decode path against one teacher-forced pass over the same tokens.
  void kvCacheMatchesTeacherForcing_data() {
    QTest::addColumn<QString>("model");
    QTest::newRow("llama") << "llama-tiny";
    QTest::newRow("qwen3") << "qwen3-tiny";
    QTest::newRow("qwen2") << "qwen2-tiny";
    QTest::newRow("mistral") << "mistral-tiny";
    QTest::newRow("gemma3") << "gemma3-tiny";
    QTest::newRow("gemma3 softcap") << "gemma3-softcap-tiny";
  }
  void kvCacheMatchesTeacherForcing() {
    QFETCH(QString, model);
    SKIP_WITHOUT_GOLDEN(model);
    const auto g = golden(model.toStdString());
    const auto m = Model::load(kRef / model.toStdString());
    const auto prompt = ids(g["greedy_prompt_ids"]);
    GenerationOptions o;
    o.maxNewTokens = 20;
    o.keepLogits = true;
    const auto r = m->generate(prompt, o);
    QCOMPARE(r.tokens.size(), std::size_t(20));
    std::vector<std::int32_t> seq = prompt;
    seq.insert(seq.end(), r.tokens.begin(), r.tokens.end() - 1);
    const auto tf = m->logits(seq);
    const auto V = static_cast<std::size_t>(m->config().vocabSize);
    const double d = maxAbsDiff(r.logits, std::span(tf).subspan((prompt.size() - 1) * V, r.tokens.size() * V));
    qInfo("%s: max |decode logit - teacher-forced| = %.3g", qPrintable(model), d);
    QVERIFY2(d <= 1e-4, qPrintable(QStringLiteral("max abs diff %1").arg(d)));
  }

  // ---------------------------------------------------------------- sampling and stops
  void samplerBasics() {
    const std::vector<float> logits = {0.1f, 3.0f, 2.9f, -1.0f, 3.0f};
    QCOMPARE(argmax(logits), 1);  // first of the ties
    Sampler topK1({.temperature = 1.0, .topK = 1, .topP = 1.0, .seed = 3});
    for (int i = 0; i < 20; ++i) QCOMPARE(topK1.next(logits), 1);
    Sampler topP({.temperature = 1.0, .topK = 0, .topP = 1e-6, .seed = 3});
    for (int i = 0; i < 20; ++i) QCOMPARE(topP.next(logits), 1);
    // top-k 3 never picks outside the three largest; temperature spreads the picks
    Sampler s({.temperature = 5.0, .topK = 3, .topP = 1.0, .seed = 11});
    std::map<int, int> counts;
    for (int i = 0; i < 600; ++i) ++counts[s.next(logits)];
    QCOMPARE(counts.size(), std::size_t(3));
    QVERIFY(counts.count(1) && counts.count(2) && counts.count(4));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Sampler({.temperature = 1.0, .topK = 0, .topP = 0.0, .seed = 0}));
  }

  // The sampler builds only as much of the sorted order as its rule needs; it must draw
  // exactly what a full stable sort of the row draws, from the same seeded stream.
  void samplerMatchesFullSort() {
    const auto reference = [](std::span<const float> logits, const SamplingOptions& o, std::mt19937_64& rng) {
      const std::size_t n = logits.size();
      std::vector<std::int32_t> idx(n);
      std::iota(idx.begin(), idx.end(), 0);
      std::stable_sort(idx.begin(), idx.end(), [&](std::int32_t a, std::int32_t b) {
        const float la = std::isnan(logits[a]) ? -INFINITY : logits[a];
        const float lb = std::isnan(logits[b]) ? -INFINITY : logits[b];
        return la > lb;
      });
      std::size_t keep = o.topK > 0 ? std::min<std::size_t>(n, static_cast<std::size_t>(o.topK)) : n;
      const double top = static_cast<double>(logits[idx[0]]) / o.temperature;
      std::vector<double> p(keep);
      double sum = 0;
      for (std::size_t i = 0; i < keep; ++i) {
        const double l = static_cast<double>(logits[idx[i]]);
        p[i] = std::isfinite(l) ? std::exp(l / o.temperature - top) : 0.0;
        sum += p[i];
      }
      if (!(sum > 0)) return idx[0];
      for (auto& v : p) v /= sum;
      if (o.topP < 1.0) {
        double cum = 0;
        std::size_t cut = 0;
        while (cut < keep) {
          cum += p[cut++];
          if (cum >= o.topP) break;
        }
        keep = std::max<std::size_t>(cut, 1);
        double s2 = 0;
        for (std::size_t i = 0; i < keep; ++i) s2 += p[i];
        for (std::size_t i = 0; i < keep; ++i) p[i] /= s2;
      }
      const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
      double cum = 0;
      for (std::size_t i = 0; i < keep; ++i) {
        cum += p[i];
        if (u < cum) return idx[i];
      }
      return idx[keep - 1];
    };
    std::mt19937_64 gen(5);
    std::normal_distribution<float> normal;
    struct Row {
      const char* what;
      std::vector<float> logits;
    };
    std::vector<Row> rows;
    for (const std::size_t n : {std::size_t{3}, std::size_t{700}, std::size_t{20000}}) {
      Row flat{"flat", {}}, peaked{"peaked", {}}, ties{"ties", {}}, odd{"nan and -inf", {}};
      for (std::size_t i = 0; i < n; ++i) {
        const float z = normal(gen);
        flat.logits.push_back(z);
        peaked.logits.push_back(6.f * z);
        ties.logits.push_back(std::round(z));
        odd.logits.push_back(i % 7 == 3 ? NAN : i % 11 == 5 ? -INFINITY : z);
      }
      rows.push_back(std::move(flat));
      rows.push_back(std::move(peaked));
      rows.push_back(std::move(ties));
      rows.push_back(std::move(odd));
    }
    const std::vector<SamplingOptions> options = {
        {.temperature = 1.0, .topK = 0, .topP = 1.0},  {.temperature = 0.7, .topK = 0, .topP = 1.0},
        {.temperature = 1.3, .topK = 50, .topP = 1.0}, {.temperature = 1.0, .topK = 0, .topP = 0.9},
        {.temperature = 0.8, .topK = 40, .topP = 0.5}, {.temperature = 2.0, .topK = 1, .topP = 1.0}};
    int draws = 0;
    for (const Row& row : rows)
      for (std::size_t k = 0; k < options.size(); ++k) {
        SamplingOptions o = options[k];
        o.seed = 100 + k;
        Sampler sampler(o);
        std::mt19937_64 rng(o.seed);
        for (int i = 0; i < 60; ++i, ++draws) {
          const std::int32_t want = reference(row.logits, o, rng), got = sampler.next(row.logits);
          QVERIFY2(got == want,
                   qPrintable(QStringLiteral("%1, %2 logits, options %3, draw %4: %5, a full sort draws %6")
                                  .arg(row.what)
                                  .arg(row.logits.size())
                                  .arg(k)
                                  .arg(i)
                                  .arg(got)
                                  .arg(want)));
        }
      }
    QCOMPARE(draws, 12 * 6 * 60);
  }

  // The batch's rows drawn on worker threads: each row's tokens are its own sampler's,
  // whatever the number of threads; finished rows are left alone and do not advance
  // their streams; a row's error reaches the caller.
  void batchSamplerMatchesRowSamplers() {
    const std::size_t rows = 24, vocab = 5000;
    std::mt19937_64 gen(9);
    std::normal_distribution<float> normal;
    std::vector<float> logits(rows * vocab);
    for (auto& v : logits) v = 3.f * normal(gen);
    const SamplingOptions base{.temperature = 1.0, .topK = 0, .topP = 1.0};
    std::vector<std::vector<std::int32_t>> want(rows);
    std::vector<Sampler> serial;
    for (std::size_t r = 0; r < rows; ++r) serial.emplace_back(SamplingOptions{base.temperature, 0, 1.0, 7 + r});
    const auto skipped = [](std::size_t r, int round) { return (r + static_cast<std::size_t>(round)) % 5 == 0; };
    for (int round = 0; round < 6; ++round)
      for (std::size_t r = 0; r < rows; ++r)
        if (!skipped(r, round)) want[r].push_back(serial[r].next(std::span<const float>(&logits[r * vocab], vocab)));
    for (const int threads : {1, 3, 8, 64}) {
      std::vector<Sampler> samplers;
      for (std::size_t r = 0; r < rows; ++r) samplers.emplace_back(SamplingOptions{base.temperature, 0, 1.0, 7 + r});
      BatchSampler batch(std::move(samplers), threads);
      QCOMPARE(batch.threads(), std::min<int>(threads, static_cast<int>(rows)));
      std::vector<std::vector<std::int32_t>> got(rows);
      for (int round = 0; round < 6; ++round) {
        std::vector<bool> skip(rows);
        for (std::size_t r = 0; r < rows; ++r) skip[r] = skipped(r, round);
        std::vector<std::int32_t> out(rows, -1);
        batch.draw(logits.data(), vocab, skip, out);
        for (std::size_t r = 0; r < rows; ++r) {
          if (skip[r]) QCOMPARE(out[r], -1);
          else got[r].push_back(out[r]);
        }
      }
      for (std::size_t r = 0; r < rows; ++r) QCOMPARE(got[r], want[r]);
      // bfloat16 rows (bit patterns) draw what their fp32 widening draws.
      {
        std::vector<std::uint16_t> bits(rows * vocab);
        std::vector<float> widened(rows * vocab);
        for (std::size_t i = 0; i < bits.size(); ++i) {
          bits[i] = static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(logits[i]) >> 16);
          widened[i] = std::bit_cast<float>(std::uint32_t{bits[i]} << 16);
        }
        std::vector<Sampler> a, b;
        for (std::size_t r = 0; r < rows; ++r) {
          a.emplace_back(SamplingOptions{0.8, 0, 1.0, 30 + r});
          b.emplace_back(SamplingOptions{0.8, 0, 1.0, 30 + r});
        }
        BatchSampler fromBits(std::move(a), threads), fromFloats(std::move(b), 1);
        const std::vector<bool> none(rows, false);
        for (int round = 0; round < 3; ++round) {
          std::vector<std::int32_t> x(rows), y(rows);
          fromBits.drawBf16(bits.data(), vocab, none, x);
          fromFloats.draw(widened.data(), vocab, none, y);
          QCOMPARE(x, y);
        }
      }
      bool threw = false;
      try {
        std::vector<std::int32_t> out(rows, 0);
        batch.draw(logits.data(), 0, std::vector<bool>(rows, false), out);
      } catch (const std::invalid_argument& e) {
        threw = QString::fromUtf8(e.what()).contains("empty logit row");
      }
      QVERIFY2(threw, "a row's error reaches the caller");
    }
  }

  void samplingIsSeeded() {
    const auto m = Model::load(kRef / "llama-tiny");
    const auto prompt = ids(golden("llama-tiny")["greedy_prompt_ids"]);
    GenerationOptions o;
    o.maxNewTokens = 24;
    o.sampling = {.temperature = 1.2, .topK = 100, .topP = 0.95, .seed = 42};
    const auto a = m->generate(prompt, o).tokens;
    const auto b = m->generate(prompt, o).tokens;
    QCOMPARE(a, b);
    int differ = 0;
    for (std::uint64_t seed = 43; seed < 46; ++seed) {
      o.sampling.seed = seed;
      differ += m->generate(prompt, o).tokens != a;
    }
    QVERIFY2(differ >= 2, "other seeds should give other continuations");
    o.sampling = {};  // greedy again: the golden prefix
    auto ref = ids(golden("llama-tiny")["greedy_fp32_cpu"]);
    ref.resize(24);
    QCOMPARE(m->generate(prompt, o).tokens, ref);
  }

  void stopTokens() {
    const auto g = golden("llama-tiny");
    const auto m = Model::load(kRef / "llama-tiny");
    const auto ref = ids(g["greedy_fp32_cpu"]);
    // Stop at the first occurrence of the 6th greedy token.
    const std::int32_t stop = ref[5];
    const auto first = static_cast<std::size_t>(std::find(ref.begin(), ref.end(), stop) - ref.begin());
    GenerationOptions o;
    o.maxNewTokens = 32;
    o.stopIds = {9999, stop};
    const auto r = m->generate(ids(g["greedy_prompt_ids"]), o);
    QCOMPARE(r.stopReason, StopReason::StopToken);
    QCOMPARE(r.tokens.size(), first + 1);
    QCOMPARE(r.tokens.back(), stop);
    // The callback can stop generation too.
    o.stopIds.clear();
    int seen = 0;
    const auto r2 = m->generate(ids(g["greedy_prompt_ids"]), o, [&](std::int32_t) { return ++seen < 4; });
    QCOMPARE(r2.stopReason, StopReason::Callback);
    QCOMPARE(r2.tokens.size(), std::size_t(4));
    // max new tokens
    o.maxNewTokens = 3;
    QCOMPARE(m->generate(ids(g["greedy_prompt_ids"]), o).tokens.size(), std::size_t(3));
    // the context limit (256 positions) ends generation early
    o.maxNewTokens = 50;
    const std::vector<std::int32_t> longPrompt(250, 7);
    const auto r3 = m->generate(longPrompt, o);
    QCOMPARE(r3.tokens.size(), std::size_t(6));
    QCOMPARE(r3.stopReason, StopReason::ContextFull);
  }

  // ---------------------------------------------------------------- batches
  void batchEqualsOneByOne_data() {
    QTest::addColumn<QString>("model");
    QTest::newRow("llama") << "llama-tiny";
    QTest::newRow("qwen3") << "qwen3-tiny";
    QTest::newRow("llama tied") << "llama-tiny-tied";
    QTest::newRow("mistral") << "mistral-tiny";
    QTest::newRow("qwen2") << "qwen2-tiny";
    QTest::newRow("gemma3") << "gemma3-tiny";
  }
  void batchEqualsOneByOne() {
    QFETCH(QString, model);
    SKIP_WITHOUT_GOLDEN(model);
    const auto g = golden(model.toStdString());
    const auto m = Model::load(kRef / model.toStdString());
    const auto in = ids(g["input_ids"]);
    const std::vector<std::vector<std::int32_t>> prompts = {
        {in.begin(), in.begin() + 3}, {in.begin() + 2, in.begin() + 13}, {in.begin() + 5, in.begin() + 10}, {in[20]}};
    GenerationOptions o;
    o.maxNewTokens = 16;
    o.keepLogits = true;
    std::vector<int> streamed(prompts.size(), 0);
    const auto batch = m->generateBatch(prompts, o, [&](int p, std::int32_t) {
      ++streamed[static_cast<std::size_t>(p)];
      return true;
    });
    QCOMPARE(batch.size(), prompts.size());
    for (std::size_t i = 0; i < prompts.size(); ++i) {
      const auto single = m->generate(prompts[i], o);
      QCOMPARE(batch[i].tokens, single.tokens);
      QCOMPARE(batch[i].promptTokens, int(prompts[i].size()));
      QCOMPARE(streamed[i], 16);
      const double d = maxAbsDiff(batch[i].logits, single.logits);
      QVERIFY2(d <= 1e-4, qPrintable(QStringLiteral("prompt %1: batched logits differ by %2").arg(i).arg(d)));
    }
    // Rows stop on their own: a stop id that only row 0 emits early.
    o.stopIds = {batch[0].tokens[1]};
    const auto stopped = m->generateBatch(prompts, o);
    QCOMPARE(stopped[0].stopReason, StopReason::StopToken);
    QVERIFY(stopped[0].tokens.size() <= 2);
    for (std::size_t i = 1; i < prompts.size(); ++i) {
      const auto& full = batch[i].tokens;
      const auto cut = std::find(full.begin(), full.end(), o.stopIds[0]);
      QCOMPARE(stopped[i].tokens, std::vector<std::int32_t>(full.begin(), cut == full.end() ? cut : cut + 1));
    }
  }

  // ---------------------------------------------------------------- observer
  void observerSeesPhasesAndPositions() {
    const auto m = Model::load(kRef / "llama-tiny");
    const auto prompt = ids(golden("llama-tiny")["greedy_prompt_ids"]);  // 8 tokens
    struct Seen {
      ActivationEvent ev;
      std::vector<float> x;
    };
    std::vector<Seen> seen;
    const int id = m->addObserver([&](const ActivationEvent& ev, std::span<const float> x) {
      QCOMPARE(x.size(), std::size_t(ev.tokens) * std::size_t(ev.dIn));
      seen.push_back({ev, {x.begin(), x.end()}});
    });
    GenerationOptions o;
    o.maxNewTokens = 5;
    const auto r = m->generate(prompt, o);
    // 2 layers x 4 inputs (qkv, o, gate/up, down); prefill once, then 4 decode steps.
    QCOMPARE(seen.size(), std::size_t(8 + 4 * 8));
    int prefill = 0;
    std::map<int, int> decodeAt;
    for (const auto& s : seen) {
      if (s.ev.phase == Phase::Prefill) {
        ++prefill;
        QCOMPARE(s.ev.position, 0);
        QCOMPARE(s.ev.tokens, 8);
      } else {
        ++decodeAt[s.ev.position];
        QCOMPARE(s.ev.tokens, 1);
      }
      QCOMPARE(s.ev.promptIndex, 0);
    }
    QCOMPARE(prefill, 8);
    QCOMPARE(decodeAt, (std::map<int, int>{{8, 8}, {9, 8}, {10, 8}, {11, 8}}));
    QCOMPARE(seen[0].ev.modules, (std::vector<std::string>{"model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.k_proj",
                                                           "model.layers.0.self_attn.v_proj"}));
    QCOMPARE(seen[0].ev.dIn, std::int64_t(64));
    QCOMPARE(seen[1].ev.modules, std::vector<std::string>{"model.layers.0.self_attn.o_proj"});
    QCOMPARE(seen[2].ev.modules, (std::vector<std::string>{"model.layers.0.mlp.gate_proj", "model.layers.0.mlp.up_proj"}));
    QCOMPARE(seen[3].ev.modules, std::vector<std::string>{"model.layers.0.mlp.down_proj"});
    QCOMPARE(seen[3].ev.dIn, std::int64_t(160));
    QCOMPARE(seen[7].ev.layer, 1);

    // Exact capture during decoding == a teacher-forced re-forward at the same positions.
    const std::vector<Seen> decodeSeen(seen.begin() + 8, seen.end());
    seen.clear();
    std::vector<std::int32_t> seq = prompt;
    seq.insert(seq.end(), r.tokens.begin(), r.tokens.end() - 1);
    (void)m->logits(seq);
    QCOMPARE(seen.size(), std::size_t(8));
    double worst = 0;
    for (const auto& d : decodeSeen) {
      const auto& full = seen[static_cast<std::size_t>(d.ev.layer * 4) + (d.ev.modules.size() == 3 ? 0 : d.ev.modules.size() == 2 ? 2 : d.ev.dIn == 160 ? 3 : 1)];
      QCOMPARE(full.ev.modules, d.ev.modules);
      const auto row = std::span(full.x).subspan(static_cast<std::size_t>(d.ev.position * d.ev.dIn), static_cast<std::size_t>(d.ev.dIn));
      worst = std::max(worst, maxAbsDiff(d.x, row));
    }
    QVERIFY2(worst <= 1e-5, qPrintable(QStringLiteral("decode vs re-forward activations differ by %1").arg(worst)));

    // Removed: no more calls.
    m->removeObserver(id);
    seen.clear();
    (void)m->generate(prompt, o);
    QCOMPARE(seen.size(), std::size_t(0));
  }

  void observerInRaggedBatch() {
    const auto m = Model::load(kRef / "qwen3-tiny");
    const std::vector<std::vector<std::int32_t>> prompts = {{5, 6, 7}, {8, 9, 10, 11, 12, 13}};
    std::map<std::pair<int, int>, int> prefillTokens;  // (prompt, phase 0) -> tokens
    std::map<int, std::vector<int>> decodePositions;   // prompt -> positions (layer 0 qkv only)
    m->addObserver([&](const ActivationEvent& ev, std::span<const float>) {
      if (ev.phase == Phase::Prefill) prefillTokens[{ev.promptIndex, ev.position}] = ev.tokens;
      else if (ev.layer == 0 && ev.modules.size() == 3) decodePositions[ev.promptIndex].push_back(ev.position);
    });
    GenerationOptions o;
    o.maxNewTokens = 4;
    (void)m->generateBatch(prompts, o);
    QCOMPARE(prefillTokens, (std::map<std::pair<int, int>, int>{{{0, 0}, 3}, {{1, 0}, 6}}));
    QCOMPARE(decodePositions[0], (std::vector<int>{3, 4, 5}));
    QCOMPARE(decodePositions[1], (std::vector<int>{6, 7, 8}));
  }

  // ---------------------------------------------------------------- dtypes and random init
  void bf16WeightsOnCpu() {
    const auto g = golden("llama-tiny");
    const auto m = Model::load(kRef / "llama-tiny", {.device = "cpu", .dtype = "bfloat16"});
    QCOMPARE(m->computeDtype(), std::string("float32"));
    QCOMPARE(m->modules()[0].dtype, std::string("bfloat16"));
    const auto in = ids(g["input_ids"]);
    const auto out = m->logits(in);
    const auto V = static_cast<std::size_t>(m->config().vocabSize);
    const auto ref = g["logits"][in.size() - 1].get<std::vector<float>>();
    const double d = maxAbsDiff(std::span(out).subspan((in.size() - 1) * V, V), ref);
    QVERIFY2(d > 0 && d < 2e-2, qPrintable(QStringLiteral("bf16-rounded weights moved the last logits by %1").arg(d)));
  }

  void randomInit() {
    ModelConfig c = loadModelConfig(kRef / "qwen3-tiny");
    const auto a = Model::randomInit(c, {}, 5, 0.2);
    const auto b = Model::randomInit(c, {}, 5, 0.2);
    const std::vector<std::int32_t> seq = {1, 2, 3, 4};
    const auto la = a->logits(seq), lb = b->logits(seq);
    QCOMPARE(la, lb);
    for (const float v : la) QVERIFY(std::isfinite(v));
    QVERIFY(Model::randomInit(c, {}, 6, 0.2)->logits(seq) != la);
    QCOMPARE(a->parameterCount(), std::uint64_t(c.parameterCount()));
    QVERIFY_THROWS_EXCEPTION(std::exception, Model::randomInit(c, {.device = "tpu", .dtype = "float32"}));
    QVERIFY_THROWS_EXCEPTION(std::exception, Model::randomInit(c, {.device = "cpu", .dtype = "int8"}));
  }
};

QTEST_GUILESS_MAIN(TestModelCpu)
#include "test_model_cpu.moc"
