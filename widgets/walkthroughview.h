#pragma once
// The guided walkthrough's window content: which device and folder the story
// uses, its steps with their state and measured finding, the selected step's
// title and explanation, and Run step / Run all / Cancel / Close. Display
// only: the story runs elsewhere and tells the view what happened.

#include <QString>
#include <QVector>
#include <QWidget>

class QButtonGroup;
class QLabel;
class QPushButton;
class QRadioButton;
class QScrollArea;

namespace sdw::widgets {

struct WalkthroughStep {
  QString title;
  QString explanation;
};

class WalkthroughView : public QWidget {
  Q_OBJECT
 public:
  enum class State { Pending, Running, Done, Failed, Cancelled };
  Q_ENUM(State)

  explicit WalkthroughView(QWidget* parent = nullptr);

  void setSteps(const QVector<WalkthroughStep>& steps);
  // "Runs on the CPU (float32) ...", the folder of the runs.
  void setDeviceText(const QString& text);
  // Selects a step: its title and explanation show below the list.
  void setCurrentStep(int index);
  // `detail`: the time taken and the panel's message; `finding`: what the
  // step measured, in words.
  void setStepState(int index, State state, const QString& detail = {}, const QString& finding = {});
  // While running, Run step / Run all are off and Cancel is on.
  void setRunning(bool running);
  void setStatus(const QString& text, bool isError = false);

  int stepCount() const;
  int currentStep() const;
  QString stepTitle(int index) const;
  State stepState(int index) const;
  QString stepFinding(int index) const;
  QString stepStatusText(int index) const;  // "done, 4.1 s on cpu"
  QString stepFindingText(int index) const;  // what the list shows under the step
  QString titleText() const;
  QString explanationText() const;
  QString findingText() const;  // of the selected step
  QString deviceText() const;
  QString statusText() const;

 Q_SIGNALS:
  void runStepRequested(int index);
  void runAllRequested();
  void cancelRequested();
  void closeRequested();

 private:
  void showSelected();

  // One row of the list: the step's title (selects it), its status, and the
  // finding or error under it.
  struct Row {
    QRadioButton* title = nullptr;
    QLabel* status = nullptr;
    QLabel* finding = nullptr;
  };

  QVector<WalkthroughStep> steps_;
  QVector<State> states_;
  QVector<QString> findings_;
  QVector<Row> rows_;
  QLabel* device_ = nullptr;
  QWidget* list_ = nullptr;
  QScrollArea* scroll_ = nullptr;
  QButtonGroup* group_ = nullptr;
  QLabel* title_ = nullptr;
  QLabel* explanation_ = nullptr;
  QLabel* finding_ = nullptr;
  QLabel* status_ = nullptr;
  QPushButton* runStep_ = nullptr;
  QPushButton* runAll_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QPushButton* close_ = nullptr;
};

}  // namespace sdw::widgets
