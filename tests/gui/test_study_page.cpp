// The Study panel offscreen, driven through its controller: a hand-made
// study result (seed rows summarised by gpu::summariseStudy) becomes the
// table (rows, "mean ± CI" with the Student-t half widths worked out here,
// numeric sorting), the KL and epsilon charts (bars, error bars, the 0.5
// line, legends above the data) and the summary in words; exports; refusals
// of a bad form; the panel in the window at the projector sizes; and a tiny
// study on the CPU through the page's own Start button, cancelled mid-way
// (no partial study file) and resumed by a second Start that reuses the
// finished steps and writes a study run file.

#include "app/gui/mainwindow.h"
#include "app/gui/studycontroller.h"
#include "app/jobmanager.h"
#include "app/settings.h"
#include "core/runstore.h"
#include "gpu/study.h"
#include "widgets/studycellmodel.h"
#include "widgets/studychart.h"
#include "widgets/studydata.h"
#include "widgets/studypage.h"

#include <QAbstractItemModelTester>
#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <memory>

using sdw::app::JobManager;
using sdw::app::StudyController;
using sdw::widgets::StudyCellModel;
using sdw::widgets::StudyPage;

namespace {

// t_{0.975} with 2 degrees of freedom as the engine's table holds it (three
// decimals; exactly 4.30265...).
constexpr double kT2 = 4.303;

// Half width of the 95% interval of three values, by hand.
double halfWidth3(double a, double b, double c) {
  const double m = (a + b + c) / 3;
  const double sd = std::sqrt(((a - m) * (a - m) + (b - m) * (b - m) + (c - m) * (c - m)) / 2);
  return kT2 * sd / std::sqrt(3.0);
}

struct Kl3 {
  const char* source;
  const char* decoding;
  const char* pattern;
  double v[3];
};

// Greedy: AR lower on 2:4 (intervals apart), higher on 50% unstructured.
// Sampled: AR lower on both, apart on 2:4 only.
const Kl3 kKl[] = {
    {"fixed", "greedy", "2:4", {0.40, 0.42, 0.44}},
    {"ar", "greedy", "2:4", {0.30, 0.31, 0.32}},
    {"fixed", "greedy", "unstructured50", {0.20, 0.22, 0.24}},
    {"ar", "greedy", "unstructured50", {0.25, 0.26, 0.27}},
    {"fixed", "sampled", "2:4", {0.60, 0.70, 0.80}},
    {"ar", "sampled", "2:4", {0.30, 0.20, 0.25}},
    {"fixed", "sampled", "unstructured50", {0.50, 0.60, 0.70}},
    {"ar", "sampled", "unstructured50", {0.40, 0.60, 0.50}},
};

sdw::gpu::StudyResult handMadeStudy() {
  sdw::gpu::StudyResult r;
  r.settings.model = "/models/brown-llama";
  r.settings.sources = {sdw::gpu::CalibrationSource::Fixed, sdw::gpu::CalibrationSource::Ar};
  r.settings.decodings = {sdw::gpu::parseStudyDecoding("greedy"), sdw::gpu::parseStudyDecoding("sampled")};
  r.settings.solvers = {sdw::gpu::PruneMethod::SparseGpt};
  r.settings.patterns = {"2:4", "unstructured50"};
  r.settings.seeds = {0, 1, 2};
  r.settings.tokens = 600;
  r.settings.referenceTokens = 400;
  for (int seed = 0; seed < 3; ++seed)
    for (const Kl3& k : kKl) {
      sdw::gpu::StudySeedRow row;
      row.source = k.source;
      row.decoding = k.decoding;
      row.solver = "sparsegpt";
      row.pattern = k.pattern;
      row.seed = static_cast<std::uint64_t>(seed);
      row.kl = k.v[seed];
      row.agreement = 1.0 - k.v[seed];
      row.firstDivergence = 10.0 * (seed + 1);
      row.pplDenseGen = 12.0 + seed;
      row.pplText = 30.0;  // the same for every seed: an interval of width 0
      row.meanRelError = 0.1;
      r.seedRows.push_back(row);
    }
  const double share[2][3] = {{0.6, 0.7, 0.8}, {0.90, 0.92, 0.94}};
  for (int seed = 0; seed < 3; ++seed)
    for (int d = 0; d < 2; ++d) {
      sdw::gpu::StudyEpsilonRow e;
      e.source = "ar";
      e.decoding = d == 0 ? "greedy" : "sampled";
      e.seed = static_cast<std::uint64_t>(seed);
      e.modules = 50;
      e.shareLower = share[d][seed];
      e.lower = static_cast<int>(std::lround(e.shareLower * 50));
      e.medianRatio = 1.1 + 0.1 * seed;
      r.epsilonRows.push_back(e);
    }
  sdw::gpu::summariseStudy(r);
  return r;
}

// The row of the table showing source/decoding/pattern; -1 when none.
int rowOf(const QAbstractItemModel* m, const QString& source, const QString& decoding, const QString& pattern) {
  for (int r = 0; r < m->rowCount(); ++r)
    if (m->index(r, StudyCellModel::Source).data(StudyCellModel::ValueRole).toString() == source &&
        m->index(r, StudyCellModel::Decoding).data(StudyCellModel::ValueRole).toString() == decoding &&
        m->index(r, StudyCellModel::Pattern).data(StudyCellModel::ValueRole).toString() == pattern)
      return r;
  return -1;
}

// N of the progress text "step N of M: ..."; 0 for anything else.
int stepOf(const QString& text) {
  static const QRegularExpression re(QStringLiteral("^step (\\d+) of \\d+"));
  const QRegularExpressionMatch m = re.match(text);
  return m.hasMatch() ? m.captured(1).toInt() : 0;
}

bool anyPartial(const QString& dir) {
  QDirIterator it(dir, {QStringLiteral("*.partial")}, QDir::Files, QDirIterator::Subdirectories);
  return it.hasNext();
}

}  // namespace

