#pragma once
// A legend drawn as a strip of its own above charts that share their series
// (same names, same colours): entries flow left to right and wrap to as many
// lines as the width needs. One strip instead of a legend per chart leaves
// the charts their height; nothing covers data. Display only.

#include <QColor>
#include <QString>
#include <QVector>
#include <QWidget>

namespace sdw::widgets {

class LegendStrip : public QWidget {
  Q_OBJECT
 public:
  struct Entry {
    QString name;
    QColor color;
    bool line = true;    // a line sample, as the charts join points
    bool marker = true;  // a dot, as the charts draw points
    Qt::PenStyle style = Qt::SolidLine;  // the line sample's dash, as the chart draws the line
    // Several colours of one series family (e.g. an engine's shade per batch): short line
    // samples (or dots, without `line`) side by side, in this order, instead of the one
    // sample in `color`.
    QVector<QColor> shades = {};
  };
  // One entry for a family of series that differ along one axis: "NAME · AXIS v1, v2, ..." with
  // a shade per value (in the order given), or the one sample where there is one value.
  static Entry shaded(const QString& name, const QString& axis, const QStringList& values,
                      const QVector<QColor>& colors, bool line, bool marker);

  explicit LegendStrip(QWidget* parent = nullptr);

  void setEntries(const QVector<Entry>& entries);
  const QVector<Entry>& entries() const { return entries_; }
  QStringList names() const;

  bool hasHeightForWidth() const override { return true; }
  int heightForWidth(int width) const override;
  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  // Where each entry goes at this width (its sample and text together).
  QVector<QRect> layoutFor(int width) const;
  int entryWidth(const Entry& e) const;

  QVector<Entry> entries_;
};

}  // namespace sdw::widgets
