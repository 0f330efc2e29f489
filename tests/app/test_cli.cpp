// sdw-cli end to end: help, exit codes, one-line errors on bad input,
// reading the sample workspace, and the one decoding protocol (calibrate,
// eval, analyze drift and analyze epsilon agree by default and warn when a
// comparison mixes decodings or prompt sets).

#include "app/cli/command.h"
#include "core/decoding.h"
#include "core/runstore.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QFileInfo>
#include <QProcess>
#include <QRandomGenerator>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

struct Result {
  int code = -1;
  QString out;
  QString err;
};

Result cli(const QStringList& args, int timeoutMs = 60000) {
  QProcess p;
  p.start(QStringLiteral(SDW_BINARY_DIR "/bin/sdw-cli"), args);
  if (!p.waitForFinished(timeoutMs)) return {};
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2, QString::fromUtf8(p.readAllStandardOutput()),
          QString::fromUtf8(p.readAllStandardError())};
}

const QString kSampleWorkspace = QStringLiteral(SDW_SOURCE_DIR "/samples/workspace");
const QString kModel = QStringLiteral(SDW_SOURCE_DIR "/samples/model/brown-llama");
const QString kCalibPrompts = QStringLiteral(SDW_SOURCE_DIR "/samples/prompts/brown-calib.jsonl");
const QString kHeldoutPrompts = QStringLiteral(SDW_SOURCE_DIR "/samples/prompts/brown-heldout.jsonl");

// An AR calibration of the sample model with a tiny budget (2-core CI).
QStringList arCalibration(const QString& prompts, const QString& out) {
  return {QStringLiteral("calibrate"), QStringLiteral("--model"), kModel, QStringLiteral("--source"),
          QStringLiteral("ar"), QStringLiteral("--prompts"), prompts, QStringLiteral("--tokens"), QStringLiteral("48"),
          QStringLiteral("--max-new-tokens"), QStringLiteral("8"), QStringLiteral("--batch"), QStringLiteral("4"),
          QStringLiteral("--out"), out, QStringLiteral("--json")};
}

QStringList warningsOf(const QString& jsonText) {
  QStringList out;
  for (const auto& v : QJsonDocument::fromJson(jsonText.toUtf8()).object().value(QStringLiteral("warnings")).toArray())
    out << v.toString();
  return out;
}

QString sampleRun() {
  const QStringList runs = QDir(kSampleWorkspace).entryList({QStringLiteral("*.sdw.h5")}, QDir::Files, QDir::Name);
  return runs.isEmpty() ? QString() : QDir(kSampleWorkspace).filePath(runs.first());
}

}  // namespace