class TestStudyPage : public QObject {
  Q_OBJECT
 private:
  QTemporaryDir settingsDir_;
  std::unique_ptr<sdw::app::Settings> settings_;

 private Q_SLOTS:
  void initTestCase() {
    settings_ = std::make_unique<sdw::app::Settings>(settingsDir_.filePath(QStringLiteral("sdw.ini")));
  }

  void tableShowsTheCells() {
    StudyPage page;
    QAbstractItemModelTester tester(page.cellModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    const sdw::widgets::StudyData d = StudyController::toStudyData(handMadeStudy(), QStringLiteral("/tmp/s.sdw.h5"));
    page.setData(d);
    const QAbstractItemModel* m = page.cellModel();
    QCOMPARE(m->rowCount(), 8);
    QCOMPARE(m->columnCount(), int(StudyCellModel::ColumnCount));

    const int r = rowOf(m, QStringLiteral("ar"), QStringLiteral("sampled"), QStringLiteral("2:4"));
    QVERIFY(r >= 0);
    const double h = halfWidth3(0.30, 0.20, 0.25);
    QCOMPARE(m->index(r, StudyCellModel::Kl).data(StudyCellModel::ValueRole).toDouble(), 0.25);
    QVERIFY(std::abs(m->index(r, StudyCellModel::Kl).data(StudyCellModel::CiRole).toDouble() - h) < 1e-9);
    QCOMPARE(m->index(r, StudyCellModel::Kl).data().toString(),
             QStringLiteral("0.2500 ± %1").arg(h, 0, 'f', 4));  // 0.1242
    QCOMPARE(m->index(r, StudyCellModel::Kl).data().toString(), QStringLiteral("0.2500 ± 0.1242"));
    QCOMPARE(m->index(r, StudyCellModel::Agreement).data().toString(), QStringLiteral("0.750 ± 0.124"));
    QCOMPARE(m->index(r, StudyCellModel::FirstDivergence).data().toString(),
             QStringLiteral("20.0 ± %1").arg(halfWidth3(10, 20, 30), 0, 'f', 1));
    QCOMPARE(m->index(r, StudyCellModel::PplText).data().toString(), QStringLiteral("30.00 ± 0.00"));
    QCOMPARE(m->index(r, StudyCellModel::Source).data().toString(), QStringLiteral("AR"));
    QCOMPARE(m->index(r, StudyCellModel::Solver).data().toString(), QStringLiteral("SparseGPT"));
    QCOMPARE(m->index(r, StudyCellModel::Seeds).data().toInt(), 3);
    const int u = rowOf(m, QStringLiteral("fixed"), QStringLiteral("greedy"), QStringLiteral("unstructured50"));
    QCOMPARE(m->index(u, StudyCellModel::Pattern).data().toString(), QStringLiteral("50% unstructured"));
    QCOMPARE(m->index(u, StudyCellModel::Source).data().toString(), QStringLiteral("fixed text"));

    // Numbers sort as numbers: KL ascending puts 0.22 (fixed, greedy, 50%) first, 0.70 last.
    page.table()->sortByColumn(StudyCellModel::Kl, Qt::AscendingOrder);
    const QSortFilterProxyModel* p = page.proxy();
    QCOMPARE(p->index(0, StudyCellModel::Kl).data(StudyCellModel::ValueRole).toDouble(), 0.22);
    QCOMPARE(p->index(7, StudyCellModel::Kl).data(StudyCellModel::ValueRole).toDouble(), 0.70);
    for (int i = 1; i < 8; ++i)
      QVERIFY(p->index(i - 1, StudyCellModel::Kl).data(StudyCellModel::ValueRole).toDouble() <=
              p->index(i, StudyCellModel::Kl).data(StudyCellModel::ValueRole).toDouble());

    // The table's CSV: a header and one line per cell with mean, ci95 and n.
    QTemporaryDir dir;
    const QString csv = dir.filePath(QStringLiteral("cells.csv"));
    QCOMPARE(page.exportTable(csv), QString());
    QFile f(csv);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QStringList lines = QString::fromUtf8(f.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 9);
    QVERIFY(lines[0].startsWith(QStringLiteral("source,decoding,solver,pattern,kl_mean,kl_ci95,kl_n,agreement_mean")));
    const QStringList fields =
        lines.filter(QStringLiteral("ar,sampled,sparsegpt,2:4,")).value(0).split(QLatin1Char(','));
    QCOMPARE(fields.size(), 4 + 6 * 3);
    QVERIFY(std::abs(fields[4].toDouble() - 0.25) < 1e-12);
    QVERIFY(std::abs(fields[5].toDouble() - h) < 1e-9);
    QCOMPARE(fields[6], QStringLiteral("3"));
    QVERIFY(page.titleText().contains(QStringLiteral("s.sdw.h5")));
    QVERIFY2(page.titleText().contains(QStringLiteral("seeds 0, 1, 2")), qPrintable(page.titleText()));
  }

  void chartsShowMeansAndIntervals() {
    StudyPage page;
    page.resize(1200, 800);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    page.setData(StudyController::toStudyData(handMadeStudy(), QStringLiteral("/tmp/s.sdw.h5")));
    QTest::qWait(100);  // layout and the queued replots

    // KL: two groups (SparseGPT 2:4, SparseGPT 50% unstructured), a bar per source and decoding.
    const sdw::widgets::StudyChart* kl = page.klChart();
    QCOMPARE(kl->barCount(), 8);
    QCOMPARE(kl->groupLabels(),
             (QStringList{QStringLiteral("SparseGPT\n2:4"), QStringLiteral("SparseGPT\n50% unstructured")}));
    QCOMPARE(kl->legendNames(), (QStringList{QStringLiteral("fixed text · greedy"), QStringLiteral("AR · greedy"),
                                             QStringLiteral("fixed text · sampled"), QStringLiteral("AR · sampled")}));
    const QVector<double> means = kl->barValues();
    const QVector<double> expectMeans = {0.42, 0.22, 0.31, 0.26, 0.70, 0.60, 0.25, 0.50};
    const QVector<double> errs = kl->errorValues();
    QCOMPARE(means.size(), 8);
    QCOMPARE(errs.size(), 8);
    int i = 0;
    for (const int k : {0, 2, 1, 3, 4, 6, 5, 7}) {  // kKl is source-major within a decoding; the chart series-major
      QVERIFY2(std::abs(means[i] - expectMeans[i]) < 1e-12, qPrintable(QString::number(i)));
      QVERIFY2(std::abs(errs[i] - halfWidth3(kKl[k].v[0], kKl[k].v[1], kKl[k].v[2])) < 1e-9,
               qPrintable(QStringLiteral("%1: %2").arg(i).arg(errs[i])));
      ++i;
    }
    QVERIFY(!kl->hasReferenceLine());
    QVERIFY(!kl->legendRect().isEmpty());
    QVERIFY(!kl->legendRect().intersects(kl->dataRect()));
    // Hover names the bar and its interval.
    const QString tip = kl->hoverTextAt(kl->barPixel(3, 0));
    QVERIFY2(tip.contains(QStringLiteral("AR · sampled")) && tip.contains(QStringLiteral("0.2500 ± 0.1242")),
             qPrintable(tip));

    // Epsilon: the share where AR beats fixed text, per decoding, against 0.5.
    const sdw::widgets::StudyChart* eps = page.epsilonChart();
    QCOMPARE(eps->barCount(), 2);
    QCOMPARE(eps->groupLabels(), (QStringList{QStringLiteral("greedy"), QStringLiteral("sampled")}));
    QCOMPARE(eps->barValues().size(), 2);
    QVERIFY(std::abs(eps->barValues()[0] - 0.7) < 1e-12);
    QVERIFY(std::abs(eps->barValues()[1] - 0.92) < 1e-12);
    QVERIFY(std::abs(eps->errorValues()[0] - halfWidth3(0.6, 0.7, 0.8)) < 1e-9);
    QVERIFY(std::abs(eps->errorValues()[1] - halfWidth3(0.90, 0.92, 0.94)) < 1e-9);
    QVERIFY(eps->hasReferenceLine());
    QCOMPARE(eps->referenceValue(), 0.5);
    QVERIFY(eps->legendNames().contains(QStringLiteral("AR")));
    QVERIFY(!eps->legendRect().intersects(eps->dataRect()));

    // Charts export through PlotView; their CSV is the chart's own rows.
    QTemporaryDir dir;
    QCOMPARE(kl->exportTo(dir.filePath(QStringLiteral("kl.png"))), QString());
    QVERIFY(!QImage(dir.filePath(QStringLiteral("kl.png"))).isNull());
    QCOMPARE(eps->exportTo(dir.filePath(QStringLiteral("eps.csv"))), QString());
    QFile f(dir.filePath(QStringLiteral("eps.csv")));
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QString csv = QString::fromUtf8(f.readAll());
    QVERIFY2(csv.startsWith(QStringLiteral("source,decoding,share_lower_mean")), qPrintable(csv));
    const QStringList row =
        csv.split(QLatin1Char('\n')).filter(QStringLiteral("ar,sampled,")).value(0).split(QLatin1Char(','));
    QCOMPARE(row.size(), 7);
    QVERIFY2(std::abs(row[2].toDouble() - 0.92) < 1e-12, qPrintable(csv));
    QVERIFY2(std::abs(row[3].toDouble() - halfWidth3(0.90, 0.92, 0.94)) < 1e-9, qPrintable(csv));
  }

  void summarySaysItInWords() {
    StudyPage page;
    page.setData(StudyController::toStudyData(handMadeStudy(), QStringLiteral("/tmp/s.sdw.h5")));
    QCOMPARE(page.summaryText(),
             QStringLiteral("greedy: AR lower KL than fixed text in 1 of 2 cells (CIs apart in 1); sampled: AR lower "
                            "KL than fixed text in 2 of 2 cells (CIs apart in 1). eps(AR) below eps(fixed text) on "
                            "70% ± 25% of modules with greedy, 92% ± 5% with sampled."));

    // One seed: no intervals, and the summary says so.
    sdw::gpu::StudyResult one = handMadeStudy();
    std::erase_if(one.seedRows, [](const sdw::gpu::StudySeedRow& r) { return r.seed != 0; });
    std::erase_if(one.epsilonRows, [](const sdw::gpu::StudyEpsilonRow& r) { return r.seed != 0; });
    sdw::gpu::summariseStudy(one);
    page.setData(StudyController::toStudyData(one, QStringLiteral("/tmp/one.sdw.h5")));
    QVERIFY2(page.summaryText().startsWith(QStringLiteral("greedy: AR lower KL than fixed text in 1 of 2 cells (one "
                                                          "seed: no intervals)")),
             qPrintable(page.summaryText()));
    const int r = rowOf(page.cellModel(), QStringLiteral("ar"), QStringLiteral("sampled"), QStringLiteral("2:4"));
    QCOMPARE(page.cellModel()->index(r, StudyCellModel::Kl).data().toString(), QStringLiteral("0.3000"));
    QCOMPARE(page.klChart()->errorValues(), QVector<double>(8, 0.0));
  }

  void badFormsAreRefused_data() {
    QTest::addColumn<QString>("field");
    QTest::addColumn<QString>("needle");
    QTest::newRow("seeds") << "seeds"
                           << "seeds: 'a' is not a number";
    QTest::newRow("no second source") << "ar"
                                      << "choose AR or cross-model";
    QTest::newRow("no output") << "out"
                               << "choose the output file";
  }
  void badFormsAreRefused() {
    QFETCH(QString, field);
    QFETCH(QString, needle);
    JobManager jobs;
    StudyPage page;
    StudyController controller(&jobs);
    controller.attach(&page);
    sdw::widgets::StudyRequest r = StudyController::sampleRequest();
    r.out = QStringLiteral("/tmp/never.sdw.h5");
    if (field == QLatin1String("seeds")) r.seeds = QStringLiteral("0,a");
    if (field == QLatin1String("ar")) r.ar = false;
    if (field == QLatin1String("out")) r.out.clear();
    page.setRequest(r);
    QSignalSpy errors(&controller, &StudyController::error);
    page.startButton()->click();
    QCOMPARE(errors.count(), 1);
    QVERIFY2(page.statusText().contains(needle), qPrintable(page.statusText()));
    QCOMPARE(controller.runJob(), sdw::app::JobId(0));
    QVERIFY(page.startButton()->isEnabled());
  }

  void panelInTheWindow_data() {
    QTest::addColumn<QSize>("size");
    QTest::newRow("1440x900") << QSize(1440, 900);
    QTest::newRow("1920x1080") << QSize(1920, 1080);
  }
  void panelInTheWindow() {
    QFETCH(QSize, size);
    sdw::app::MainWindow w(settings_.get());
    w.setPersistState(false);
    w.setShowErrorDialogs(false);
    QCOMPARE(w.panelNames().last(), QStringLiteral("Study"));
    QCOMPARE(w.panelNames().indexOf(QStringLiteral("Study")), w.panelNames().indexOf(QStringLiteral("Benchmark")) + 1);
    QTemporaryDir ws;
    w.openWorkspace(ws.path());
    w.resize(size);
    QVERIFY(w.selectPanel(QStringLiteral("Study")));
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.jobs()->waitForDone(30000));
    QTest::qWait(200);
    QCOMPARE(w.size(), size);  // nothing on the page needs more than the window
    StudyPage* page = w.studyPage();
    QVERIFY(page->isVisible());
    // Every control of the form is on the page, none cut off.
    for (QWidget* c : page->findChildren<QWidget*>()) {
      if (!c->isVisible() || !(qobject_cast<QPushButton*>(c) || qobject_cast<QLineEdit*>(c))) continue;
      const QRect r(c->mapTo(page, QPoint(0, 0)), c->size());
      QVERIFY2(page->rect().contains(r), qPrintable(c->objectName()));
    }
    // The more settings open below the form without growing the window either.
    page->setMoreSettingsVisible(true);
    QTest::qWait(100);
    QCOMPARE(w.size(), size);
    for (QWidget* c : page->findChildren<QWidget*>()) {
      if (!c->isVisible() || !(qobject_cast<QPushButton*>(c) || qobject_cast<QLineEdit*>(c))) continue;
      const QRect r(c->mapTo(page, QPoint(0, 0)), c->size());
      QVERIFY2(page->rect().contains(r), qPrintable(c->objectName()));
    }
    QVERIFY(page->findChild<QLineEdit*>(QStringLiteral("studyHeldoutText"))->isVisible());
    page->setMoreSettingsVisible(false);
    if (QFileInfo::exists(StudyController::sampleStudy())) {
      QTRY_VERIFY_WITH_TIMEOUT(!page->data().isEmpty(), 10000);
      QVERIFY(page->klChart()->barCount() > 0);
    } else {
      QVERIFY2(page->emptyText().contains(QStringLiteral("sdw-cli study")), qPrintable(page->emptyText()));
    }
    // The workspace suggests the output; the model follows the Model panel.
    QCOMPARE(page->output(), QDir(ws.path()).filePath(QStringLiteral("study.sdw.h5")));
    QVERIFY(!page->request().model.isEmpty());
  }

