#include "widgets/driftplot.h"

#include "widgets/csv.h"

#include <qcustomplot.h>

#include <QTextStream>

#include <algorithm>
#include <cmath>

namespace sdw::widgets {

namespace {

// Model A in the blues, model B in the reds (the fixed-text and AR colours of
// the epsilon plots), further models in greens and purples.
QColor modelColor(int model) {
  static const QColor colors[] = {QColor(0x1f, 0x77, 0xb4), QColor(0xd6, 0x27, 0x28), QColor(0x2c, 0xa0, 0x2c),
                                  QColor(0x94, 0x67, 0xbd)};
  return colors[model % 4];
}

QColor mix(const QColor& a, const QColor& b, double t) {
  return QColor::fromRgbF(static_cast<float>(a.redF() + (b.redF() - a.redF()) * t),
                          static_cast<float>(a.greenF() + (b.greenF() - a.greenF()) * t),
                          static_cast<float>(a.blueF() + (b.blueF() - a.blueF()) * t));
}

// Layer l of L: from a dark shade (first layer) to a light one (last).
QColor layerShade(int model, int layer, int layers) {
  const double t = layers > 1 ? double(layer) / (layers - 1) : 0.5;
  const QColor base = modelColor(model);
  QColor c = t < 0.5 ? mix(base.darker(170), base, t * 2) : mix(base, QColor(Qt::white), (t - 0.5) * 1.1);
  c.setAlpha(210);
  return c;
}

QColor withAlpha(QColor c, int alpha) {
  c.setAlpha(alpha);
  return c;
}


}  // namespace

DriftPlot::DriftPlot(QWidget* parent) : PlotView(parent) {
  QCustomPlot* p = plot();
  p->xAxis->grid()->setVisible(true);
  p->xAxis->grid()->setPen(QPen(QColor(0, 0, 0, 18)));
  p->yAxis->grid()->setSubGridVisible(false);
  p->yAxis->setLabel(tr("‖a_pruned − a_dense‖ / ‖a_dense‖"));
  // The legend in a row above the axes, one row per model: it never hides a curve.
  p->plotLayout()->insertRow(0);
  p->plotLayout()->addElement(0, 0, p->legend);
  p->plotLayout()->setRowStretchFactor(0, 0.001);
  p->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  p->legend->setBorderPen(Qt::NoPen);
  p->legend->setFont(QFont(p->font().family(), 8));
  p->legend->setMargins(QMargins(4, 0, 4, 0));
  p->legend->setVisible(false);
  setCsvProvider([this] { return curvesCsv(); });
  enableHover([this](const QString& name, int index, double key, double value) {
    return hoverText(name, index, key, value);
  });
}

QVector<int> DriftPlot::shownModels() const {
  QVector<int> out;
  const int n = static_cast<int>(data_.models.size());
  if (view_.models == DriftView::Both) {
    for (int m = 0; m < std::min(n, 2); ++m) out << m;
  } else if (view_.models < n) {
    out << view_.models;
  }
  return out;
}

void DriftPlot::clear() {
  data_ = {};
  series_.clear();
  byName_.clear();
  plot()->clearGraphs();
  plot()->legend->setVisible(false);
  requestReplot();
}

void DriftPlot::setData(const DriftData& data, const DriftView& view) {
  data_ = data;
  view_ = view;
  QCustomPlot* p = plot();
  p->clearGraphs();
  series_.clear();
  byName_.clear();

  const double off = stepOffset();
  const int T = data.steps;
  const int L = data.layers;
  QVector<double> keys(T);
  for (int t = 0; t < T; ++t) keys[t] = t + off;
  double top = 0;
  const auto track = [&top](const QVector<double>& v) {
    for (double x : v)
      if (std::isfinite(x)) top = std::max(top, x);
  };
  const auto add = [&](const Series& s, const QString& name) {
    QCPGraph* g = p->addGraph();
    g->setName(name);
    byName_.insert(name, static_cast<int>(series_.size()));
    series_.push_back(s);
    return g;
  };
  const bool oneLayer = view.layer >= 0 && view.layer < L;

  int drawn = 0;
  for (int m : shownModels()) {
    const DriftCurveSet* c = data.curves(m, view.mode);
    if (!c) continue;
    ++drawn;
    const QString who = data.models[m].shortLabel;
    const QColor base = modelColor(m);

    // The band first, so every line draws over it.
    QCPGraph* q1 = add({m, Q1, -1}, tr("%1 · q1").arg(who));
    q1->setPen(QPen(withAlpha(base, 70), 0.8));
    q1->setData(keys, c->q1, true);
    q1->removeFromLegend();
    QCPGraph* q3 = add({m, Q3, -1}, tr("%1 · IQR").arg(who));
    q3->setPen(QPen(withAlpha(base, 70), 0.8));
    q3->setBrush(withAlpha(base, 45));
    q3->setChannelFillGraph(q1);
    q3->setData(keys, c->q3, true);
    track(c->q3);

    if (view.layerCurves)
      for (int l = 0; l < L; ++l) {
        if (oneLayer && l != view.layer) continue;
        QVector<double> v(T);
        for (int t = 0; t < T; ++t) v[t] = c->ratio.value(qsizetype(t) * L + l, std::nan(""));
        QCPGraph* g = add({m, LayerCurve, l}, tr("%1 · layer %2").arg(who).arg(l));
        g->setPen(QPen(layerShade(m, l, L), oneLayer ? 1.6 : 1.0));
        g->setData(keys, v, true);
        track(v);
        if (!oneLayer) g->removeFromLegend();
      }

    QCPGraph* med = add({m, Median, -1}, tr("%1 · median").arg(who));
    med->setPen(QPen(base.darker(115), 2.6));
    med->setData(keys, c->median, true);

    if (oneLayer && view.layer < c->plateau.size() && std::isfinite(c->plateau[view.layer])) {
      QCPGraph* pl = add({m, Plateau, view.layer}, tr("%1 · plateau of layer %2").arg(who).arg(view.layer));
      pl->setPen(QPen(base.darker(140), 1.4, Qt::DotLine));
      const double level = c->plateau[view.layer];
      pl->setData({T / 2 + off, (T - 1) + off}, {level, level}, true);
    }

    // step90 markers, sorted by step (QCPGraph keeps its data sorted by key).
    QVector<QPair<double, double>> pts;
    for (int l = 0; l < L && l < c->step90.size(); ++l) {
      if (oneLayer && l != view.layer) continue;
      const int s = c->step90[l];
      const double v = data.ratio(m, view.mode, s, l);
      if (s >= 0 && std::isfinite(v)) pts.push_back({s + off, v});
    }
    std::sort(pts.begin(), pts.end());
    QVector<double> mk, mv;
    for (const auto& q : pts) {
      mk << q.first;
      mv << q.second;
    }
    QCPGraph* marks = add({m, Step90, -1}, tr("%1 · %2% of plateau").arg(who).arg(std::lround(data.plateauFraction * 100)));
    marks->setLineStyle(QCPGraph::lsNone);
    marks->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDiamond, QPen(base.darker(180), 1.2), base, 9));
    marks->setData(mk, mv, true);
  }

  // One legend row per model.
  if (drawn > 0) {
    p->legend->setWrap(std::max(1, p->legend->itemCount() / drawn));
    p->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, true);
  }

  QCPAxis* x = p->xAxis;
  if (view.logSteps) {
    x->setScaleType(QCPAxis::stLogarithmic);
    QSharedPointer<QCPAxisTickerLog> ticker(new QCPAxisTickerLog);
    ticker->setSubTickCount(8);
    x->setTicker(ticker);
    x->setNumberFormat(QStringLiteral("g"));
    x->setRange(0.9, std::max(T, 1) * 1.1);
  } else {
    x->setScaleType(QCPAxis::stLinear);
    x->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
    x->setNumberFormat(QStringLiteral("g"));
    x->setRange(-0.5, std::max(T - 1, 1) + 0.5);
  }
  x->setLabel(stepAxisLabel());
  p->yAxis->setRange(0, top > 0 ? top * 1.08 : 1);
  p->legend->setVisible(p->graphCount() > 0);
  requestReplot();
}

