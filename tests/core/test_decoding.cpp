// The decoding protocol (core/decoding.h): the default and its words, the
// JSON round trip, equality, validation and the generation_config.json note;
// reading what a run or a pruned checkpoint decoded (core/run_decoding.h);
// and the warnings of core/decoding_checks.h, present when decodings or
// prompt sets disagree and absent when they agree.

#include "core/decoding.h"
#include "core/decoding_checks.h"
#include "core/provenance.h"
#include "core/run_decoding.h"
#include "core/runstore.h"

#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using namespace sdw;

namespace {

const Decoding kGreedy{0.0, 0, 1.0};

RunDecoding arRun(const std::string& file, const Decoding& d, const std::string& prompts) {
  RunDecoding r;
  r.run = "/ws/" + file;
  r.source = "ar";
  r.decodes = true;
  r.decoding = d;
  r.prompts = "/samples/prompts/" + prompts;
  return r;
}

RunDecoding fixedRun(const std::string& file) {
  RunDecoding r;
  r.run = "/ws/" + file;
  r.source = "fixed";
  r.corpus = "/samples/corpus/brown-calib.txt";
  return r;
}

std::string all(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

}  // namespace

class TestDecoding : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void defaultIsThePapersProtocol() {
    const Decoding d = defaultDecoding();
    QCOMPARE(d.temperature, 1.0);
    QCOMPARE(d.topK, 0);
    QCOMPARE(d.topP, 1.0);
    QVERIFY(!d.greedy());
    QCOMPARE(d.describe(), std::string("sampled, T=1.0, top-k off, top-p 1.0"));
    QCOMPARE(kGreedy.describe(), std::string("greedy"));
    QCOMPARE((Decoding{0.7, 40, 0.95}.describe()), std::string("sampled, T=0.7, top-k 40, top-p 0.95"));
  }

  void sameDecoding_data() {
    QTest::addColumn<double>("t1");
    QTest::addColumn<int>("k1");
    QTest::addColumn<double>("p1");
    QTest::addColumn<double>("t2");
    QTest::addColumn<int>("k2");
    QTest::addColumn<double>("p2");
    QTest::addColumn<bool>("same");
    QTest::newRow("default twice") << 1.0 << 0 << 1.0 << 1.0 << 0 << 1.0 << true;
    QTest::newRow("greedy ignores top-k/top-p") << 0.0 << 40 << 0.9 << 0.0 << 0 << 1.0 << true;
    QTest::newRow("greedy vs sampled") << 0.0 << 0 << 1.0 << 1.0 << 0 << 1.0 << false;
    QTest::newRow("temperature") << 0.8 << 0 << 1.0 << 1.0 << 0 << 1.0 << false;
    QTest::newRow("top-k") << 1.0 << 40 << 1.0 << 1.0 << 0 << 1.0 << false;
    QTest::newRow("top-p") << 1.0 << 0 << 0.95 << 1.0 << 0 << 1.0 << false;
  }
  void sameDecoding() {
    QFETCH(double, t1);
    QFETCH(int, k1);
    QFETCH(double, p1);
    QFETCH(double, t2);
    QFETCH(int, k2);
    QFETCH(double, p2);
    QFETCH(bool, same);
    QCOMPARE(sdw::sameDecoding(Decoding{t1, k1, p1}, Decoding{t2, k2, p2}), same);
    QCOMPARE(sdw::sameDecoding(Decoding{t2, k2, p2}, Decoding{t1, k1, p1}), same);
  }

