#pragma once
// Per-layer view of a pruning: one bar per decoder layer, the share of the
// layer's projections solved (left axis, %), the layer being worked on
// highlighted with what it is doing ("solving", "re-capturing"), and the
// mean relative output error of the layer's solved modules as points on the
// right axis. It fills live from finished modules, or at once from an opened
// record. Display only; replots are coalesced (PlotView).

#include "widgets/plotview.h"
#include "widgets/prunedata.h"

class QCPBars;
class QCPGraph;
class QCPItemText;

namespace sdw::widgets {

class PruneLayerChart : public PlotView {
  Q_OBJECT
 public:
  explicit PruneLayerChart(QWidget* parent = nullptr);

  // A new pruning: modulesPerLayer[l] projections to solve in layer l.
  void reset(const QVector<int>& modulesPerLayer);
  // One module of `layer` finished with this relative output error.
  void addModule(int layer, double relError);
  // The layer worked on now and its stage; layer < 0 clears the highlight.
  void setCurrent(int layer, const QString& stage);
  // A finished pruning (an opened record): every layer complete.
  void showModules(const QVector<PruneModuleData>& rows);

  int layerCount() const { return static_cast<int>(total_.size()); }
  int modulesDone(int layer) const;
  int modulesInLayer(int layer) const;
  int currentLayer() const { return current_; }
  QString currentStage() const { return stage_; }
  int layersComplete() const;

 private:
  void redraw();

  QVector<int> total_, done_;
  QVector<double> errSum_;
  int current_ = -1;
  QString stage_;
  QCPBars* doneBars_ = nullptr;
  QCPBars* currentBar_ = nullptr;
  QCPGraph* error_ = nullptr;
  QCPItemText* label_ = nullptr;
  QCPItemText* hint_ = nullptr;
};

}  // namespace sdw::widgets
