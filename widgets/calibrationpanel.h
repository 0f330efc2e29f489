#pragma once
// The Calibration panel: choose the model, the source (fixed text, AR
// decoding, cross-model), budgets, capture mode, sampling, device, storage
// and the output run file; see the memory and disk the run will take before
// starting; follow a running calibration (tokens of budget, tokens/s over
// time); cancel (the run is kept, incomplete) and resume. Display only: the
// estimate and the progress are told to it; it asks through signals.

#include "core/decoding.h"

#include <QMetaType>
#include <QString>
#include <QWidget>

class QCPItemText;
class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QGridLayout;
class QGroupBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTimer;

namespace sdw::widgets {

class LayerProgressView;
class PlotView;

// What the user chose: plain values, mirrored on gpu::CalibrationSettings.
struct CalibrationForm {
  QString model;
  QString source = QStringLiteral("fixed");  // "fixed" | "ar" | "cross-model"
  QString corpus;
  QString prompts;
  QString crossModel;
  qint64 tokenBudget = 20000;
  int window = 256;
  int maxNewTokens = 128;
  int batch = 8;
  QString capture = QStringLiteral("reforward");  // "exact" | "reforward"
  bool includePrefill = false;
  // AR / cross-model decoding: the workbench's protocol (core/decoding.h) by
  // default; temperature 0 is greedy.
  double temperature = kDefaultDecoding.temperature;
  int topK = kDefaultDecoding.topK;
  double topP = kDefaultDecoding.topP;
  quint64 seed = 0;
  QString device = QStringLiteral("cpu");
  QString dtype = QStringLiteral("float32");
  QString storage = QStringLiteral("full");  // "full" | "topk"
  int storageK = 64;
  // Activation samples kept for the Analysis panel: rows per projection
  // input (gpu::CalibrationSettings::sampleRows); 0: none.
  int sampleRows = 0;
  QString output;  // the run file (.sdw.h5)
};

// What the run will take (from the engine's estimate), and the disk's room.
struct CalibrationEstimateView {
  bool valid = false;
  QString error;              // why there is no estimate
  int inputs = 0;
  quint64 accumulatorBytes = 0;
  quint64 bufferBytes = 0;
  quint64 modelBytes = 0;
  quint64 deviceBytes = 0;
  quint64 fileBytes = 0;      // for the chosen storage
  quint64 fileBytesFull = 0;
  quint64 fileBytesTopk = 0;
  quint64 freeBytes = 0;      // on the output's volume; 0 when unknown
  bool diskShort = false;     // the file (plus the store's reserve) does not fit
  // AR / cross-model: the decoding in words, and a note when the generating
  // checkpoint's generation_config.json asks for another ("" for fixed text).
  QString decoding;
  QString decodingNote;
};

class CalibrationPanel : public QWidget {
  Q_OBJECT
 public:
  explicit CalibrationPanel(QWidget* parent = nullptr);

  CalibrationForm form() const;
  void setForm(const CalibrationForm& f);
  // Paths the "Sample" defaults point to.
  void setSampleDefaults(const QString& model, const QString& corpus, const QString& prompts);
  void setModelDir(const QString& dir);  // e.g. the model loaded in the Model panel
  // Where a new run is written; the file name follows source and budget until edited.
  void setOutputDir(const QString& dir);
  void setCudaAvailable(bool available, const QString& reason);

  void setEstimate(const CalibrationEstimateView& e);

  void beginRun(const QString& what, qint64 budget);
  // done/total in tokens; rate in tokens/s. With elapsed >= 0 (seconds since
  // the start) the rate also becomes a point of the tokens/s chart.
  void setRunProgress(double done, double total, double rate, double elapsed, const QString& stage);
  enum class Outcome { Complete, Incomplete, Failed };
  Q_ENUM(Outcome)
  // The current pass over the decoder layers (capture, eigendecomposition,
  // writing): `done` of `layers` finished.
  void setLayerProgress(int done, int layers, const QString& label);
  void endRun(const QString& message, Outcome outcome);

  // The incomplete run the Resume button continues ("" : asks for a file).
  void setResumePath(const QString& path);
  QString resumePath() const;

  bool isRunning() const { return running_; }
  QString statusText() const;
  QString estimateText() const;
  QString decodingText() const;  // the decoding line under the sampling fields ("" when hidden)
  bool diskWarningShown() const;
  int rateSamples() const;  // points in the tokens/s chart
  PlotView* rateChart() const { return chart_; }
  LayerProgressView* layerProgress() const { return layers_; }

 Q_SIGNALS:
  // Debounced (150 ms): the estimate is stale.
  void settingsChanged(const sdw::widgets::CalibrationForm& form);
  void startRequested(const sdw::widgets::CalibrationForm& form);
  void cancelRequested();
  void resumeRequested(const QString& path);

 private:
  QWidget* buildSource();
  QWidget* buildBudget();
  QWidget* buildRun();
  QLineEdit* pathRow(QWidget* parent, QGridLayout* grid, int row, const QString& label, bool folder,
                     const QString& name, const QString& filter);
  void changed();
  void updateVisibility();
  void updateButtons();
  void updateOutputName();
  void chooseResume();
  void setStatus(const QString& text, bool isError);

  QLineEdit* model_ = nullptr;
  QComboBox* source_ = nullptr;
  QLineEdit* corpus_ = nullptr;
  QLineEdit* prompts_ = nullptr;
  QLineEdit* crossModel_ = nullptr;
  QSpinBox* budget_ = nullptr;
  QSpinBox* window_ = nullptr;
  QSpinBox* maxNew_ = nullptr;
  QSpinBox* batch_ = nullptr;
  QComboBox* capture_ = nullptr;
  QCheckBox* prefill_ = nullptr;
  QDoubleSpinBox* temperature_ = nullptr;
  QSpinBox* topK_ = nullptr;
  QDoubleSpinBox* topP_ = nullptr;
  QSpinBox* seed_ = nullptr;
  QComboBox* device_ = nullptr;
  QComboBox* dtype_ = nullptr;
  QComboBox* storage_ = nullptr;
  QSpinBox* storageK_ = nullptr;
  QCheckBox* keepSamples_ = nullptr;
  QSpinBox* sampleRows_ = nullptr;
  QLineEdit* output_ = nullptr;
  QLabel* estimate_ = nullptr;
  QLabel* decoding_ = nullptr;
  QLabel* diskWarning_ = nullptr;
  QPushButton* start_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QPushButton* resume_ = nullptr;
  QLineEdit* resumePath_ = nullptr;
  QProgressBar* bar_ = nullptr;
  QLabel* status_ = nullptr;
  PlotView* chart_ = nullptr;
  LayerProgressView* layers_ = nullptr;
  QCPItemText* chartHint_ = nullptr;
  QTimer* debounce_ = nullptr;
  QList<QWidget*> fixedOnly_, arOnly_, crossOnly_;
  QString outputDir_;
  QString sampleModel_, sampleCorpus_, samplePrompts_;
  bool outputEdited_ = false;
  bool settingOutput_ = false;
  bool running_ = false;
  bool estimateOk_ = false;
  bool diskShort_ = false;
};

}  // namespace sdw::widgets

Q_DECLARE_METATYPE(sdw::widgets::CalibrationForm)
Q_DECLARE_METATYPE(sdw::widgets::CalibrationEstimateView)