int DriftPlot::graphIndex(int model, Role role, int layer) const {
  for (int i = 0; i < series_.size(); ++i) {
    const Series& s = series_[i];
    if (s.model == model && s.role == role && (role != LayerCurve && role != Plateau ? true : s.layer == layer))
      return i;
  }
  return -1;
}

QVector<QPointF> DriftPlot::seriesPoints(int graph) const {
  QVector<QPointF> out;
  if (graph < 0 || graph >= plot()->graphCount()) return out;
  const QCPGraph* g = plot()->graph(graph);
  for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it) out << QPointF(it->key, it->value);
  return out;
}

bool DriftPlot::logStepAxis() const { return plot()->xAxis->scaleType() == QCPAxis::stLogarithmic; }

QString DriftPlot::stepAxisLabel() const {
  return view_.logSteps ? tr("decode step + 1  (log scale: step 0 is drawn at 1)") : tr("decode step");
}

QPoint DriftPlot::pixelOf(double key, double value) const {
  return QPointF(plot()->xAxis->coordToPixel(key), plot()->yAxis->coordToPixel(value)).toPoint();
}

QString DriftPlot::hoverText(const QString& name, int, double key, double value) const {
  const auto it = byName_.constFind(name);
  if (it == byName_.constEnd()) return {};
  const Series& s = series_[*it];
  const DriftCurveSet* c = data_.curves(s.model, view_.mode);
  if (!c) return {};
  const QString head = tr("%1, %2").arg(data_.models[s.model].label, driftModeTitle(data_.modes.value(view_.mode)));
  const int step = static_cast<int>(std::lround(key - stepOffset()));
  switch (s.role) {
    case LayerCurve:
      return tr("%1\nlayer %2, decode step %3\nrelative drift %4").arg(head).arg(s.layer).arg(step).arg(formatDrift(value));
    case Median:
    case Q1:
    case Q3:
      return tr("%1\nacross layers, decode step %2\nmedian %3 (IQR %4–%5)")
          .arg(head)
          .arg(step)
          .arg(formatDrift(c->median.value(step, std::nan(""))), formatDrift(c->q1.value(step, std::nan(""))),
               formatDrift(c->q3.value(step, std::nan(""))));
    case Plateau:
      return tr("%1\nlayer %2: plateau %3 (mean over decode steps %4–%5)")
          .arg(head)
          .arg(s.layer)
          .arg(formatDrift(value))
          .arg(data_.steps / 2)
          .arg(data_.steps - 1);
    case Step90: {
      // The layers whose marker sits here (several can share a point).
      QStringList layers;
      double plateau = std::nan("");
      for (int l = 0; l < c->step90.size(); ++l) {
        if (c->step90[l] != step || (view_.layer >= 0 && l != view_.layer)) continue;
        if (data_.ratio(s.model, view_.mode, step, l) != value) continue;
        layers << QString::number(l);
        plateau = c->plateau.value(l, std::nan(""));
      }
      if (layers.isEmpty()) return {};
      return tr("%1\nlayer %2: %3% of the plateau first reached at decode step %4\nrelative drift %5, plateau %6")
          .arg(head, layers.join(QStringLiteral(", ")))
          .arg(std::lround(data_.plateauFraction * 100))
          .arg(step)
          .arg(formatDrift(value), formatDrift(plateau));
    }
  }
  return {};
}

