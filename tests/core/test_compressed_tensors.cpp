// The compressed-tensors sparse formats (core/compressed_tensors.h): an export
// of the sample pruned N:M decompresses to the dense pruned weights exactly in
// both formats; sparse-24-bitmask's bitmask bytes are our mask words and its
// values our packed values (the import is a copy); refusals name the tensor or
// the config entry. Label: core.

#include "core/compressed_tensors.h"
#include "core/json_limits.h"
#include "core/safetensors.h"
#include "core/sparse_file.h"
#include "tests/gpu/sparse_fixture.h"

#include <nlohmann/json.hpp>

#include <QTemporaryDir>
#include <QtTest>

#include <cstring>
#include <fstream>

using namespace sdw;
namespace fs = std::filesystem;

namespace {

QString errorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

std::vector<float> denseOf(const TensorView& v) {
  std::vector<float> out(static_cast<std::size_t>(v.numel()));
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::uint16_t h;
    std::memcpy(&h, v.bytes.data() + 2 * i, 2);
    out[i] = sparse::bf16ToFloat(h);
  }
  return out;
}

}  // namespace

class TestCompressedTensors : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  fs::path pruned_, pruned48_;

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    pruned_ = fs::path(tmp_.path().toStdString()) / "pruned-2-4";
    pruned48_ = fs::path(tmp_.path().toStdString()) / "pruned-4-8";
    testing::writeNmPruned(pruned_, {2, 4});
    testing::writeNmPruned(pruned48_, {4, 8});
  }

  void exportDecompressesExactly_data() {
    QTest::addColumn<int>("format");
    QTest::newRow("sparse-bitmask") << int(ct::Format::SparseBitmask);
    QTest::newRow("sparse-24-bitmask") << int(ct::Format::Sparse24Bitmask);
  }
  void exportDecompressesExactly() {
    QFETCH(int, format);
    const auto f = static_cast<ct::Format>(format);
    const fs::path out = fs::path(tmp_.path().toStdString()) / ("ct-" + ct::formatName(f));
    const auto r = ct::exportCompressedTensors(pruned_, out, f, "2:4");
    QCOMPARE(r.compressedModules, 42);
    QVERIFY(!fs::exists(fs::path(out.string() + ".partial")));
    QVERIFY(std::abs(r.globalSparsity - 0.5) < 1e-3);
    QVERIFY(r.compressedBytes < r.denseBytes * 6 / 10);
    // config.json: what the compressed-tensors library writes.
    const auto cfg = readJsonFileBounded(out / "config.json");
    const auto& q = cfg["quantization_config"];
    QCOMPARE(q["quant_method"].get<std::string>(), std::string("compressed-tensors"));
    QCOMPARE(q["sparsity_config"]["format"].get<std::string>(), ct::formatName(f));
    QCOMPARE(q["sparsity_config"]["sparsity_structure"].get<std::string>(), std::string("2:4"));
    QCOMPARE(q["sparsity_config"]["ignore"][0].get<std::string>(), std::string("lm_head"));
    QVERIFY(ct::declaredFormat(out) == f);
    QVERIFY(!ct::declaredFormat(pruned_));

    const auto dense = SafetensorsFile::open(pruned_ / "model.safetensors");
    const auto comp = SafetensorsFile::open(out / "model.safetensors");
    const ct::Reader reader(out);
    const auto packedFile = sparse::readSparseFile(pruned_ / "model.sdwsparse");
    int checked = 0;
    for (const auto& [name, v] : dense.tensors()) {
      if (name.find("_proj.weight") == std::string::npos) {
        const TensorView* c = comp.find(name);
        QVERIFY2(c && c->dtype == v.dtype && c->shape == v.shape &&
                     std::memcmp(c->bytes.data(), v.bytes.data(), v.bytes.size()) == 0,
                 name.c_str());
        continue;
      }
      const std::string prefix = name.substr(0, name.size() - 7);
      QVERIFY(!comp.find(name));
      QVERIFY(reader.compressed(prefix));
      const ct::DenseWeight d = reader.dense(prefix);
      QCOMPARE(d.dtype, std::string("BF16"));
      QVERIFY2(d.values == denseOf(v), prefix.c_str());
      const TensorView* shape = comp.find(prefix + ".shape");
      QVERIFY(shape && shape->dtype == "I64");
      const std::vector<std::int64_t> wantShape =
          f == ct::Format::Sparse24Bitmask ? std::vector<std::int64_t>{2, 1} : std::vector<std::int64_t>{2};
      QVERIFY(shape->shape == wantShape);
      QCOMPARE(comp.find(prefix + ".row_offsets") != nullptr, f == ct::Format::SparseBitmask);
      // Packed for the kernel, equal to the workbench's own packed file.
      const auto pk = reader.packed(prefix, {2, 4});
      QVERIFY(pk.has_value());
      const auto it = std::find_if(packedFile.begin(), packedFile.end(), [&](const auto& m) { return m.name == prefix; });
      QVERIFY(it != packedFile.end());
      QVERIFY(pk->values == it->matrix.values);
      QVERIFY(pk->masks == it->matrix.masks);
      if (f == ct::Format::Sparse24Bitmask) {
        // Bit j of byte k is column 8k + j: the bytes are our little-endian mask words.
        const TensorView* bits = comp.find(prefix + ".bitmask");
        QCOMPARE(bits->bytes.size(), it->matrix.masks.size() * 4);
        QVERIFY(std::memcmp(bits->bytes.data(), it->matrix.masks.data(), bits->bytes.size()) == 0);
        const TensorView* vals = comp.find(prefix + ".compressed");
        QVERIFY(std::memcmp(vals->bytes.data(), it->matrix.values.data(), vals->bytes.size()) == 0);
      }
      ++checked;
    }
    QCOMPARE(checked, 42);
    QVERIFY(fs::exists(out / "tokenizer.json"));
  }

  void sparseBitmaskKeepsOtherPatterns() {
    const fs::path out = fs::path(tmp_.path().toStdString()) / "ct-4-8";
    ct::exportCompressedTensors(pruned48_, out, ct::Format::SparseBitmask, "4:8");
    const ct::Reader reader(out);
    QCOMPARE(reader.structure(), std::string("4:8"));
    QVERIFY(reader.packed("model.layers.0.mlp.up_proj", {4, 8}).has_value());
    QVERIFY(!reader.packed("model.layers.0.mlp.up_proj", {2, 4}).has_value());  // 4 of 8 is not 2 of every 4
  }

  void refusals() {
    const fs::path base(tmp_.path().toStdString());
    // A 4:8 model is not 2:4.
    QString e = errorOf([&] { ct::exportCompressedTensors(pruned48_, base / "bad24", ct::Format::Sparse24Bitmask, "2:4"); });
    QVERIFY2(e.contains("not 2:4") && e.contains("_proj.weight"), qPrintable(e));
    QVERIFY(!fs::exists(base / "bad24"));
    // Quantized or foreign formats are named.
    const auto withConfig = [&](const std::string& dir, const nlohmann::json& q) {
      fs::create_directories(base / dir);
      nlohmann::json c = readJsonFileBounded(pruned_ / "config.json");
      c["quantization_config"] = q;
      std::ofstream(base / dir / "config.json") << c.dump();
      return base / dir;
    };
    e = errorOf([&] { ct::declaredFormat(withConfig("gptq", {{"quant_method", "gptq"}, {"bits", 4}})); });
    QVERIFY2(e.contains("quant_method 'gptq' is not supported"), qPrintable(e));
    e = errorOf([&] {
      ct::declaredFormat(withConfig("w4", {{"quant_method", "compressed-tensors"}, {"config_groups", {{"group_0", {{"targets", {"Linear"}}}}}}}));
    });
    QVERIFY2(e.contains("quantized compressed-tensors checkpoint"), qPrintable(e));
    e = errorOf([&] {
      ct::declaredFormat(withConfig("marlin", {{"quant_method", "compressed-tensors"}, {"sparsity_config", {{"format", "marlin-24"}}}}));
    });
    QVERIFY2(e.contains("sparsity format 'marlin-24' is not supported"), qPrintable(e));
    // An already compressed checkpoint is not exported again.
    const fs::path out = base / "ct-twice";
    ct::exportCompressedTensors(pruned_, out, ct::Format::SparseBitmask, "2:4");
    e = errorOf([&] { ct::exportCompressedTensors(out, base / "ct-thrice", ct::Format::SparseBitmask, "2:4"); });
    QVERIFY2(e.contains("already declares a quantization_config"), qPrintable(e));
  }
};

QTEST_GUILESS_MAIN(TestCompressedTensors)
#include "test_compressed_tensors.moc"
