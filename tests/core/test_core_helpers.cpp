// Small core helpers with one home each: humanBytes (core/format.h), median
// (core/stats.h), secondsSince (core/timing.h) and mergeStopIds
// (core/decoding.h).

#include "core/decoding.h"
#include "core/format.h"
#include "core/paths.h"
#include "core/stats.h"
#include "core/timing.h"

#include <QtTest/QtTest>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <thread>
#include <vector>

class TestCoreHelpers : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void humanBytes_data() {
    QTest::addColumn<qulonglong>("bytes");
    QTest::addColumn<QString>("text");
    QTest::newRow("zero") << 0ull << "0 B";
    QTest::newRow("below 1 KiB") << 1023ull << "1023 B";
    QTest::newRow("1 KiB") << 1024ull << "1.0 KiB";
    QTest::newRow("1.5 KiB") << 1536ull << "1.5 KiB";
    QTest::newRow("64 MiB") << (64ull << 20) << "64.0 MiB";
    QTest::newRow("binary, not decimal") << 1'000'000'000ull << "953.7 MiB";
    QTest::newRow("16 GiB") << (16ull << 30) << "16.0 GiB";
    QTest::newRow("max") << std::numeric_limits<qulonglong>::max() << "16.0 EiB";
  }
  void humanBytes() {
    QFETCH(qulonglong, bytes);
    QFETCH(QString, text);
    QCOMPARE(QString::fromStdString(sdw::humanBytes(bytes)), text);
  }

  void median() {
    using sdw::stats::median;
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    QCOMPARE(median(std::vector<double>{3.0, 1.0, 2.0}), 2.0);
    QCOMPARE(median(std::vector<double>{4.0, 1.0, 3.0, 2.0}), 2.5);
    QCOMPARE(median(std::vector<double>{nan, 5.0, nan}), 5.0);  // NaN left out
    QCOMPARE(median(std::vector<double>{1.0, inf, inf}), inf);
    QVERIFY(std::isnan(median(std::vector<double>{})));
    QVERIFY(std::isnan(median(std::vector<double>{nan})));
    QCOMPARE(median(std::vector<double>{}, 0.0), 0.0);
  }

  void secondsSince() {
    const auto t0 = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const double s = sdw::secondsSince(t0);
    QVERIFY2(s >= 0.019 && s < 5.0, qPrintable(QString::number(s)));
  }

  void mergeStopIds() {
    const std::vector<std::int32_t> config{2, 7}, generation{7, 9, 2};
    QCOMPARE(sdw::mergeStopIds({9, 1}, config, generation), (std::vector<std::int32_t>{1, 2, 7, 9}));
    QCOMPARE(sdw::mergeStopIds({}, {}, {}), std::vector<std::int32_t>{});
    QCOMPARE(sdw::mergeStopIds({5, 5}, {}, {}), std::vector<std::int32_t>{5});
  }

  // Run files record paths inside the working directory relative to it, and
  // find them again from the working directory or from above the run file.
  void recordedPaths() {
    namespace fs = std::filesystem;
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const fs::path root = fs::path(tmp.path().toStdString());
    fs::create_directories(root / "repo/samples/model/m");
    fs::create_directories(root / "repo/samples/workspace");
    fs::create_directories(root / "elsewhere");
    std::ofstream(root / "repo/samples/model/m/config.json") << "{}";
    const fs::path saved = fs::current_path();
    fs::current_path(root / "repo");
    QCOMPARE(sdw::recordedPath(root / "repo/samples/model/m"), std::string("samples/model/m"));
    QCOMPARE(sdw::recordedPath("samples/./model/m"), std::string("samples/model/m"));
    QCOMPARE(sdw::recordedPath(root / "elsewhere"), (root / "elsewhere").lexically_normal().string());
    QCOMPARE(sdw::recordedPath(""), std::string());
    QCOMPARE(sdw::resolveRecordedPath("samples/model/m"), fs::path("samples/model/m"));
    // From another working directory: found above the run file.
    fs::current_path(root / "elsewhere");
    const fs::path run = root / "repo/samples/workspace/x.sdw.h5";
    QCOMPARE(sdw::resolveRecordedPath("samples/model/m", run), (root / "repo/samples/model/m").lexically_normal());
    QCOMPARE(sdw::resolveRecordedPath("samples/model/none", run), fs::path("samples/model/none"));
    QCOMPARE(sdw::resolveRecordedPath("/abs/path", run), fs::path("/abs/path"));
    fs::current_path(saved);
  }
};

QTEST_GUILESS_MAIN(TestCoreHelpers)
#include "test_core_helpers.moc"
