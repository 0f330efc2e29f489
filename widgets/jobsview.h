#pragma once
// The jobs dock: one row per running job with a progress bar, rate, ETA and a
// cancel button. A job that finishes or is cancelled folds into a one-line
// "N finished" summary after a short while; a failed one stays, with its
// reason, until dismissed. Display only: it is told about jobs and asks for
// cancellation.

#include <QHash>
#include <QStringList>
#include <QTimer>
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
  // Removes every ended row, failed ones included, and resets the summary.
  void clearEnded();
  // Removes one ended row (a failed job's Dismiss button).
  void dismiss(quint64 id);

  // How long a finished or cancelled row stays before it folds into the
  // summary; 0 folds at once (what a screenshot of the settled window shows).
  void setFinishedLinger(int ms);
  int finishedLinger() const { return lingerMs_; }

  int jobCount() const { return rows_.size(); }  // rows shown: running, failed, not yet folded
  int foldedCount() const { return folded_; }    // finished or cancelled jobs in the summary
  QString summaryText() const;  // "2 running · 8 finished · 1 failed"
  QString statusText(quint64 id) const;  // for tests and tooltips; empty once folded
  int progressValue(quint64 id) const;   // 0..1000, -1 when unknown

  static QString formatRate(double perSecond, const QString& unit);
  static QString formatDuration(double seconds);

 Q_SIGNALS:
  void cancelRequested(quint64 id);

 private:
  struct Row {
    QLabel* name;
    QProgressBar* bar;
    QLabel* status;
    QPushButton* button;  // Cancel while running, Dismiss once failed
    bool ended = false;
    bool failed = false;
    bool cancelled = false;
  };
  void removeRow(quint64 id);
  void fold(quint64 id);
  void updateSummary();

  QGridLayout* grid_;
  QLabel* summary_;
  QPushButton* clear_;
  QHash<quint64, Row> rows_;
  int nextRow_ = 0;
  int lingerMs_ = 4000;
  int folded_ = 0;
  int foldedCancelled_ = 0;
  QStringList recent_;  // the last folded jobs, newest first, for the summary's tool tip
};

}  // namespace sdw::widgets
