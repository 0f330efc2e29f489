// sdw-cli end to end: help, exit codes, one-line errors on bad input, and
// reading the sample workspace.

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QtTest>

namespace {

struct Result {
  int code = -1;
  QString out;
  QString err;
};

Result cli(const QStringList& args) {
  QProcess p;
  p.start(QStringLiteral(SDW_BINARY_DIR "/bin/sdw-cli"), args);
  if (!p.waitForFinished(60000)) return {};
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2, QString::fromUtf8(p.readAllStandardOutput()),
          QString::fromUtf8(p.readAllStandardError())};
}

const QString kSampleWorkspace = QStringLiteral(SDW_SOURCE_DIR "/samples/workspace");

QString sampleRun() {
  const QStringList runs = QDir(kSampleWorkspace).entryList({QStringLiteral("*.sdw.h5")}, QDir::Files, QDir::Name);
  return runs.isEmpty() ? QString() : QDir(kSampleWorkspace).filePath(runs.first());
}

}  // namespace

class TestCli : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void helpListsSubcommands() {
    const Result r = cli({QStringLiteral("--help")});
    QCOMPARE(r.code, 0);
    for (const char* c : {"info", "runs", "device"}) QVERIFY2(r.out.contains(QLatin1String("  ") + c), c);
  }

  void eachSubcommandHasHelp_data() {
    QTest::addColumn<QString>("cmd");
    for (const char* c : {"info", "runs", "device"}) QTest::newRow(c) << QString::fromLatin1(c);
  }
  void eachSubcommandHasHelp() {
    QFETCH(QString, cmd);
    const Result r = cli({cmd, QStringLiteral("--help")});
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.startsWith(QStringLiteral("usage: sdw-cli ") + cmd));
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
