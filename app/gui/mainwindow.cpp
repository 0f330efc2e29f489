#include "app/gui/mainwindow.h"

#include "app/gui/activationscontroller.h"
#include "app/gui/benchmarkcontroller.h"
#include "app/gui/decodebenchcontroller.h"
#include "app/gui/analysiscontroller.h"
#include "app/gui/calibrationcontroller.h"
#include "app/gui/driftcontroller.h"
#include "app/gui/pruningcontroller.h"
#include "app/gui/studycontroller.h"
#include "app/gui/walkthrough.h"
#include "app/gui/modelcontroller.h"
#include "app/gui/workspace.h"
#include "gpu/device.h"
#include "widgets/benchmarkpanel.h"
#include "widgets/analysispanel.h"
#include "widgets/calibrationpanel.h"
#include "widgets/jobsview.h"
#include "widgets/logview.h"
#include "widgets/modelpanel.h"
#include "widgets/pruningpanel.h"
#include "widgets/runbrowser.h"
#include "widgets/studypage.h"

#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QStatusBar>
#include <QTabWidget>

#include <atomic>
#include <cstring>

namespace sdw::app {

namespace {
std::atomic<widgets::LogView*> gLogView{nullptr};
QtMessageHandler gPreviousHandler = nullptr;

void logHandler(QtMsgType type, const QMessageLogContext& ctx, const QString& msg) {
  if (gPreviousHandler) gPreviousHandler(type, ctx, msg);
  widgets::LogView* view = gLogView.load();
  if (!view) return;
  // Platform-plugin chatter (e.g. the offscreen plugin) is not the user's business.
  if (ctx.category && std::strncmp(ctx.category, "qt.", 3) == 0) return;
  if (msg.contains(QLatin1String("propagateSizeHints"))) return;
  widgets::LogView::Level level = widgets::LogView::Level::Info;
  switch (type) {
    case QtDebugMsg: level = widgets::LogView::Level::Debug; break;
    case QtInfoMsg: level = widgets::LogView::Level::Info; break;
    case QtWarningMsg: level = widgets::LogView::Level::Warning; break;
    case QtCriticalMsg:
    case QtFatalMsg: level = widgets::LogView::Level::Error; break;
  }
  // Messages may come from job threads: hand them to the GUI thread.
  QMetaObject::invokeMethod(view, [view, level, msg] { view->append(level, msg); }, Qt::QueuedConnection);
}
}  // namespace

void installLogHandler(widgets::LogView* view) {
  gLogView.store(view);
  if (!gPreviousHandler) gPreviousHandler = qInstallMessageHandler(logHandler);
}

MainWindow::MainWindow(Settings* settings, QWidget* parent) : QMainWindow(parent), settings_(settings) {
  setWindowTitle(tr("SparseDecoding Workbench"));
  setObjectName(QStringLiteral("mainWindow"));
  resize(1400, 880);
  buildPanels();
  buildDocks();
  buildMenus();
  wireJobs();
  buildControllers();

  deviceLabel_ = new QLabel(QString::fromStdString(gpu::describeDevice(gpu::deviceInfo())), this);
  statusBar()->addPermanentWidget(deviceLabel_);
  statusBar()->showMessage(tr("Ready"), 3000);
  restoreState();
  logInfo(tr("Compute: %1").arg(deviceLabel_->text()));
}

MainWindow::~MainWindow() {
  jobs_.cancelAll();
  jobs_.waitForDone(5000);
  if (gLogView.load() == logView_) gLogView.store(nullptr);
}

void MainWindow::buildPanels() {
  tabs_ = new QTabWidget(this);
  tabs_->setDocumentMode(true);
  modelPanel_ = new widgets::ModelPanel(this);
  tabs_->addTab(modelPanel_, tr("Model"));
  calibrationPanel_ = new widgets::CalibrationPanel(this);
  tabs_->addTab(calibrationPanel_, tr("Calibration"));
  analysisPanel_ = new widgets::AnalysisPanel(this);
  tabs_->addTab(analysisPanel_, tr("Analysis"));
  pruningPanel_ = new widgets::PruningPanel(this);
  tabs_->addTab(pruningPanel_, tr("Pruning"));
  benchmarkPanel_ = new widgets::BenchmarkPanel(this);
  tabs_->addTab(benchmarkPanel_, tr("Benchmark"));
  studyPage_ = new widgets::StudyPage(this);
  tabs_->addTab(studyPage_, tr("Study"));
  setCentralWidget(tabs_);
  connect(tabs_, &QTabWidget::currentChanged, this, [this] {
    if (persist_) settings_->setCurrentPanel(currentPanel());
  });
}

void MainWindow::buildDocks() {
  setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowTabbedDocks);
  browser_ = new widgets::RunBrowser(this);
  auto* runsDock = new QDockWidget(tr("Workspace"), this);
  runsDock->setObjectName(QStringLiteral("workspaceDock"));
  runsDock->setWidget(browser_);
  addDockWidget(Qt::LeftDockWidgetArea, runsDock);

