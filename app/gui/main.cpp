// sdw: the workbench GUI. `sdw --screenshot FILE [--panel NAME] [--size WxH]`
// renders the window offscreen with the sample workspace and writes a PNG.
// `--bench-results FILE.json` shows saved kernel benchmark results in the
// Benchmark panel, `--decode-results FILE.json` saved end-to-end decode
// results in its End-to-end decode tab; a screenshot of either tab without
// one runs a short CPU benchmark first (small shapes; the bench-tiny model),
// so the charts have something to show.

#include "app/gui/benchmarkcontroller.h"
#include "app/gui/decodebenchcontroller.h"
#include "app/gui/mainwindow.h"
#include "app/gui/workspace.h"
#include "core/version.h"
#include "widgets/benchmarkpanel.h"
#include "widgets/jobsview.h"
#include "widgets/logview.h"

#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QIcon>
#include <QPixmap>
#include <QSize>
#include <QStringList>
#include <QTabWidget>
#include <QThread>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

struct Options {
  QString screenshot;
  QString panel;
  QString workspace;
  QString benchResults;
  QString decodeResults;
  QSize size;  // --size; invalid: the default
};

// "1920x1080" -> 1920x1080; an invalid size for anything else.
QSize parseSize(const QString& text) {
  const QStringList parts = text.toLower().split(QLatin1Char('x'));
  if (parts.size() != 2) return {};
  bool okW = false, okH = false;
  const int w = parts[0].trimmed().toInt(&okW);
  const int h = parts[1].trimmed().toInt(&okH);
  if (!okW || !okH || w < 320 || h < 240 || w > 16384 || h > 16384) return {};
  return {w, h};
}

void usage(FILE* out) {
  std::fprintf(out,
               "usage: sdw [--workspace DIR] [--panel NAME] [--bench-results FILE.json]\n"
               "           [--decode-results FILE.json] [--size WxH] [--screenshot FILE.png]\n\n"
               "  --workspace DIR     open this workspace folder (default: the last one, else the sample)\n"
               "  --panel NAME        start on a panel: Model, Calibration, Analysis, Pruning, Benchmark, Study;\n"
               "                      PANEL/TAB for an inner tab, e.g. Analysis/Drift, \"Benchmark/End-to-end decode\"\n"
               "  --bench-results F   show kernel benchmark results (sdw-cli bench kernels --out F) in Benchmark\n"
               "  --decode-results F  show decode benchmark results (sdw-cli bench decode --json --out F) in\n"
               "                      Benchmark/End-to-end decode\n"
               "  --size WxH          window size, e.g. 1920x1080 (default for --screenshot: 1440x900)\n"
               "  --screenshot FILE   render the window offscreen with the sample workspace, write a PNG, exit\n"
               "\nHeadless use: sdw-cli --help\n");
}

