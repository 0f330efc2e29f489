#pragma once
// The guided walkthrough (Help menu): a non-modal window beside the main
// window that plays the fixed-text vs AR story (storydriver.h) on the real
// panels, one step at a time or all in order, and says after each step what
// it measured. Wiring only: the view displays, the driver operates the panels.

#include "app/gui/storydriver.h"

#include <QDialog>

namespace sdw::widgets {
class WalkthroughView;
}

namespace sdw::app {

class MainWindow;

// On a usable GPU: cuda, bfloat16, the budgets of tools/make_sample_runs.sh
// and the Llama-3.1-8B benchmark shapes; otherwise cpu, float32 and small
// budgets. The runs go to a fresh folder under the user's data location.
StoryOptions walkthroughOptions();

class WalkthroughDialog : public QDialog {
  Q_OBJECT
 public:
  WalkthroughDialog(MainWindow* window, const StoryOptions& options);

  StoryDriver* driver() const { return driver_; }
  widgets::WalkthroughView* view() const { return view_; }

 protected:
  // Closing stops the story: a job left running out of sight helps no one.
  void reject() override;

 private:
  void stepStarted(int index);
  void stepFinished(int index, const StoryStepResult& result);
  void allFinished(bool ok);

  StoryDriver* driver_ = nullptr;
  widgets::WalkthroughView* view_ = nullptr;
};

// The window's walkthrough, shown and raised (made on first use).
WalkthroughDialog* showWalkthrough(MainWindow* window);

}  // namespace sdw::app
