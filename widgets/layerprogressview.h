#pragma once
// One cell per decoder layer, filled as a pass over the layers advances:
// layers done, the layer in progress, layers still to come, with a caption
// ("capture: layer 12 of 32"). Used for the live per-layer progress of long
// jobs whose work goes layer by layer (calibration capture and its final
// eigendecomposition or write, pruning). Display only.

#include <QString>
#include <QWidget>

namespace sdw::widgets {

class LayerProgressView : public QWidget {
  Q_OBJECT
 public:
  explicit LayerProgressView(QWidget* parent = nullptr);

  // `done` layers of `layers` finished in the current pass; `label` names the
  // pass. A new pass starts when `done` goes back down.
  void setProgress(int done, int layers, const QString& label);
  // Every layer done (the job completed).
  void setAllDone();
  void reset();

  int layersDone() const { return done_; }
  int layerCount() const { return layers_; }
  int passes() const { return passes_; }  // passes seen since reset()
  QString caption() const;

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* e) override;
  bool event(QEvent* e) override;  // tool tips per cell

 private:
  QRect cellRect(int layer) const;
  int done_ = 0;
  int layers_ = 0;
  int passes_ = 0;
  QString label_;
};

}  // namespace sdw::widgets