class TestCli : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  // Every command in the registry (app/cli/command.h): `sdw-cli --help` lists
  // it with its summary, and no other command.
  void helpListsEveryCommand() {
    const auto& commands = sdw::cli::registry();
    QVERIFY(!commands.empty());
    const Result r = cli({QStringLiteral("--help")});
    QCOMPARE(r.code, 0);
    for (const auto& c : commands) {
      const QRegularExpression line(QStringLiteral("^  %1 +%2$").arg(QRegularExpression::escape(qs(c.name)),
                                                                      QRegularExpression::escape(qs(c.summary))),
                                    QRegularExpression::MultilineOption);
      QVERIFY2(line.match(r.out).hasMatch(), c.name.c_str());
    }
    const qsizetype from = r.out.indexOf(QStringLiteral("commands:\n"));
    QVERIFY(from >= 0);
    const QStringList listed = r.out.mid(from).section(QStringLiteral("\n\n"), 0, 0).split(QLatin1Char('\n')).mid(1);
    QCOMPARE(listed.size(), static_cast<qsizetype>(commands.size()));
  }

  // `sdw-cli CMD --help` for every registered command: exit 0, the usage
  // line first, then every option with its value name and help.
  void eachCommandHelpShowsItsOptions_data() {
    QTest::addColumn<QString>("cmd");
    for (const auto& c : sdw::cli::registry()) QTest::newRow(c.name.c_str()) << qs(c.name);
  }
  void eachCommandHelpShowsItsOptions() {
    QFETCH(QString, cmd);
    const auto& commands = sdw::cli::registry();
    const auto c = std::find_if(commands.begin(), commands.end(), [&](const auto& k) { return qs(k.name) == cmd; });
    QVERIFY(c != commands.end());
    const Result r = cli({cmd, QStringLiteral("--help")});
    QCOMPARE(r.code, 0);
    QVERIFY2(r.out.startsWith(QStringLiteral("usage: sdw-cli ") + qs(c->usage) + QLatin1Char('\n')), qPrintable(r.out));
    for (const auto& o : c->options) {
      const QString left =
          QStringLiteral("--") + qs(o.name) + (o.valueName.empty() ? QString() : QLatin1Char(' ') + qs(o.valueName));
      const QRegularExpression line(QStringLiteral("^  %1\\s+%2").arg(QRegularExpression::escape(left),
                                                                     QRegularExpression::escape(qs(o.help))),
                                    QRegularExpression::MultilineOption);
      QVERIFY2(line.match(r.out).hasMatch(), qPrintable(cmd + QStringLiteral(": ") + left));
    }
  }

  void badCommandLines_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("needle");
    QTest::newRow("unknown command") << QStringList{"frobnicate"} << "unknown command";
    QTest::newRow("unknown option") << QStringList{"runs", ".", "--colour"} << "unknown option --colour";
    QTest::newRow("missing argument") << QStringList{"info"} << "missing argument";
    QTest::newRow("extra argument") << QStringList{"info", "a", "b"} << "unexpected argument";
  }
  void badCommandLines() {
    QFETCH(QStringList, args);
    QFETCH(QString, needle);
    const Result r = cli(args);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(needle), qPrintable(r.err));
    QCOMPARE(r.err.trimmed().count(QLatin1Char('\n')), 0);  // one line
  }

  void infoOnSample() {
    const QString run = sampleRun();
    QVERIFY2(!run.isEmpty(), "no sample run file in samples/workspace");
    const Result r = cli({QStringLiteral("info"), run, QStringLiteral("--json")});
    QCOMPARE(r.code, 0);
    const QJsonObject o = QJsonDocument::fromJson(r.out.toUtf8()).object();
    QCOMPARE(o.value(QStringLiteral("schema_version")).toInt(), 1);
    QCOMPARE(o.value(QStringLiteral("status")).toString(), QStringLiteral("complete"));
    const QJsonObject prov = o.value(QStringLiteral("provenance")).toObject();
    QCOMPARE(prov.value(QStringLiteral("tool_name")).toString(), QStringLiteral("SparseDecoding Workbench"));
    QVERIFY(!prov.value(QStringLiteral("host")).toString().isEmpty());
    QVERIFY(!prov.value(QStringLiteral("created_utc")).toString().isEmpty());

    const Result text = cli({QStringLiteral("info"), run});
    QCOMPARE(text.code, 0);
    QVERIFY(text.out.contains(QStringLiteral("status:        complete")));
  }

  void runsOnSampleWorkspace() {
    const Result r = cli({QStringLiteral("runs"), kSampleWorkspace, QStringLiteral("--json")});
    QCOMPARE(r.code, 0);
    const QJsonArray runs = QJsonDocument::fromJson(r.out.toUtf8()).object().value(QStringLiteral("runs")).toArray();
    QVERIFY(runs.size() >= 1);
    for (const auto& v : runs) QVERIFY2(v.toObject().contains(QStringLiteral("summary")), "a sample run is unreadable");
  }

  void badFilesGiveClearErrors_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("needle");
    QTest::newRow("missing") << "missing" << "not found";
    QTest::newRow("empty") << "empty" << "not an HDF5 file";
    QTest::newRow("random bytes") << "random" << "not an HDF5 file";
    QTest::newRow("truncated") << "truncated" << "truncated or corrupt";
  }
  void badFilesGiveClearErrors() {
    QFETCH(QString, kind);
    QFETCH(QString, needle);
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("bad.sdw.h5"));
    if (kind == "empty") {
      QFile f(path);
      QVERIFY(f.open(QIODevice::WriteOnly));
    } else if (kind == "random") {
      QFile f(path);
      QVERIFY(f.open(QIODevice::WriteOnly));
      QByteArray bytes(64 * 1024, '\0');
      QRandomGenerator gen(42);
      for (auto& b : bytes) b = static_cast<char>(gen.bounded(256));
      f.write(bytes);
    } else if (kind == "truncated") {
      QFile src(sampleRun());
      QVERIFY(src.open(QIODevice::ReadOnly));
      const QByteArray all = src.readAll();
      QFile f(path);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(all.left(all.size() / 2));
    }
    const Result r = cli({QStringLiteral("info"), path});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains(needle, Qt::CaseInsensitive), qPrintable(r.err));
    QVERIFY2(r.err.contains(QStringLiteral("bad.sdw.h5")), qPrintable(r.err));
    QCOMPARE(r.err.trimmed().count(QLatin1Char('\n')), 0);

    // The workspace listing survives the bad file and names it.
    const Result list = cli({QStringLiteral("runs"), dir.path(), QStringLiteral("--strict")});
    if (kind == "missing") {
      QCOMPARE(list.code, 0);
    } else {
      QCOMPARE(list.code, 1);
      QVERIFY(list.out.contains(QStringLiteral("invalid")));
    }
  }

  // calibrate --source ar and eval, both with their defaults, decode the same
  // way (read back from the two run files); mixing decodings or leaking the
  // reference's prompts draws a warning in eval, analyze drift and analyze
  // epsilon, and agreeing runs draw none.
  void oneDecodingProtocol() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString ar = dir.filePath(QStringLiteral("calib-ar.sdw.h5"));
    Result r = cli(arCalibration(kCalibPrompts, ar));
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QJsonObject arDecoding =
        QJsonDocument::fromJson(r.out.toUtf8()).object().value(QStringLiteral("decoding")).toObject();
    QCOMPARE(arDecoding.value(QStringLiteral("describe")).toString(), QStringLiteral("sampled, T=1.0, top-k off, top-p 1.0"));
    // The sample checkpoint's generation_config.json says do_sample false: said, not applied.
    QVERIFY(arDecoding.value(QStringLiteral("note")).toString().contains(QStringLiteral("asks for greedy decoding")));

    const QString pruned = dir.filePath(QStringLiteral("pruned-ar"));
    r = cli({QStringLiteral("prune"), QStringLiteral("--model"), kModel, QStringLiteral("--calibration"), ar,
             QStringLiteral("--method"), QStringLiteral("sparsegpt"), QStringLiteral("--pattern"), QStringLiteral("2:4"),
             QStringLiteral("--out"), pruned},
            180000);
    QVERIFY2(r.code == 0, qPrintable(r.err));

    const QStringList evalArgs = {QStringLiteral("eval"),           QStringLiteral("--dense"),  kModel,
                                  QStringLiteral("--models"),       pruned,                     QStringLiteral("--seeds"),
                                  QStringLiteral("0"),              QStringLiteral("--max-new-tokens"), QStringLiteral("4"),
                                  QStringLiteral("--max-prompts"),  QStringLiteral("2"),        QStringLiteral("--windows"),
                                  QStringLiteral("1"),              QStringLiteral("--window"), QStringLiteral("32")};
    const QString eval = dir.filePath(QStringLiteral("eval.sdw.h5"));
    r = cli(evalArgs + QStringList{QStringLiteral("--out"), eval, QStringLiteral("--json")});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QCOMPARE(warningsOf(r.out), QStringList());
    {
      namespace rs = sdw::runstore;
      const auto c = rs::RunReader::open(ar.toStdString());
      const auto e = rs::RunReader::open(eval.toStdString());
      const double temperature = c.readDoubleAttribute("/calibration", "temperature");
      const std::int64_t topK = c.readIntAttribute("/calibration", "sampling_top_k");
      const double topP = c.readDoubleAttribute("/calibration", "sampling_top_p");
      QCOMPARE(e.readDoubleAttribute("/evaluation", "temperature"), temperature);
      QCOMPARE(e.readIntAttribute("/evaluation", "top_k"), topK);
      QCOMPARE(e.readDoubleAttribute("/evaluation", "top_p"), topP);
      QCOMPARE(temperature, sdw::kDefaultDecoding.temperature);
      QCOMPARE(topK, std::int64_t{sdw::kDefaultDecoding.topK});
      QCOMPARE(topP, sdw::kDefaultDecoding.topP);
      QCOMPARE(c.readStringAttribute("/calibration", "decoding"), e.readStringAttribute("/evaluation", "decoding"));
      QVERIFY(e.readStrings("/evaluation/warnings").empty());
    }
    r = cli(evalArgs + QStringList{QStringLiteral("--temperature"), QStringLiteral("0"), QStringLiteral("--json")});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QStringList w = warningsOf(r.out);
    QCOMPARE(w.size(), 1);
    QVERIFY2(w[0].contains(QStringLiteral("decoded sampled, T=1.0, top-k off, top-p 1.0, but this evaluation decodes "
                                          "greedy")),
             qPrintable(w[0]));
    r = cli(evalArgs + QStringList{QStringLiteral("--temperature"), QStringLiteral("0")});
    QVERIFY(r.out.contains(QStringLiteral("warning: pruned-ar was calibrated on calib-ar.sdw.h5")));

    const QStringList driftArgs = {QStringLiteral("analyze"), QStringLiteral("drift"),   QStringLiteral("--dense"),
                                   kModel,                    QStringLiteral("--pruned"), pruned,
                                   QStringLiteral("--prompts"), kHeldoutPrompts,          QStringLiteral("--steps"),
                                   QStringLiteral("3"),       QStringLiteral("--max-prompts"), QStringLiteral("1"),
                                   QStringLiteral("--json")};
    r = cli(driftArgs);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QCOMPARE(warningsOf(r.out), QStringList());
    QCOMPARE(QJsonDocument::fromJson(r.out.toUtf8()).object().value(QStringLiteral("temperature")).toDouble(), 1.0);
    r = cli(driftArgs + QStringList{QStringLiteral("--temperature"), QStringLiteral("0")});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    w = warningsOf(r.out);
    QCOMPARE(w.size(), 1);
    QVERIFY2(w[0].contains(QStringLiteral("but this drift analysis decodes greedy")), qPrintable(w[0]));

    // Epsilon: a held-out reference decoded like the AR run: no warning, the
    // prompt sets stated; a greedy reference: a warning; the AR run's own
    // prompts as the reference: a warning that it is not held out.
    const QString ref = dir.filePath(QStringLiteral("reference.sdw.h5"));
    const QString refGreedy = dir.filePath(QStringLiteral("reference-greedy.sdw.h5"));
    QCOMPARE(cli(arCalibration(kHeldoutPrompts, ref)).code, 0);
    QCOMPARE(cli(arCalibration(kHeldoutPrompts, refGreedy) + QStringList{QStringLiteral("--temperature"), QStringLiteral("0")})
                 .code,
             0);
    const auto epsilon = [&](const QString& reference) {
      return cli({QStringLiteral("analyze"), QStringLiteral("epsilon"), QStringLiteral("--reference"), reference,
                  QStringLiteral("--runs"), ar, QStringLiteral("--k"), QStringLiteral("4"), QStringLiteral("--json")});
    };
    r = epsilon(ref);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QCOMPARE(warningsOf(r.out), QStringList());
    const QJsonArray notes = QJsonDocument::fromJson(r.out.toUtf8()).object().value(QStringLiteral("notes")).toArray();
    QVERIFY(!notes.isEmpty());
    QVERIFY2(notes.last().toString().contains(QStringLiteral("reference reference.sdw.h5 decoded brown-heldout.jsonl; "
                                                             "AR run calib-ar.sdw.h5 decoded brown-calib.jsonl")),
             qPrintable(notes.last().toString()));
    r = epsilon(refGreedy);
    w = warningsOf(r.out);
    QCOMPARE(w.size(), 1);
    QVERIFY2(w[0].contains(QStringLiteral("The AR run calib-ar.sdw.h5 decoded sampled, T=1.0, top-k off, top-p 1.0, but "
                                          "the decode-time reference reference-greedy.sdw.h5 decoded greedy")),
             qPrintable(w[0]));
    r = epsilon(ar);
    w = warningsOf(r.out);
    QCOMPARE(w.size(), 1);
    QVERIFY2(w[0].contains(QStringLiteral("decoded the same prompts file (brown-calib.jsonl)")), qPrintable(w[0]));
  }

  // The decode engine's promise on any machine: prune the sample 2:4 with SparseGPT,
  // then the packed model (our bitmask SpMV over model.sdwsparse) and the dense one
  // with zeros decode the same tokens.
  void sparseAndDenseLinearsDecodeAlike() {
    QTemporaryDir tmp;
    const QString calib = tmp.filePath(QStringLiteral("calib.sdw.h5")), pruned = tmp.filePath(QStringLiteral("p"));
    Result r = cli(arCalibration(kCalibPrompts, calib), 300000);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    r = cli({QStringLiteral("prune"), QStringLiteral("--model"), kModel, QStringLiteral("--calibration"), calib,
             QStringLiteral("--method"), QStringLiteral("sparsegpt"), QStringLiteral("--pattern"), QStringLiteral("2:4"),
             QStringLiteral("--out"), pruned},
            300000);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(QFileInfo::exists(pruned + QStringLiteral("/model.sdwsparse")));
    QJsonObject out[2];
    const char* linears[2] = {"sparse", "dense"};
    for (int i = 0; i < 2; ++i) {
      r = cli({QStringLiteral("generate"), QStringLiteral("--model"), pruned, QStringLiteral("--linear"),
               QString::fromLatin1(linears[i]), QStringLiteral("--prompt"), QStringLiteral("The jury said"),
               QStringLiteral("--max-new-tokens"), QStringLiteral("40"), QStringLiteral("--seed"), QStringLiteral("0"),
               QStringLiteral("--json")});
      QVERIFY2(r.code == 0, qPrintable(r.err));
      out[i] = QJsonDocument::fromJson(r.out.toUtf8()).object();
    }
    QVERIFY2(out[0].value(QStringLiteral("engine")).toString().contains(QStringLiteral("bitmask SpMV 2:4 (42 of 42")),
             qPrintable(out[0].value(QStringLiteral("engine")).toString()));
    QCOMPARE(out[0].value(QStringLiteral("tokens")).toArray().size(), 40);
    QCOMPARE(out[0].value(QStringLiteral("tokens")).toArray(), out[1].value(QStringLiteral("tokens")).toArray());
    // The packed model holds less: no dense copy of a packed projection.
    QVERIFY(out[0].value(QStringLiteral("device_memory_bytes")).toDouble() <
            0.6 * out[1].value(QStringLiteral("device_memory_bytes")).toDouble());
  }

  // A decode grid goes on past a cell that fails: here the sample checkpoint has no packed
  // file, so its sparse cell fails and its dense cell is still measured, written and listed
  // beside the failure; the exit status says that something failed.
  void decodeGridKeepsTheRowsOfACellThatFailed() {
    QTemporaryDir tmp;
    const QString out = tmp.filePath(QStringLiteral("grid.json"));
    const Result r =
        cli({QStringLiteral("bench"), QStringLiteral("decode"), QStringLiteral("--device"), QStringLiteral("cpu"),
             QStringLiteral("--model"), kModel, QStringLiteral("--linear"), QStringLiteral("sparse,dense"),
             QStringLiteral("--batch"), QStringLiteral("1"), QStringLiteral("--context"), QStringLiteral("16"),
             QStringLiteral("--tokens"), QStringLiteral("2"), QStringLiteral("--warmup"), QStringLiteral("1"),
             QStringLiteral("--json"), QStringLiteral("--out"), out},
            300000);
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains(QStringLiteral("1 of 2 engine cells failed")), qPrintable(r.err));
    QVERIFY2(r.err.contains(QStringLiteral("model.sdwsparse: no packed sparse file")), qPrintable(r.err));
    QFile f(out);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject j = QJsonDocument::fromJson(f.readAll()).object();
    const QJsonArray rows = j.value(QStringLiteral("rows")).toArray();
    QCOMPARE(rows.size(), 1);
    QCOMPARE(rows[0].toObject().value(QStringLiteral("linear")).toString(), QStringLiteral("dense"));
    QVERIFY(rows[0].toObject().value(QStringLiteral("tokens_per_second")).toDouble() > 0);
    const QJsonArray failed = j.value(QStringLiteral("failed_cells")).toArray();
    QCOMPARE(failed.size(), 1);
    QCOMPARE(failed[0].toObject().value(QStringLiteral("linear")).toString(), QStringLiteral("sparse"));
    QVERIFY2(failed[0].toObject().value(QStringLiteral("error")).toString().contains(QStringLiteral("model.sdwsparse")),
             qPrintable(failed[0].toObject().value(QStringLiteral("error")).toString()));
    // One cell alone that fails: an error, no file.
    const QString one = tmp.filePath(QStringLiteral("one.json"));
    const Result r1 =
        cli({QStringLiteral("bench"), QStringLiteral("decode"), QStringLiteral("--device"), QStringLiteral("cpu"),
             QStringLiteral("--model"), kModel, QStringLiteral("--linear"), QStringLiteral("sparse"),
             QStringLiteral("--context"), QStringLiteral("16"), QStringLiteral("--tokens"), QStringLiteral("2"),
             QStringLiteral("--json"), QStringLiteral("--out"), one});
    QCOMPARE(r1.code, 1);
    QVERIFY(!QFileInfo::exists(one));
  }

  // A benchmark's JSON records the command that made it: options with their values
  // (a value of 1 included), flags bare.
  void benchJsonRecordsItsCommand() {
    const auto r =
        cli({QStringLiteral("bench"), QStringLiteral("calibrate"), QStringLiteral("--device"), QStringLiteral("cpu"),
             QStringLiteral("--tokens"), QStringLiteral("12"), QStringLiteral("--exact-tokens"), QStringLiteral("4"),
             QStringLiteral("--batch"), QStringLiteral("1"), QStringLiteral("--max-new-tokens"), QStringLiteral("4"),
             QStringLiteral("--json")});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QString command =
        QJsonDocument::fromJson(r.out.toUtf8()).object().value(QStringLiteral("command")).toString();
    QVERIFY2(command.startsWith(QStringLiteral("sdw-cli bench calibrate ")), qPrintable(command));
    for (const char* part : {" --batch 1 ", " --tokens 12 ", " --exact-tokens 4 ", " --device cpu "})
      QVERIFY2((command + QStringLiteral(" ")).contains(QLatin1String(part)), qPrintable(command + " lacks" + part));
    QVERIFY2((command.endsWith(QStringLiteral(" --json")) || command.contains(QStringLiteral(" --json "))) &&
                 !command.contains(QStringLiteral(" --json 1")),
             qPrintable(command + " (a flag stands bare)"));
    // The exact-vs-re-forward agreement per shared input, in the model's order, its largest the headline.
    const QJsonObject o = QJsonDocument::fromJson(r.out.toUtf8()).object();
    const QJsonArray per = o.value(QStringLiteral("exact_vs_reforward_per_input")).toArray();
    QVERIFY2(per.size() >= 4, qPrintable(QString::number(per.size())));
    QVERIFY(per.first().toObject().value(QStringLiteral("input")).toString().contains(QStringLiteral("layers.0.")));
    double worst = -1;
    for (const auto& v : per) worst = std::max(worst, v.toObject().value(QStringLiteral("rel_frobenius")).toDouble(-1));
    QVERIFY(worst >= 0);
    QCOMPARE(worst, o.value(QStringLiteral("exact_vs_reforward_rel_frobenius")).toDouble());
  }

  void deviceReports() {
    const Result r = cli({QStringLiteral("device"), QStringLiteral("--self-test"), QStringLiteral("--json")});
    QCOMPARE(r.code, 0);
    const QJsonObject o = QJsonDocument::fromJson(r.out.toUtf8()).object();
    QVERIFY(o.contains(QStringLiteral("cuda_available")));
    if (!o.value(QStringLiteral("cuda_available")).toBool()) {
      // The reason names every missing piece, in the order that matters.
      const QString reason = o.value(QStringLiteral("reason")).toString();
      QVERIFY(!reason.isEmpty());
      if (!o.value(QStringLiteral("torch_has_cuda")).toBool())
        QVERIFY2(reason.startsWith(QStringLiteral("the LibTorch in this build is CPU-only")), qPrintable(reason));
      if (!o.value(QStringLiteral("kernels_built")).toBool())
        QVERIFY2(reason.contains(QStringLiteral("SDW_CUDA=OFF")) || reason.contains(QStringLiteral("nvcc was not found")),
                 qPrintable(reason));
    } else
      QVERIFY(o.value(QStringLiteral("self_test")).toObject().value(QStringLiteral("passed")).toBool());
  }
};

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