QString DriftPlot::curvesCsv() const {
  QString out;
  QTextStream s(&out);
  s << "model,mode,layer,step,ratio\n";
  const QString mode = data_.modes.value(view_.mode);
  const QVector<int> models = shownModels();
  for (int m : models) {
    const DriftCurveSet* c = data_.curves(m, view_.mode);
    if (!c) continue;
    const QString who = csvField(data_.models[m].label);
    for (int l = 0; l < data_.layers; ++l) {
      if (view_.layer >= 0 && l != view_.layer) continue;
      for (int t = 0; t < data_.steps; ++t)
        s << who << ',' << mode << ',' << l << ',' << t << ',' << csvNumber(data_.ratio(m, view_.mode, t, l)) << '\n';
    }
  }
  for (int m : models) {
    const DriftCurveSet* c = data_.curves(m, view_.mode);
    if (!c) continue;
    const QString who = csvField(data_.models[m].label);
    const std::pair<const char*, const QVector<double>*> rows[] = {{"median", &c->median}, {"q1", &c->q1}, {"q3", &c->q3}};
    for (const auto& [what, values] : rows)
      for (int t = 0; t < data_.steps; ++t)
        s << who << ',' << mode << ',' << what << ',' << t << ',' << csvNumber(values->value(t, std::nan(""))) << '\n';
  }
  return out;
}

}  // namespace sdw::widgets