  jobsView_ = new widgets::JobsView(this);
  auto* jobsDock = new QDockWidget(tr("Jobs"), this);
  jobsDock->setObjectName(QStringLiteral("jobsDock"));
  jobsDock->setWidget(jobsView_);
  addDockWidget(Qt::BottomDockWidgetArea, jobsDock);

  logView_ = new widgets::LogView(this);
  auto* logDock = new QDockWidget(tr("Log"), this);
  logDock->setObjectName(QStringLiteral("logDock"));
  logDock->setWidget(logView_);
  addDockWidget(Qt::BottomDockWidgetArea, logDock);
  resizeDocks({runsDock}, {350}, Qt::Horizontal);
  splitDockWidget(jobsDock, logDock, Qt::Horizontal);
  // The panels are what a reader looks at: the bottom docks get a few lines
  // (finished jobs fold away, the log scrolls).
  resizeDocks({jobsDock, logDock}, {130, 130}, Qt::Vertical);

  connect(browser_, &widgets::RunBrowser::openWorkspaceRequested, this, &MainWindow::chooseWorkspace);
  connect(browser_, &widgets::RunBrowser::refreshRequested, this, &MainWindow::rescanWorkspace);
}

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("Open &workspace…"), QKeySequence::Open, this, &MainWindow::chooseWorkspace);
  file->addAction(tr("Open &run file…"), this, &MainWindow::chooseRunFile);
  file->addAction(tr("Open &sample workspace"), this, [this] { openWorkspace(sampleWorkspaceDir()); });
  file->addSeparator();
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

  QMenu* view = menuBar()->addMenu(tr("&View"));
  for (QDockWidget* d : findChildren<QDockWidget*>()) view->addAction(d->toggleViewAction());
  view->addSeparator();
  view->addAction(tr("Clear finished jobs"), this, [this] { jobsView_->clearEnded(); });

  QMenu* jobsMenu = menuBar()->addMenu(tr("&Jobs"));
  jobsMenu->addAction(tr("Cancel all"), this, [this] { jobs_.cancelAll(); });

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("Guided &walkthrough: fixed text vs AR…"), this, [this] { showWalkthrough(this); });
  help->addSeparator();
  help->addAction(tr("&About"), this, [this] {
    QMessageBox::about(this, tr("About"),
                       tr("<b>SparseDecoding Workbench</b> %1<br>Decoding-aware pruning: calibration, "
                          "analysis, pruning and sparse kernels.<br>Compute: %2")
                           .arg(QApplication::applicationVersion(), deviceLabel_->text().toHtmlEscaped()));
  });
}

void MainWindow::wireJobs() {
  connect(&jobs_, &JobManager::started, this, [this](JobId id, const QString& name) {
    jobsView_->addJob(id, name);
    logInfo(tr("job %1 started: %2").arg(id).arg(name));
  });
  connect(&jobs_, &JobManager::progressed, this, [this](const JobUpdate& u) {
    jobsView_->setProgress(u.id, u.stage, u.fraction, u.done, u.total, u.ratePerSecond, u.unit, u.etaSeconds);
  });
  connect(&jobs_, &JobManager::finished, this, [this](JobId id, const QVariant&) {
    jobsView_->endJob(id, widgets::JobsView::End::Finished);
  });
  connect(&jobs_, &JobManager::failed, this, [this](JobId id, const QString& err) {
    jobsView_->endJob(id, widgets::JobsView::End::Failed, err);
    logError(tr("job %1 failed: %2").arg(id).arg(err));
  });
  connect(&jobs_, &JobManager::cancelled, this, [this](JobId id) {
    jobsView_->endJob(id, widgets::JobsView::End::Cancelled);
    logInfo(tr("job %1 cancelled").arg(id));
  });
  connect(jobsView_, &widgets::JobsView::cancelRequested, this, [this](quint64 id) { jobs_.cancel(id); });
}

