#pragma once
// The jobs dock: one row per job with a progress bar, rate, ETA and a cancel
// button. Display only: it is told about jobs and asks for cancellation.

#include <QHash>
#include <QWidget>

class QGridLayout;
class QLabel;
class QProgressBar;
class QPushButton;

namespace sdw::widgets {

class JobsView : public QWidget {
  Q_OBJECT
 public:
  explicit JobsView(QWidget* parent = nullptr);

  void addJob(quint64 id, const QString& name);
  // fraction in [0,1] or <0 when unknown; etaSeconds <0 when unknown.
  void setProgress(quint64 id, const QString& stage, double fraction, double done, double total,
                   double ratePerSecond, const QString& unit, double etaSeconds);
  enum class End { Finished, Failed, Cancelled };
  void endJob(quint64 id, End how, const QString& message = {});
  void clearEnded();

  int jobCount() const { return rows_.size(); }
  QString statusText(quint64 id) const;   // for tests and tooltips
  int progressValue(quint64 id) const;    // 0..1000, -1 when unknown

  static QString formatRate(double perSecond, const QString& unit);
  static QString formatDuration(double seconds);

 Q_SIGNALS:
  void cancelRequested(quint64 id);

 private:
  struct Row {
    QLabel* name;
    QProgressBar* bar;
    QLabel* status;
    QPushButton* cancel;
    bool ended = false;
  };
  QGridLayout* grid_;
  QLabel* empty_;
  QHash<quint64, Row> rows_;
  int nextRow_ = 1;
};

}  // namespace sdw::widgets