  void jsonRoundTrip() {
    const Decoding d{0.7, 40, 0.95};
    const Decoding back = decodingFromJson(decodingToJson(d));
    QCOMPARE(back.temperature, d.temperature);
    QCOMPARE(back.topK, d.topK);
    QCOMPARE(back.topP, d.topP);
    // Missing keys take the fallback: an older settings JSON with only a temperature.
    const Decoding partial = decodingFromJson(R"({"temperature": 0})", kDefaultDecoding);
    QVERIFY(partial.greedy());
    QCOMPARE(partial.topP, 1.0);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, decodingFromJson("not json"));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, decodingFromJson(R"({"top_k": "x"})"));
  }

  void validation() {
    validateDecoding(kDefaultDecoding, "test");
    validateDecoding(kGreedy, "test");
    try {
      validateDecoding(Decoding{1.0, 0, 0.0}, "eval");
      QFAIL("top-p 0 accepted");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(std::string(e.what()).find("eval: top-p must be in (0, 1]") == 0, e.what());
    }
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, validateDecoding(Decoding{-1.0, 0, 1.0}, "x"));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, validateDecoding(Decoding{1.0, -2, 1.0}, "x"));
  }

  // The sample checkpoint says do_sample false: a note, never applied.
  void generationConfigIsNotedNotApplied() {
    const fs::path sample = fs::path(SDW_SOURCE_DIR) / "samples/model/brown-llama";
    const GenerationConfigDecoding g = readGenerationConfig(sample);
    QVERIFY(g.present);
    QVERIFY(g.requested.greedy());
    const std::string note = generationConfigNote(sample, kDefaultDecoding);
    QVERIFY2(note.find("generation_config.json asks for greedy decoding (do_sample false); this run decodes "
                       "sampled, T=1.0, top-k off, top-p 1.0") != std::string::npos,
             note.c_str());
    QCOMPARE(generationConfigNote(sample, kGreedy), std::string());  // it agrees: nothing to say

    QTemporaryDir dir;
    const fs::path d = dir.path().toStdString();
    QCOMPARE(generationConfigNote(d, kDefaultDecoding), std::string());  // no file
    std::ofstream(d / "generation_config.json") << R"({"do_sample": true, "temperature": 0.6, "top_p": 0.95})";
    const GenerationConfigDecoding q = readGenerationConfig(d);
    QCOMPARE(q.requested.temperature, 0.6);
    QCOMPARE(q.requested.topK, 50);  // transformers' default when sampling
    QVERIFY(generationConfigNote(d, kDefaultDecoding).find("asks for sampled, T=0.6, top-k 50, top-p 0.95") !=
            std::string::npos);
  }

  // Epsilon: the reference against each decoding run.
  void epsilonChecks() {
    const RunDecoding ref = arRun("reference-heldout.sdw.h5", kDefaultDecoding, "brown-heldout.jsonl");
    const RunDecoding fixed = fixedRun("calib-fixed.sdw.h5");
    const RunDecoding ar = arRun("calib-ar.sdw.h5", kDefaultDecoding, "brown-calib.jsonl");
    DecodingCheck c = checkEpsilonDecodings(ref, {fixed, ar});
    QVERIFY2(c.warnings.empty(), all(c.warnings).c_str());
    QCOMPARE(c.notes.size(), std::size_t{2});
    QCOMPARE(c.notes[1], std::string("Prompt sets: reference reference-heldout.sdw.h5 decoded brown-heldout.jsonl; "
                                     "fixed-text run calib-fixed.sdw.h5 read the corpus brown-calib.txt; AR run "
                                     "calib-ar.sdw.h5 decoded brown-calib.jsonl (another file: the reference is held "
                                     "out)."));

    const RunDecoding greedyAr = arRun("calib-ar.sdw.h5", kGreedy, "brown-calib.jsonl");
    c = checkEpsilonDecodings(ref, {fixed, greedyAr});
    QCOMPARE(c.warnings.size(), std::size_t{1});
    QCOMPARE(c.warnings[0], std::string("The AR run calib-ar.sdw.h5 decoded greedy, but the decode-time reference "
                                        "reference-heldout.sdw.h5 decoded sampled, T=1.0, top-k off, top-p 1.0: its "
                                        "eps then also measures the difference between two decodings, not only the "
                                        "calibration gap. Calibrate the run and the reference with the same "
                                        "decoding."));

    const RunDecoding leaked = arRun("reference-calib.sdw.h5", kDefaultDecoding, "brown-calib.jsonl");
    c = checkEpsilonDecodings(leaked, {fixed, ar});
    QCOMPARE(c.warnings.size(), std::size_t{1});
    QVERIFY2(c.warnings[0].find("decoded the same prompts file (brown-calib.jsonl): the reference is not held out") !=
                 std::string::npos,
             c.warnings[0].c_str());

    c = checkEpsilonDecodings(fixedRun("other-fixed.sdw.h5"), {ar});
    QCOMPARE(c.warnings.size(), std::size_t{1});
    QVERIFY(c.warnings[0].find("did not decode (source fixed)") != std::string::npos);
  }

  // Evaluation / drift: each pruned model's calibration against the job.
  void prunedCalibrationChecks() {
    PrunedCalibration fixed{"/ws/pruned/sgpt24-fixed", true, "model.safetensors", fixedRun("calib-fixed.sdw.h5")};
    PrunedCalibration ar{"/ws/pruned/sgpt24-ar", true, "model.safetensors",
                         arRun("calib-ar.sdw.h5", kGreedy, "brown-calib.jsonl")};
    PrunedCalibration unknown{"/elsewhere/model", false, "", {}};
    const fs::path heldout = "/samples/prompts/brown-heldout.jsonl";

    DecodingCheck c = checkPrunedCalibrations({fixed, ar}, kGreedy, heldout, DecodingJob::Evaluation);
    QVERIFY2(c.warnings.empty(), all(c.warnings).c_str());
    QCOMPARE(c.notes[0], std::string("Calibrations: sgpt24-fixed: calib-fixed.sdw.h5, fixed text (no decoding); "
                                     "sgpt24-ar: calib-ar.sdw.h5, AR, greedy."));

    c = checkPrunedCalibrations({fixed, ar, unknown}, kDefaultDecoding, heldout, DecodingJob::Evaluation);
    QCOMPARE(c.warnings.size(), std::size_t{1});  // the fixed-text model decoded nothing: no warning
    QCOMPARE(c.warnings[0], std::string("sgpt24-ar was calibrated on calib-ar.sdw.h5, decoded greedy, but this "
                                        "evaluation decodes sampled, T=1.0, top-k off, top-p 1.0: the comparison "
                                        "mixes two decodings. Calibrate and run the evaluation with the same "
                                        "decoding to compare like with like."));
    QVERIFY(all(c.notes).find("model: its calibration is not known") != std::string::npos);

    c = checkPrunedCalibrations({ar}, kGreedy, "/samples/prompts/brown-calib.jsonl", DecodingJob::DriftAnalysis);
    QCOMPARE(c.warnings.size(), std::size_t{1});
    QCOMPARE(c.warnings[0], std::string("sgpt24-ar was calibrated by decoding brown-calib.jsonl, the same prompts "
                                        "file this drift analysis decodes: those prompts are not held out for it."));
  }

  // What a calibration run records reads back; a pruned folder is traced to
  // its calibration through its record.
  void readingRuns() {
    QTemporaryDir dir;
    const fs::path d = dir.path().toStdString();
    namespace rs = sdw::runstore;
    {
      rs::RunWriter w = rs::RunWriter::create(d / "calib.sdw.h5", Provenance{}, "calibration");
      w.createGroup("/calibration");
      w.setStringAttribute("/calibration", "source", "ar");
      w.setDoubleAttribute("/calibration", "temperature", 0.7);
      w.setIntAttribute("/calibration", "sampling_top_k", 40);
      w.setDoubleAttribute("/calibration", "sampling_top_p", 0.9);
      w.setStringAttribute("/calibration", "prompts", "/p/brown-calib.jsonl");
      w.setStringAttribute("/calibration", "corpus", "");
      w.commit();
    }
    const RunDecoding r = calibrationRunDecoding(d / "calib.sdw.h5");
    QVERIFY(r.decodes);
    QVERIFY(sdw::sameDecoding(r.decoding, Decoding{0.7, 40, 0.9}));
    QCOMPARE(r.prompts, fs::path("/p/brown-calib.jsonl"));

    // An older pruning record (no calibration_decodes): the run it names.
    const fs::path pruned = d / "pruned";
    fs::create_directories(pruned);
    {
      rs::RunWriter w = rs::RunWriter::create(pruned / "pruning.sdw.h5", Provenance{}, "pruning");
      w.createGroup("/pruning");
      w.setStringAttribute("/pruning", "calibration_run", (d / "calib.sdw.h5").string());
      w.setStringAttribute("/pruning", "calibration_source", "ar");
      w.commit();
    }
    PrunedCalibration p = findPrunedCalibration(pruned);
    QVERIFY(p.found);
    QVERIFY(sdw::sameDecoding(p.calibration.decoding, Decoding{0.7, 40, 0.9}));
    fs::remove(d / "calib.sdw.h5");
    QVERIFY(!findPrunedCalibration(pruned).found);  // the run is gone, the record names no decoding
    QVERIFY(!findPrunedCalibration(d / "nowhere").found);
  }
};

QTEST_GUILESS_MAIN(TestDecoding)
#include "test_decoding.moc"