bool haveDisplay() {
  const char* platform = std::getenv("QT_QPA_PLATFORM");
  if (platform && *platform) return true;  // the user chose (offscreen, vnc, ...)
  const char* x = std::getenv("DISPLAY");
  const char* w = std::getenv("WAYLAND_DISPLAY");
  return (x && *x) || (w && *w);
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](QString& out) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "sdw: error: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      out = QString::fromLocal8Bit(argv[++i]);
    };
    if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    } else if (a == "--screenshot") value(opt.screenshot);
    else if (a == "--panel") value(opt.panel);
    else if (a == "--workspace") value(opt.workspace);
    else if (a == "--bench-results") value(opt.benchResults);
    else if (a == "--decode-results") value(opt.decodeResults);
    else if (a == "--size") {
      QString text;
      value(text);
      opt.size = parseSize(text);
      if (!opt.size.isValid()) {
        std::fprintf(stderr, "sdw: error: --size wants WIDTHxHEIGHT, e.g. 1920x1080 (got '%s')\n", qPrintable(text));
        return 2;
      }
    } else {
      std::fprintf(stderr, "sdw: error: unknown argument '%s'\n", a.c_str());
      usage(stderr);
      return 2;
    }
  }

  if (!opt.screenshot.isEmpty()) {
    qputenv("QT_QPA_PLATFORM", "offscreen");
  } else if (!haveDisplay()) {
    std::fprintf(stderr,
                 "sdw: no display found (DISPLAY and WAYLAND_DISPLAY are unset).\n"
                 "  Headless, use the command line instead:   build/bin/sdw-cli --help\n"
                 "  or render a picture of the window:        build/bin/sdw --screenshot out.png\n"
                 "  or run under a virtual display:           xvfb-run -a build/bin/sdw\n");
    return 3;
  }

  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("SparseDecoding"));
  QApplication::setApplicationName(QStringLiteral("Workbench"));
  QApplication::setApplicationVersion(QString::fromLatin1(sdw::kToolVersion));
  QApplication::setWindowIcon(QIcon(QStringLiteral(":/sdw/icon.svg")));

  sdw::app::Settings settings;
  sdw::app::MainWindow window(&settings);
  sdw::app::installLogHandler(window.logView());

  const bool shot = !opt.screenshot.isEmpty();
  if (shot) {
    window.setPersistState(false);
    window.setShowErrorDialogs(false);
    // The settled window: finished start-up jobs already folded away.
    window.jobsView()->setFinishedLinger(0);
    if (!opt.size.isValid()) opt.size = QSize(1440, 900);
  }
  if (opt.size.isValid()) window.resize(opt.size);
  QString ws = opt.workspace;
  if (ws.isEmpty() && !shot) ws = settings.workspace();
  if (ws.isEmpty() || !QDir(ws).exists()) ws = sdw::app::sampleWorkspaceDir();
  if (!opt.panel.isEmpty() && !window.selectPanel(opt.panel)) {
    std::fprintf(stderr, "sdw: error: unknown panel '%s' (have: %s)\n", qPrintable(opt.panel),
                 qPrintable(window.panelNames().join(QStringLiteral(", "))));
    return 2;
  }
  window.show();
  window.openWorkspace(ws);
  const bool benchShot = shot && window.currentPanel() == QLatin1String("Benchmark");
  sdw::widgets::BenchmarkPanel* bench = window.benchmarkPanel();
  const bool decodeTab = bench->innerTabs()->currentWidget() == bench->decodeView();
  if (!opt.decodeResults.isEmpty()) {
    window.decodeBenchController()->openResults(opt.decodeResults);
  } else if (benchShot && decodeTab) {
    // A few seconds of the tiny shape on the CPU: the live chart, the bars and the table get data.
    sdw::widgets::DecodeBenchRequest demo;
    demo.configs = {QStringLiteral("bench-tiny")};
    demo.linears = {QStringLiteral("cublas"), QStringLiteral("dense"), QStringLiteral("sparse")};
    demo.patterns = {QStringLiteral("2:4"), QStringLiteral("4:8")};
    demo.batches = {1, 2};
    demo.context = 16;  // batch x context within what the CPU sparse engine takes in one call (64 rows)
    demo.warmup = 5;
    demo.tokens = 40;
    demo.device = QStringLiteral("cpu");
    demo.dtype = QStringLiteral("float32");
    bench->decodeView()->setRequest(demo);
    window.decodeBenchController()->setBandwidthProbeBytes(64ull << 20);
    window.decodeBenchController()->start(demo);
  }
  if (!opt.benchResults.isEmpty()) {
    window.benchmarkController()->openResults(opt.benchResults);
  } else if (benchShot && !decodeTab) {
    // A few seconds of the CPU kernels on small shapes: every chart gets data.
    sdw::widgets::BenchRequest demo;
    demo.settings.batches = {1, 2, 4};
    demo.settings.repeats = 5;
    demo.settings.forceCpu = true;
    demo.customShapes = QStringLiteral("1024x1024,512x1024,2048x1024,1024x2048");
    window.benchmarkPanel()->setRequest(demo);
    window.benchmarkController()->start(demo);
  }

  if (!shot) return app.exec();

  // Let the scan finish and the layout settle, then grab.
  QElapsedTimer t;
  t.start();
  while ((window.jobs()->runningCount() > 0 || t.elapsed() < 300) && t.elapsed() < 20000) {
    QApplication::processEvents(QEventLoop::AllEvents, 50);
    QThread::msleep(10);
  }
  if (benchShot || !opt.benchResults.isEmpty() || !opt.decodeResults.isEmpty()) {  // the charts' coalesced replots
    QElapsedTimer settle;
    settle.start();
    while (settle.elapsed() < 300) QApplication::processEvents(QEventLoop::AllEvents, 50);
  }
  QApplication::processEvents();
  const QPixmap pix = window.grab();
  if (pix.isNull() || !pix.save(opt.screenshot, "PNG")) {
    std::fprintf(stderr, "sdw: error: could not write screenshot %s\n", qPrintable(opt.screenshot));
    return 1;
  }
  std::printf("wrote %s (%dx%d)\n", qPrintable(opt.screenshot), pix.width(), pix.height());
  if (pix.size() != opt.size * pix.devicePixelRatio())
    std::fprintf(stderr, "sdw: note: the window needs more than %dx%d; it was drawn at %dx%d\n", opt.size.width(),
                 opt.size.height(), window.width(), window.height());
  return 0;
}