template <typename Controller, typename Panel>
Controller* MainWindow::addController(Controller* controller, Panel* panel) {
  controller->attach(panel);
  connect(controller, &Controller::info, this, &MainWindow::logInfo);
  connect(controller, &Controller::error, this, &MainWindow::reportError);
  if constexpr (requires { &Controller::runWritten; })
    connect(controller, &Controller::runWritten, this, &MainWindow::rescanWorkspace);
  return controller;
}

void MainWindow::buildControllers() {
  modelController_ = addController(new ModelController(&jobs_, this), modelPanel_);
  // The sample model is what every panel starts from. CPU/float32: it is tiny,
  // and the GPU stays free for the user's own choice.
  modelController_->load(sampleModelDir(), QStringLiteral("cpu"), QStringLiteral("float32"));
  calibrationController_ = addController(new CalibrationController(&jobs_, this), calibrationPanel_);
  analysisController_ = addController(new AnalysisController(&jobs_, this), analysisPanel_);
  benchmarkController_ = addController(new BenchmarkController(&jobs_, this), benchmarkPanel_);
  decodeBenchController_ = addController(new DecodeBenchController(&jobs_, this), benchmarkPanel_->decodeView());
  pruningController_ = addController(new PruningController(&jobs_, this), pruningPanel_);
  driftController_ = addController(new DriftController(&jobs_, this), analysisPanel_);
  activationsController_ = addController(new ActivationsController(&jobs_, this), analysisPanel_);
  studyController_ = addController(new StudyController(&jobs_, this), studyPage_);
  connect(modelController_, &ModelController::modelLoaded, this,
          [this](const widgets::ModelSummary& s) { modelLoaded(s.dir); });
  connect(browser_, &widgets::RunBrowser::runSelected, this, &MainWindow::runSelected);
}

void MainWindow::modelLoaded(const QString& dir) {
  // The model loaded in the Model panel is the one to calibrate, prune,
  // measure the drift of and study by default.
  calibrationPanel_->setModelDir(dir);
  pruningPanel_->setModelDir(dir);
  driftController_->setDenseModel(dir);
  studyController_->setModel(dir);
}

void MainWindow::runSelected(const QString& path) {
  for (const widgets::RunRow& r : browser_->model()->rows()) {
    if (r.path != path) continue;
    // An incomplete calibration is what Resume continues.
    if (r.kind == QLatin1String("calibration") && r.status == QLatin1String("incomplete"))
      calibrationPanel_->setResumePath(path);
    // A pruning record, evaluation or study opens in its panel.
    if (r.status != QLatin1String("complete")) continue;
    if (r.kind == QLatin1String("pruning")) pruningController_->openRecord(path);
    if (r.kind == QLatin1String("evaluation")) pruningController_->openEvaluation(path);
    if (r.kind == QLatin1String("study")) studyController_->open(path);
  }
}

void MainWindow::rescanWorkspace() {
  if (!workspace_.isEmpty()) openWorkspace(workspace_);
}

void MainWindow::restoreState() {
  if (const QByteArray g = settings_->windowGeometry(); !g.isEmpty()) restoreGeometry(g);
  if (const QByteArray s = settings_->windowState(); !s.isEmpty()) QMainWindow::restoreState(s);
  selectPanel(settings_->currentPanel());
}

void MainWindow::closeEvent(QCloseEvent* e) {
  if (persist_) {
    settings_->setWindowGeometry(saveGeometry());
    settings_->setWindowState(saveState());
    settings_->setCurrentPanel(currentPanel());
    settings_->sync();
  }
  jobs_.cancelAll();
  QMainWindow::closeEvent(e);
}

QStringList MainWindow::panelNames() const {
  QStringList names;
  for (int i = 0; i < tabs_->count(); ++i) names << tabs_->tabText(i);
  return names;
}

