// Activation samples of a calibration run (CalibrationSettings::sampleRows):
// on the sample model, an AR run and a fixed-text run keep a uniform sample
// of their counted rows. Checked from outside the calibration code: the
// labels (distinct ascending rows inside the counted range; AR rows are
// decode positions, position = prompt length + decode step), and each stored
// row equal to the projection input the model computes for that position of
// that stored sequence (a teacher-forced pass with an observer, the sequence
// rebuilt from the run's own token columns). Label: engine.

#include "core/runstore.h"
#include "gpu/calibration.h"
#include "gpu/model.h"

#include <QtTest/QtTest>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <vector>

using namespace sdw;
namespace fs = std::filesystem;

namespace {

const fs::path kModel = fs::path(SDW_SOURCE_DIR) / "samples/model/brown-llama";

}  // namespace

class TestActivationSamples : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void arRunKeepsDecodeRows() {
    QTemporaryDir dir;
    gpu::CalibrationSettings s;
    s.source = gpu::CalibrationSource::Ar;
    s.model = kModel;
    s.prompts = fs::path(SDW_SOURCE_DIR) / "samples/prompts/brown-calib.jsonl";
    s.tokenBudget = 600;
    s.maxNewTokens = 40;
    s.batch = 4;
    s.seed = 3;
    s.sampleRows = 48;
    const fs::path out = fs::path(dir.path().toStdString()) / "ar.sdw.h5";
    const auto r = gpu::runCalibration(s, out);
    QVERIFY(r.complete);

    const auto run = runstore::RunReader::open(out);
    const std::string g = "/calibration/samples";
    QCOMPARE(run.readIntAttribute(g, "rows"), std::int64_t(48));
    QCOMPARE(run.readIntAttribute(g, "rows_counted"), run.readIntAttribute("/calibration", "tokens_collected"));
    const auto row = run.readInt64(g + "/row").data;
    const auto seq = run.readInt64(g + "/sequence").data;
    const auto pos = run.readInt32(g + "/position").data;
    const auto step = run.readInt32(g + "/decode_step").data;
    QCOMPARE(row.size(), std::size_t(48));
    QVERIFY(std::is_sorted(row.begin(), row.end()));
    QCOMPARE(std::set<std::int64_t>(row.begin(), row.end()).size(), row.size());
    QVERIFY(row.front() >= 0 && row.back() < r.tokensCollected);

    // The stored sequences, from the run's own columns.
    const std::string gen = "/calibration/generations";
    const auto tokens = run.readInt32(gen + "/token_ids").data;
    const auto offsets = run.readInt64(gen + "/offsets").data;
    const auto promptIds = run.readInt32(gen + "/prompt_token_ids").data;
    const auto promptOffsets = run.readInt64(gen + "/prompt_offsets").data;
    std::map<std::int64_t, std::vector<std::int32_t>> sequences;  // generation -> prompt + generated
    std::map<std::int64_t, std::int64_t> promptLength;
    for (std::size_t i = 0; i < seq.size(); ++i) {
      const auto k = static_cast<std::size_t>(seq[i]);
      QVERIFY(k + 1 < offsets.size());
      std::vector<std::int32_t> ids(promptIds.begin() + promptOffsets[k], promptIds.begin() + promptOffsets[k + 1]);
      promptLength[seq[i]] = static_cast<std::int64_t>(ids.size());
      ids.insert(ids.end(), tokens.begin() + offsets[k], tokens.begin() + offsets[k + 1]);
      sequences[seq[i]] = ids;
      QVERIFY2(step[i] >= 0, "AR without the prefill counts decode rows only");
      QCOMPARE(std::int64_t(pos[i]), promptLength[seq[i]] + step[i]);
      QVERIFY(pos[i] < static_cast<std::int32_t>(sequences[seq[i]].size()));
    }

    // Each stored row is the model's input at that position (every input of every layer).
    const auto model = gpu::Model::load(kModel);
    const auto inputs = run.listGroup("/calibration/inputs");
    QCOMPARE(inputs.size(), std::size_t(4 * model->config().numLayers));
    std::map<std::string, std::vector<float>> stored;
    for (const auto& in : inputs) stored[in] = run.readFloat32("/calibration/inputs/" + in + "/sample_rows").data;
    double worst = 0;
    int checked = 0;
    for (const auto& [k, ids] : sequences) {
      std::map<std::string, std::vector<float>> seen;  // input -> [T, dIn] of this sequence
      const int id = model->addObserver([&](const gpu::ActivationEvent& ev, std::span<const float> x) {
        seen[ev.modules.front()].assign(x.begin(), x.end());
      });
      (void)model->logits(std::span<const std::int32_t>(ids.data(), ids.size() - 1));  // the last token is never read
      model->removeObserver(id);
      for (std::size_t i = 0; i < seq.size(); ++i) {
        if (seq[i] != k) continue;
        for (const auto& in : inputs) {
          const auto& all = seen.at(in);
          const std::size_t dIn = all.size() / (ids.size() - 1);
          const auto& mine = stored.at(in);
          for (std::size_t c = 0; c < dIn; ++c) {
            const double want = all[static_cast<std::size_t>(pos[i]) * dIn + c];
            const double got = mine[i * dIn + c];
            worst = std::max(worst, std::abs(got - want) / std::max(1.0, std::abs(want)));
          }
          ++checked;
        }
      }
    }
    qInfo("%d sampled rows x inputs checked against the model, worst relative difference %.2g", checked, worst);
    QCOMPARE(checked, 48 * static_cast<int>(inputs.size()));
    QVERIFY2(worst <= 1e-4, qPrintable(QString::number(worst)));
  }

  void fixedRunLabelsAndResumeSettings() {
    QTemporaryDir dir;
    gpu::CalibrationSettings s;
    s.source = gpu::CalibrationSource::Fixed;
    s.model = kModel;
    s.corpus = fs::path(SDW_SOURCE_DIR) / "samples/corpus/brown-calib.txt";
    s.tokenBudget = 1024;
    s.window = 128;
    s.sampleRows = 2000;  // more than counted: every row, once
    const fs::path out = fs::path(dir.path().toStdString()) / "fixed.sdw.h5";
    const auto r = gpu::runCalibration(s, out);
    const auto run = runstore::RunReader::open(out);
    const auto row = run.readInt64("/calibration/samples/row").data;
    QCOMPARE(static_cast<std::int64_t>(row.size()), r.tokensCollected);
    for (std::size_t i = 0; i < row.size(); ++i) QCOMPARE(row[i], static_cast<std::int64_t>(i));
    const auto step = run.readInt32("/calibration/samples/decode_step").data;
    QVERIFY(std::all_of(step.begin(), step.end(), [](std::int32_t v) { return v == -1; }));
    const auto pos = run.readInt32("/calibration/samples/position").data;
    QCOMPARE(*std::max_element(pos.begin(), pos.end()), 127);
    // The setting travels with the run (a resume keeps sampling).
    const auto back = gpu::calibrationSettingsFromJson(run.provenance().settingsJson, out);
    QCOMPARE(back.sampleRows, 2000);
    // Refused below zero.
    s.sampleRows = -1;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, gpu::validateCalibrationSettings(s));
  }
};

QTEST_GUILESS_MAIN(TestActivationSamples)
#include "test_activation_samples.moc"
