#include "widgets/epsilonplots.h"

#include "widgets/csv.h"
#include "widgets/plotview.h"

#include <qcustomplot.h>

#include <QTextStream>

#include <algorithm>
#include <cmath>

namespace sdw::widgets {

namespace {

const QColor kColorC(0x1f, 0x77, 0xb4);    // fixed text
const QColor kColorAR(0xd6, 0x27, 0x28);   // AR decoding
const QColor kColorRef(0x2c, 0x2c, 0x2c);  // decode-time reference

// Order of the projection inputs within a layer.
int typeRank(const QString& type) {
  static const QStringList order = {QStringLiteral("q/k/v"), QStringLiteral("o"), QStringLiteral("gate/up"),
                                    QStringLiteral("down")};
  const int i = static_cast<int>(order.indexOf(type));
  return i < 0 ? static_cast<int>(order.size()) : i;
}

bool finitePositive(double v) { return std::isfinite(v) && v > 0; }


void styleAxes(QCustomPlot* p) {
  p->xAxis->grid()->setVisible(false);
  p->yAxis->grid()->setSubGridVisible(false);
  p->legend->setVisible(true);
  p->legend->setFont(QFont(p->font().family(), 8));
  p->legend->setBrush(QColor(255, 255, 255, 200));
  p->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
}


}  // namespace

// ---------------------------------------------------------------- bars

EpsilonBarsPlot::EpsilonBarsPlot(QWidget* parent) : PlotView(parent) {
  styleAxes(plot());
  // The legend in a row of its own above the axes, so it never hides a bar.
  QCustomPlot* lp = plot();
  lp->plotLayout()->insertRow(0);
  lp->plotLayout()->addElement(0, 0, lp->legend);
  lp->plotLayout()->setRowStretchFactor(0, 0.001);
  lp->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  lp->legend->setBorderPen(Qt::NoPen);
  lp->legend->setMargins(QMargins(4, 0, 4, 0));
  plot()->yAxis->setLabel(tr("eps_k"));
  plot()->xAxis->setLabel(tr("layer  (bars per layer: q/k/v, o, gate/up, down)"));
  setCsvProvider([this] {
    QString out;
    QTextStream s(&out);
    s << "input,layer,type,eps_c,eps_ar,noise_c,noise_ar,noise_reference\n";
    for (const auto& in : data_.inputs)
      s << csvField(in.name) << ',' << in.layer << ',' << csvField(in.type) << ',' << csvNumber(in.epsC) << ','
        << csvNumber(in.epsAR) << ',' << csvNumber(in.noiseC) << ',' << csvNumber(in.noiseAR) << ','
        << csvNumber(in.noiseReference) << '\n';
    return out;
  });
}

void EpsilonBarsPlot::setData(const EpsilonData& data) {
  data_ = data;
  QCustomPlot* p = plot();
  p->clearPlottables();
  qDeleteAll(p->findChildren<QCPBarsGroup*>(Qt::FindDirectChildrenOnly));
  positions_ = QVector<double>(data.inputs.size(), -1.0);
  barInputs_.clear();
  errorBars_ = 0;

  // Layout: each layer takes (types + 1) slots, the last one a gap.
  int types = 0;
  for (const auto& in : data.inputs) types = std::max(types, typeRank(in.type) + 1);
  types = std::max(types, 1);
  int maxLayer = 0;
  for (int i = 0; i < data.inputs.size(); ++i) {
    const auto& in = data.inputs[i];
    positions_[i] = double(std::max(in.layer, 0) * (types + 1) + typeRank(in.type));
    maxLayer = std::max(maxLayer, in.layer);
  }

  auto* group = new QCPBarsGroup(p);
  group->setSpacingType(QCPBarsGroup::stAbsolute);
  group->setSpacing(0);
  struct Series {
    QString name;
    QColor color;
    bool ar;
  };
  QVector<Series> series = {{data.cLabel.isEmpty() ? tr("C") : data.cLabel, kColorC, false}};
  if (data.hasPair || !data.arLabel.isEmpty()) series.push_back({data.arLabel, kColorAR, true});
  for (const Series& s : series) {
    auto* bars = new QCPBars(p->xAxis, p->yAxis);
    bars->setName(tr("eps(%1)").arg(s.name));
    bars->setWidth(series.size() > 1 ? 0.42 : 0.8);
    bars->setPen(Qt::NoPen);
    bars->setBrush(s.color);
    bars->setBarsGroup(group);
    QVector<double> keys, values, noise;
    QVector<int> map;
    bool anyNoise = false;
    for (int i = 0; i < data.inputs.size(); ++i) {
      const double v = s.ar ? data.inputs[i].epsAR : data.inputs[i].epsC;
      if (!std::isfinite(v)) continue;
      keys << positions_[i];
      values << v;
      noise << (s.ar ? data.inputs[i].noiseAR : data.inputs[i].noiseC);
      anyNoise = anyNoise || std::isfinite(noise.back());
      map << i;
    }
    // keys are in forward order, hence sorted
    bars->setData(keys, values, true);
    barInputs_ << map;
    if (anyNoise) {
      // +- the noise floor: how far eps moves between two runs of that process
      // at that budget (NaN: no bar drawn).
      auto* err = new QCPErrorBars(p->xAxis, p->yAxis);
      err->setName(tr("noise floor (%1)").arg(s.name));
      err->removeFromLegend();
      err->setDataPlottable(bars);
      err->setData(noise);
      err->setPen(QPen(s.color.darker(170), 1));
      err->setWhiskerWidth(4);
      err->setSelectable(QCP::stNone);
      ++errorBars_;
    }
  }
  enableHover([this](const QString& name, int index, double, double value) -> QString {
    const int s = name.endsWith(QStringLiteral("(%1)").arg(data_.arLabel)) && !data_.arLabel.isEmpty() ? 1 : 0;
    if (s >= barInputs_.size() || index < 0 || index >= barInputs_[s].size()) return {};
    const auto& in = data_.inputs[barInputs_[s][index]];
    return tr("%1\nlayer %2, %3 (d_in %4, k %5)\n%6 = %7\neps(%8) = %9, eps(%10) = %11")
        .arg(in.name)
        .arg(in.layer)
        .arg(in.type)
        .arg(in.dIn)
        .arg(in.kUsed)
        .arg(name, formatEps(value), data_.cLabel, formatEps(in.epsC), data_.arLabel, formatEps(in.epsAR)) +
           tr("\nnoise floor: %1 %2, %3 %4 (reference %5)")
               .arg(data_.cLabel, formatEps(in.noiseC), data_.arLabel, formatEps(in.noiseAR),
                    formatEps(in.noiseReference));
  });

  // Layer labels at the centre of each layer's bars.
  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  const int step = maxLayer >= 24 ? 4 : (maxLayer >= 12 ? 2 : 1);
  for (int l = 0; l <= maxLayer; l += step) ticker->addTick(l * (types + 1) + (types - 1) / 2.0, QString::number(l));
  p->xAxis->setTicker(ticker);
  p->xAxis->setRange(-1, (maxLayer + 1) * (types + 1) - 1);
  double top = 0;
  for (const auto& in : data.inputs)
    for (const auto& [v, n] : {std::pair{in.epsC, in.noiseC}, std::pair{in.epsAR, in.noiseAR}})
      if (std::isfinite(v)) top = std::max(top, v + (std::isfinite(n) ? n : 0.0));
  p->yAxis->setRange(0, top > 0 ? top * 1.08 : 1);
  p->legend->setVisible(!data.inputs.isEmpty());
  requestReplot();
}

// ---------------------------------------------------------------- scatter

EpsilonScatterPlot::EpsilonScatterPlot(QWidget* parent) : PlotView(parent) {
  styleAxes(plot());
  plot()->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignLeft);
  setCsvProvider([this] { return moduleCsv(); });
  connect(plot(), &QCustomPlot::plottableClick, this,
          [this](QCPAbstractPlottable* pl, int index, QMouseEvent*) {
            if (pl != points_ || index < 0 || index >= pointModules_.size()) return;
            Q_EMIT moduleClicked(pointModules_[index]);
          });
}

