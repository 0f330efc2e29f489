// Disk full and read-only folders: sdw-cli calibrate, prune and the
// compressed-tensors export writing into a small tmpfs and into a read-only
// one (mounted in a private user and mount namespace: `unshare -Urm`, no
// privileges needed where unprivileged user namespaces are allowed; skipped
// with the reason otherwise). Each must exit 1 with a clear one-line error
// naming the path (read-only, or not enough space, or disk full) and leave
// nothing behind. The disk also fills up *while* prune works (a filler takes
// the free space after the space check): then the write fails as "disk full"
// and the half-written .partial folder is removed.
// Label: app.

#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

namespace {

const QString kCli = QStringLiteral(SDW_BINARY_DIR "/bin/sdw-cli");
const QString kModel = QStringLiteral(SDW_SOURCE_DIR "/samples/model/brown-llama");
const QString kCorpus = QStringLiteral(SDW_SOURCE_DIR "/samples/corpus/brown-calib.txt");

struct Outcome {
  int rc = -1;
  QString error;     // the command's last stderr line
  QString leftover;  // what the target folder holds afterwards ("" = nothing)
};

}  // namespace

class TestDiskLimits : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  QString calib_, pruned_;

  // Runs `command` (a shell line using $CLI, $M, $FS) in a namespace where
  // $FS is a fresh tmpfs of `sizeKiB` (read-only when `readOnly`), then lists $FS.
  Outcome run(const QString& command, int sizeKiB, bool readOnly) {
    const QString fs = tmp_.filePath(QStringLiteral("fs"));
    QDir().mkpath(fs);
    const QString script = QStringLiteral(
                               "set -u\n"
                               "mount -t tmpfs -o %1size=%2k tmpfs \"$FS\" || exit 97\n"
                               "%3\n"
                               "echo \"RC=$rc\"\n"
                               "echo \"LEFT=$(ls -A \"$FS\" | tr '\\n' ' ')\"\n")
                               .arg(readOnly ? QStringLiteral("ro,") : QString())
                               .arg(sizeKiB)
                               .arg(command);
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("CLI"), kCli);
    env.insert(QStringLiteral("M"), kModel);
    env.insert(QStringLiteral("FS"), fs);
    env.insert(QStringLiteral("CORPUS"), kCorpus);
    env.insert(QStringLiteral("CALIB"), calib_);
    env.insert(QStringLiteral("PRUNED"), pruned_);
    p.setProcessEnvironment(env);
    p.start(QStringLiteral("unshare"), {QStringLiteral("-Urm"), QStringLiteral("sh"), QStringLiteral("-c"), script});
    Outcome o;
    if (!p.waitForFinished(300000)) return o;
    const QString out = QString::fromUtf8(p.readAllStandardOutput());
    const QStringList errLines = QString::fromUtf8(p.readAllStandardError()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    for (const QString& line : out.split(QLatin1Char('\n'))) {
      if (line.startsWith(QLatin1String("RC="))) o.rc = line.mid(3).toInt();
      if (line.startsWith(QLatin1String("LEFT="))) o.leftover = line.mid(5).trimmed();
    }
    // The error line: the last one naming the command (progress lines come before it).
    for (const QString& l : errLines)
      if (l.contains(QLatin1String("sdw-cli"))) o.error = l.trimmed();
    return o;
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    QProcess probe;
    probe.start(QStringLiteral("unshare"),
                {QStringLiteral("-Urm"), QStringLiteral("sh"), QStringLiteral("-c"),
                 QStringLiteral("mount -t tmpfs -o size=64k tmpfs \"%1\"").arg(tmp_.path())});
    if (!probe.waitForFinished(30000) || probe.exitStatus() != QProcess::NormalExit || probe.exitCode() != 0)
      QSKIP("needs unprivileged user and mount namespaces (unshare -Urm) to mount a small and a read-only tmpfs");
    calib_ = tmp_.filePath(QStringLiteral("calib.sdw.h5"));
    pruned_ = tmp_.filePath(QStringLiteral("pruned"));
    QProcess c;
    c.start(kCli, {QStringLiteral("calibrate"), QStringLiteral("--model"), kModel, QStringLiteral("--source"),
                   QStringLiteral("fixed"), QStringLiteral("--corpus"), kCorpus, QStringLiteral("--tokens"),
                   QStringLiteral("512"), QStringLiteral("--out"), calib_});
    QVERIFY(c.waitForFinished(300000));
    QCOMPARE(c.exitCode(), 0);
    QProcess p;
    p.start(kCli, {QStringLiteral("prune"), QStringLiteral("--model"), kModel, QStringLiteral("--calibration"), calib_,
                   QStringLiteral("--method"), QStringLiteral("wanda"), QStringLiteral("--pattern"),
                   QStringLiteral("2:4"), QStringLiteral("--out"), pruned_});
    QVERIFY(p.waitForFinished(300000));
    QCOMPARE(p.exitCode(), 0);
  }

  void refusedBeforeWriting_data() {
    QTest::addColumn<QString>("command");
    QTest::addColumn<bool>("readOnly");
    QTest::addColumn<QString>("expected");
    const QString calibrate = QStringLiteral(
        "\"$CLI\" calibrate --model \"$M\" --source fixed --corpus \"$CORPUS\" --tokens 512 --out \"$FS/c.sdw.h5\"");
    const QString prune = QStringLiteral(
        "\"$CLI\" prune --model \"$M\" --calibration \"$CALIB\" --method wanda --pattern 2:4 --out \"$FS/p\"");
    const QString exportCt = QStringLiteral("\"$CLI\" export compressed-tensors --model \"$PRUNED\" --out \"$FS/e\"");
    for (const bool ro : {false, true}) {
      const QString why = ro ? QStringLiteral("read-only file system") : QStringLiteral("not enough disk space");
      const char* tag = ro ? "read-only" : "small";
      QTest::newRow(qPrintable(QStringLiteral("calibrate, %1").arg(QLatin1String(tag)))) << calibrate << ro << why;
      QTest::newRow(qPrintable(QStringLiteral("prune, %1").arg(QLatin1String(tag)))) << prune << ro << why;
      QTest::newRow(qPrintable(QStringLiteral("export, %1").arg(QLatin1String(tag)))) << exportCt << ro << why;
    }
  }

  void refusedBeforeWriting() {
    QFETCH(QString, command);
    QFETCH(bool, readOnly);
    QFETCH(QString, expected);
    const Outcome o = run(QStringLiteral("rc=0; %1 >/dev/null 2>\"$FS/../err.txt\" || rc=$?\n"
                                         "tail -n 1 \"$FS/../err.txt\" >&2")
                              .arg(command),
                          4096, readOnly);
    QVERIFY2(o.rc != 97, "mounting the tmpfs failed");
    QCOMPARE(o.rc, 1);
    QVERIFY2(o.error.contains(expected), qPrintable(o.error));
    QVERIFY2(o.error.contains(tmp_.filePath(QStringLiteral("fs"))), qPrintable(o.error));  // names the path
    QVERIFY2(o.leftover.isEmpty(), qPrintable(o.leftover));
  }

  // The space check passes, then a filler takes what is free while the
  // command solves: the write itself meets ENOSPC.
  void diskFillsWhileWriting_data() {
    QTest::addColumn<QString>("command");
    QTest::addColumn<int>("sizeKiB");
    QTest::newRow("prune") << QStringLiteral(
                                  "\"$CLI\" prune --model \"$M\" --calibration \"$CALIB\" --method sparsegpt "
                                  "--pattern 2:4 --out \"$FS/p\"")
                           << 48 * 1024;
  }

  void diskFillsWhileWriting() {
    QFETCH(QString, command);
    QFETCH(int, sizeKiB);
    // The command in the background; once it is past its space check (its
    // first progress line appears: it is solving), a filler takes all but 256 KiB.
    const QString line = QStringLiteral(
                             "rm -f \"$FS/../err.txt\"\n"
                             "( %1 ) >/dev/null 2>\"$FS/../err.txt\" & pid=$!\n"
                             "while [ ! -s \"$FS/../err.txt\" ] && kill -0 $pid 2>/dev/null; do sleep 0.02; done\n"
                             "avail=$(df -k --output=avail \"$FS\" | tail -n 1)\n"
                             "dd if=/dev/zero of=\"$FS/filler\" bs=1k count=$((avail - 256)) 2>/dev/null\n"
                             "rc=0; wait $pid || rc=$?\n"
                             "rm -f \"$FS/filler\"\n"
                             "tail -n 1 \"$FS/../err.txt\" >&2")
                             .arg(command);
    const Outcome o = run(line, sizeKiB, false);
    QVERIFY2(o.rc != 97, "mounting the tmpfs failed");
    QCOMPARE(o.rc, 1);
    QVERIFY2(o.error.contains(QLatin1String("disk full")), qPrintable(o.error));
    QVERIFY2(o.error.contains(tmp_.filePath(QStringLiteral("fs"))), qPrintable(o.error));
    qInfo("%s", qPrintable(o.error));
    QVERIFY2(o.leftover.isEmpty(), qPrintable(o.leftover));
  }
};

QTEST_GUILESS_MAIN(TestDiskLimits)
#include "test_disk_limits.moc"