  void runsCancelsAndResumesATinyStudy() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString out = dir.filePath(QStringLiteral("tiny.sdw.h5"));
    JobManager jobs;
    jobs.setProgressInterval(0);
    StudyPage page;
    StudyController controller(&jobs);
    controller.attach(&page);
    controller.setWorkspace(dir.path());
    QCOMPARE(page.output(), dir.filePath(QStringLiteral("study.sdw.h5")));

    sdw::widgets::StudyRequest r = StudyController::sampleRequest();
    r.out = out;
    r.decodings = {QStringLiteral("greedy"), QStringLiteral("sampled")};
    r.solvers = {QStringLiteral("sparsegpt")};
    r.patterns = {QStringLiteral("2:4")};
    r.seeds = QStringLiteral("0,1");
    r.tokens = 600;
    r.referenceTokens = 400;
    r.maxNewTokens = 32;
    r.evalMaxNewTokens = 8;
    r.evalPrompts = 4;
    r.evalWindows = 2;
    r.epsilonK = 16;
    r.device = QStringLiteral("cpu");
    page.setRequest(r);
    QCOMPARE(page.request().seeds, QStringLiteral("0,1"));
    QCOMPARE(page.request().evalPrompts, 4);
    QVERIFY(page.startButton()->toolTip().contains(out + QStringLiteral(".work")));