QString EpsilonScatterPlot::moduleCsv() const {
  QString out;
  QTextStream s(&out);
  s << "module,layer,input,eps_c,eps_ar,ratio,noise_c,noise_ar,beyond_noise\n";
  for (const auto& m : data_.modules) {
    const QString input = m.input >= 0 && m.input < data_.inputs.size() ? data_.inputs[m.input].name : QString();
    s << csvField(m.module) << ',' << m.layer << ',' << csvField(input) << ',' << csvNumber(m.epsC) << ','
      << csvNumber(m.epsAR) << ',' << csvNumber(m.ratio) << ',' << csvNumber(m.noiseC) << ',' << csvNumber(m.noiseAR)
      << ',' << (m.beyondNoise < 0 ? QString() : QString::number(m.beyondNoise)) << '\n';
  }
  return out;
}

void EpsilonScatterPlot::setData(const EpsilonData& data) {
  data_ = data;
  QCustomPlot* p = plot();
  p->clearGraphs();
  pointModules_.clear();
  const QString c = data.cLabel.isEmpty() ? tr("C") : data.cLabel;
  const QString ar = data.arLabel.isEmpty() ? tr("AR") : data.arLabel;
  p->xAxis->setLabel(tr("eps(%1)").arg(c));
  p->yAxis->setLabel(tr("eps(%1)").arg(ar));

  struct Point {
    double x, y;
    int module;
  };
  QVector<Point> pts;
  bool allPositive = true;
  for (int i = 0; i < data.modules.size(); ++i) {
    const auto& m = data.modules[i];
    if (!std::isfinite(m.epsC) || !std::isfinite(m.epsAR)) continue;
    allPositive = allPositive && m.epsC > 0 && m.epsAR > 0;
    pts.push_back({m.epsC, m.epsAR, i});
  }
  std::stable_sort(pts.begin(), pts.end(), [](const Point& a, const Point& b) { return a.x < b.x; });
  // Log axes only where they help: values over more than a decade or so.
  double minV = 0, maxV = 0;
  for (const Point& q : pts) {
    minV = minV > 0 ? std::min({minV, q.x, q.y}) : std::min(q.x, q.y);
    maxV = std::max({maxV, q.x, q.y});
  }
  log_ = allPositive && !pts.isEmpty() && maxV > 20 * minV;
  setLogAxis(p->xAxis, log_);
  setLogAxis(p->yAxis, log_);

  double lo = 0, hi = 1;
  if (!pts.isEmpty()) {
    lo = hi = pts.front().x;
    for (const Point& q : pts) {
      lo = std::min({lo, q.x, q.y});
      hi = std::max({hi, q.x, q.y});
    }
    if (log_) {
      lo /= 1.4;
      hi *= 1.4;
    } else {
      const double pad = 0.06 * std::max(hi - lo, 1e-12);
      lo = std::min(0.0, lo - pad);
      hi += pad;
    }
  }

  diagonal_ = p->addGraph();
  diagonal_->setName(tr("eps(%1) = eps(%2)").arg(ar, c));
  diagonal_->setPen(QPen(QColor(120, 120, 120), 1, Qt::DashLine));
  QVector<double> dk, dv;
  const int n = 48;  // a straight line on log axes too
  for (int i = 0; i <= n; ++i) {
    const double t = double(i) / n;
    const double v = log_ ? lo * std::pow(hi / lo, t) : lo + (hi - lo) * t;
    dk << v;
    dv << v;
  }
  diagonal_->setData(dk, dv, true);
  diagonal_->setSelectable(QCP::stNone);

  points_ = p->addGraph();
  points_->setName(tr("modules (%1)").arg(pts.size()));
  points_->setLineStyle(QCPGraph::lsNone);
  points_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, kColorC, QColor(31, 119, 180, 90), 7));
  points_->setSelectable(QCP::stSingleData);
  QVector<double> keys, values;
  for (const Point& q : pts) {
    keys << q.x;
    values << q.y;
    pointModules_ << q.module;
  }
  points_->setData(keys, values, true);

  selected_ = p->addGraph();
  selected_->setName(tr("selected"));
  selected_->setLineStyle(QCPGraph::lsNone);
  selected_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(kColorAR, 2), Qt::NoBrush, 13));
  selected_->setSelectable(QCP::stNone);
  selected_->removeFromLegend();

  // Only the points are described; the guide lines are skipped.
  const QString pointsName = points_->name();
  enableHover([this, c, ar, pointsName](const QString& name, int index, double, double) -> QString {
    if (name != pointsName || index < 0 || index >= pointModules_.size()) return {};
    const auto& m = data_.modules[pointModules_[index]];
    const QString beyond = m.beyondNoise < 0   ? tr("no noise floor")
                           : m.beyondNoise ? tr("differ beyond the noise floor")
                                           : tr("within the noise floor");
    return tr("%1\neps(%2) = %3 (noise %4)\neps(%5) = %6 (noise %7)\nratio %8, %9")
        .arg(m.module, c, formatEps(m.epsC), formatEps(m.noiseC), ar, formatEps(m.epsAR), formatEps(m.noiseAR),
             formatEps(m.ratio), beyond);
  });

  p->xAxis->setRange(lo, hi);
  p->yAxis->setRange(lo, hi);
  p->legend->setVisible(false);  // the panel's title names the diagonal; the legend would hide points
  requestReplot();
}