QString MainWindow::currentPanel() const { return tabs_->tabText(tabs_->currentIndex()); }

bool MainWindow::selectPanel(const QString& name) {
  // "Analysis/Drift": a panel, then one of its inner tabs.
  const QString panel = name.section(QLatin1Char('/'), 0, 0);
  const QString inner = name.section(QLatin1Char('/'), 1);
  const auto indexOf = [](const QTabWidget* tabs, const QString& text) {
    for (int i = 0; i < tabs->count(); ++i)
      if (tabs->tabText(i).compare(text, Qt::CaseInsensitive) == 0) return i;
    return -1;
  };
  const int i = indexOf(tabs_, panel);
  if (i < 0) return false;
  if (!inner.isEmpty()) {
    auto* innerTabs = tabs_->widget(i)->findChild<QTabWidget*>();
    const int j = innerTabs ? indexOf(innerTabs, inner) : -1;
    if (j < 0) return false;
    innerTabs->setCurrentIndex(j);
  }
  tabs_->setCurrentIndex(i);
  return true;
}

JobId MainWindow::openWorkspace(const QString& dir) {
  workspace_ = dir;
  browser_->setWorkspace(dir);
  if (persist_) settings_->setWorkspace(dir);
  modelController_->setWorkspace(dir);
  calibrationController_->setWorkspace(dir);
  calibrationPanel_->setOutputDir(dir);
  analysisPanel_->setWorkspace(dir);
  analysisController_->setWorkspace(dir);
  pruningController_->setWorkspace(dir);
  driftController_->setWorkspace(dir);
  activationsController_->setWorkspace(dir);
  studyController_->setWorkspace(dir);
  return jobs_.start(Job<WorkspaceScan>{
      .name = tr("Scan workspace"),
      .slot = &scan_,
      .context = this,
      .work = [dir](const sdw::ProgressFn& p) { return scanWorkspace(dir, p); },
      .finished =
          [this](const WorkspaceScan& scan) {
            int bad = 0;
            for (const auto& r : scan.rows)
              if (!r.error.isEmpty()) {
                ++bad;
                logError(tr("%1: %2").arg(r.fileName, r.error));
              }
            browser_->setRuns(scan.rows);
            logInfo(tr("workspace %1: %2 run file(s)%3")
                        .arg(scan.dir)
                        .arg(scan.rows.size())
                        .arg(bad ? tr(", %1 unreadable").arg(bad) : QString()));
          },
  });
}

JobId MainWindow::openRunFile(const QString& path) {
  return jobs_.start(Job<widgets::RunRow>{
      .name = tr("Open %1").arg(QFileInfo(path).fileName()),
      .context = this,
      .work = [path](const sdw::ProgressFn&) { return inspectRunRow(path); },
      .finished =
          [this](const widgets::RunRow& row) {
            browser_->showDetails(row);
            browser_->selectPath(row.path);
            if (row.error.isEmpty()) {
              logInfo(tr("opened %1").arg(row.path));
              return;
            }
            lastError_ = row.error;
            reportError(row.error);
            if (errorDialogs_) {
              auto* box = new QMessageBox(QMessageBox::Critical, tr("Cannot open run file"), row.error,
                                          QMessageBox::Ok, this);
              box->setAttribute(Qt::WA_DeleteOnClose);
              box->open();
            }
          },
  });
}

void MainWindow::chooseWorkspace() {
  const QString dir = QFileDialog::getExistingDirectory(this, tr("Open workspace folder"), workspace_);
  if (!dir.isEmpty()) openWorkspace(dir);
}

void MainWindow::chooseRunFile() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Open run file"), workspace_,
                                                    tr("Run files (*.sdw.h5 *.sdw.h5.partial);;All files (*)"));
  if (!path.isEmpty()) openRunFile(path);
}

void MainWindow::logInfo(const QString& m) { logView_->append(widgets::LogView::Level::Info, m); }
void MainWindow::logError(const QString& m) { logView_->append(widgets::LogView::Level::Error, m); }

void MainWindow::reportError(const QString& m) {
  logError(m);
  statusBar()->showMessage(m, 10000);
}

}  // namespace sdw::app