    // Start, then cancel once two steps are done.
    QSignalSpy progress(&controller, &StudyController::jobProgress);
    QVERIFY(page.startButton()->isEnabled());
    page.startButton()->click();
    QVERIFY(controller.runJob() != 0);
    QVERIFY(page.isBusy());
    QVERIFY(!page.startButton()->isEnabled());
    const int steps = sdw::gpu::studySteps(StudyController::toSettings(r));
    QCOMPARE(steps, 24);
    QTRY_VERIFY_WITH_TIMEOUT(stepOf(page.progressText()) >= 3, 60000);
    QVERIFY2(page.progressText().contains(QStringLiteral(" of 24: ")), qPrintable(page.progressText()));
    page.cancelButton()->click();
    QTRY_VERIFY_WITH_TIMEOUT(!page.isBusy(), 60000);
    QCOMPARE(controller.runJob(), sdw::app::JobId(0));
    QVERIFY2(page.statusText().contains(QStringLiteral("cancelled")), qPrintable(page.statusText()));
    QVERIFY2(page.statusText().contains(out + QStringLiteral(".work")), qPrintable(page.statusText()));
    QVERIFY(!QFileInfo::exists(out));
    QVERIFY(!QFileInfo::exists(out + QStringLiteral(".partial")));
    QVERIFY(!anyPartial(dir.path()));
    QVERIFY(QFileInfo::exists(out + QStringLiteral(".work/calib-fixed-s0.sdw.h5")));