void EpsilonScatterPlot::setSelectedModule(int module) {
  if (!selected_) return;
  selected_->data()->clear();
  if (module >= 0 && module < data_.modules.size()) {
    const auto& m = data_.modules[module];
    if (std::isfinite(m.epsC) && std::isfinite(m.epsAR)) selected_->addData(m.epsC, m.epsAR);
  }
  requestReplot();
}

QPoint EpsilonScatterPlot::pixelOf(int module) const {
  if (module < 0 || module >= data_.modules.size()) return {-1, -1};
  const auto& m = data_.modules[module];
  return QPointF(plot()->xAxis->coordToPixel(m.epsC), plot()->yAxis->coordToPixel(m.epsAR)).toPoint();
}

// ---------------------------------------------------------------- spectra

EpsilonSpectrumPlot::EpsilonSpectrumPlot(QWidget* parent) : PlotView(parent) {
  styleAxes(plot());
  // Above the axes: in a corner, the legend hid the tail of a spectrum.
  placeLegendAbove();
  plot()->xAxis->setLabel(tr("eigenvalue index (descending)"));
  plot()->yAxis->setLabel(tr("eigenvalue"));
  setLogAxis(plot()->yAxis, true);
  enableHover([](const QString& name, int index, double, double value) -> QString {
    return QStringLiteral("%1\nλ_%2 = %3").arg(name).arg(index + 1).arg(value, 0, 'g', 5);
  });
}

