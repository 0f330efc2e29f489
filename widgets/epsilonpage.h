#pragma once
// One epsilon analysis on screen: the summary line, per-input eps bars, the
// eps(C) vs eps(AR) scatter, the per-module table and the eigen-spectra of
// the selected module's input. Selecting a module in the table or clicking
// its point in the scatter shows its spectra. Display only.

#include "widgets/epsilondata.h"

#include <QWidget>

class QLabel;
class QSortFilterProxyModel;
class QStackedWidget;
class QTableView;

namespace sdw::widgets {

class ChecksLabel;
class EpsilonBarsPlot;
class EpsilonModuleModel;
class EpsilonScatterPlot;
class EpsilonSpectrumPlot;

class EpsilonPage : public QWidget {
  Q_OBJECT
 public:
  explicit EpsilonPage(QWidget* parent = nullptr);

  void setData(const EpsilonData& data);
  // No analysis: the plots are hidden and `message` says why.
  void clear(const QString& message);
  const EpsilonData& data() const { return data_; }

  // Shows the spectra of the module's input and marks it in the scatter.
  void selectModule(int module);
  int selectedModule() const { return selectedModule_; }

  QString summaryText() const;
  QString titleText() const;
  QStringList shownWarnings() const;  // the warning line(s) under the summary
  EpsilonBarsPlot* bars() const { return bars_; }
  EpsilonScatterPlot* scatter() const { return scatter_; }
  EpsilonSpectrumPlot* spectrum() const { return spectrum_; }
  EpsilonModuleModel* moduleModel() const { return model_; }
  QTableView* moduleView() const { return table_; }

 private:
  EpsilonData data_;
  QStackedWidget* stack_ = nullptr;
  QLabel* empty_ = nullptr;
  QLabel* title_ = nullptr;
  QLabel* summary_ = nullptr;
  ChecksLabel* checks_ = nullptr;
  QLabel* spectrumTitle_ = nullptr;
  EpsilonBarsPlot* bars_ = nullptr;
  EpsilonScatterPlot* scatter_ = nullptr;
  EpsilonSpectrumPlot* spectrum_ = nullptr;
  EpsilonModuleModel* model_ = nullptr;
  QSortFilterProxyModel* proxy_ = nullptr;
  QTableView* table_ = nullptr;
  int selectedModule_ = -1;
};

}  // namespace sdw::widgets