    // The same output again: the finished steps are reused and the study is written.
    page.startButton()->click();
    QVERIFY(page.isBusy());
    QTRY_VERIFY_WITH_TIMEOUT(!page.isBusy(), 120000);
    QVERIFY2(!page.statusText().contains(QStringLiteral("failed")), qPrintable(page.statusText()));
    QVERIFY(QFileInfo::exists(out));
    QVERIFY(!anyPartial(dir.path()));
    QCOMPARE(QString::fromStdString(sdw::runstore::RunReader::open(out.toStdString()).kind()), QStringLiteral("study"));
    QVERIFY2(page.data().stepsReused >= 2, qPrintable(QString::number(page.data().stepsReused)));
    QVERIFY2(page.statusText().contains(QStringLiteral("steps reused")), qPrintable(page.statusText()));
    QCOMPARE(page.data().path, out);
    QCOMPARE(page.cellModel()->rowCount(), 4);  // fixed, AR x greedy, sampled
    QVERIFY(rowOf(page.cellModel(), QStringLiteral("ar"), QStringLiteral("sampled"), QStringLiteral("2:4")) >= 0);
    for (int row = 0; row < 4; ++row) {
      QVERIFY(
          std::isfinite(page.cellModel()->index(row, StudyCellModel::Kl).data(StudyCellModel::ValueRole).toDouble()));
      QCOMPARE(page.cellModel()->index(row, StudyCellModel::Seeds).data().toInt(), 2);
    }
    QCOMPARE(page.klChart()->barCount(), 4);
    QCOMPARE(page.epsilonChart()->barCount(), 2);
    QVERIFY2(page.summaryText().startsWith(QStringLiteral("greedy: AR lower KL than fixed text in ")),
             qPrintable(page.summaryText()));
    // What the page shows is what the file holds.
    const sdw::gpu::StudyResult back = sdw::gpu::readStudy(out.toStdString());
    QCOMPARE(back.cells.size(), std::size_t(4));
    for (const auto& c : back.cells) {
      const int row = rowOf(page.cellModel(), QString::fromStdString(c.source), QString::fromStdString(c.decoding),
                            QString::fromStdString(c.pattern));
      QVERIFY(row >= 0);
      QCOMPARE(page.cellModel()->index(row, StudyCellModel::Kl).data(StudyCellModel::ValueRole).toDouble(), c.kl.mean);
    }
    QVERIFY(progress.count() > 2);
  }
};

QTEST_MAIN(TestStudyPage)
#include "test_study_page.moc"