void EpsilonSpectrumPlot::clear() {
  plot()->clearGraphs();
  input_.clear();
  plot()->legend->setVisible(false);
  requestReplot();
}

void EpsilonSpectrumPlot::setInput(const EpsilonInputData& input, const QString& cLabel, const QString& arLabel) {
  QCustomPlot* p = plot();
  p->clearGraphs();
  input_ = input.name;
  struct Curve {
    QString name;
    const QVector<double>* values;
    QColor color;
  };
  const QVector<Curve> curves = {{tr("H_D (reference)"), &input.spectrumReference, kColorRef},
                                 {tr("H_%1").arg(cLabel.isEmpty() ? tr("C") : cLabel), &input.spectrumC, kColorC},
                                 {tr("H_%1").arg(arLabel), &input.spectrumAR, kColorAR}};
  double lo = 0, hi = 0;
  int n = 0;
  for (const Curve& c : curves) {
    if (c.values->isEmpty()) continue;
    QCPGraph* g = p->addGraph();
    g->setName(c.name);
    g->setPen(QPen(c.color, 1.6));
    QVector<double> keys(c.values->size());
    for (int i = 0; i < keys.size(); ++i) keys[i] = i + 1;
    g->setData(keys, *c.values, true);
    n = std::max(n, static_cast<int>(keys.size()));
    for (double v : *c.values) {
      if (!finitePositive(v)) continue;
      lo = lo > 0 ? std::min(lo, v) : v;
      hi = std::max(hi, v);
    }
  }
  p->xAxis->setRange(0, std::max(n, 1) + 1);
  if (hi > 0) p->yAxis->setRange(lo / 2, hi * 2);
  p->legend->setVisible(p->graphCount() > 0);
  requestReplot();
}

}  // namespace sdw::widgets
