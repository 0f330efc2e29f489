#pragma once
// The Model panel: pick a checkpoint folder (or the sample), see its
// architecture and every weight matrix, and generate text from it. Display
// only: it is told what was loaded and what was generated, and asks for
// loading (with the decode engine's linear), generation and stop through
// signals.

#include "widgets/moduletreemodel.h"
#include "widgets/runchoice.h"

#include <QMetaType>
#include <QString>
#include <QVector>
#include <QWidget>

#include <cstdint>

class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTreeView;

namespace sdw::widgets {

class ActivationSelection;

// What the architecture summary shows: plain values of a loaded model.
struct ModelSummary {
  QString dir;
  QString architecture;     // "LlamaForCausalLM"
  QString features;         // what sets the family apart (Gemma 3: windows, RoPE bases, norms); the name's tooltip
  qint64 layers = 0;
  qint64 hiddenSize = 0;
  qint64 intermediateSize = 0;
  qint64 heads = 0;
  qint64 kvHeads = 0;
  qint64 headDim = 0;
  qint64 vocabSize = 0;
  qint64 contextLength = 0;
  double ropeTheta = 0;
  QString ropeScaling;      // "none" or "llama3 (factor 8, ...)"
  bool tiedEmbeddings = false;
  quint64 parameters = 0;
  quint64 bytesFp32 = 0;
  quint64 bytesBf16 = 0;
  quint64 bytesFp16 = 0;
  quint64 bytesLoaded = 0;  // weights as they sit on the device
  QString device;           // "cpu", "cuda"
  QString dtype;            // as loaded: "float32", ...
  QString computeDtype;
  QString tokenizer;        // "byte-level BPE, 4096 tokens" or why there is none
  QString chatFamily;       // "plain", "qwen3", "llama3"
  bool canGenerate = false; // a tokenizer was found
  QString linear;           // how the projections decode: "cublas", "dense", "sparse"
  QString engine;           // one line on how decode steps run (the runtime's engine description)
  double activationSparsity = 0;  // run-time activation sparsity p_x as loaded (0: dense inputs)
  // With thresholds: the calibration run they were set from, and its run id
  // ("": each token's top-k).
  QString activationThresholds;
  QString activationThresholdsRunId;
  bool hasSparseFile = false;  // the folder holds a model.sdwsparse or model.sdwcolumn: the sparse engine can load it
};

struct GenerateSettings {
  QString prompt;
  int maxNewTokens = 64;
  double temperature = 0.8;  // <= 0: greedy
  int topK = 40;             // 0: off
  double topP = 0.95;        // 1: off
  quint64 seed = 0;
  bool chatFormat = true;    // auto: the model's chat format when it has one; false: plain text
};

class ModelPanel : public QWidget {
  Q_OBJECT
 public:
  explicit ModelPanel(QWidget* parent = nullptr);

  // The folder the "Sample model" button loads.
  void setSampleDir(const QString& dir);
  // Without a usable GPU the cuda choice is disabled and says why.
  void setCudaAvailable(bool available, const QString& reason);
  void setDevice(const QString& device);  // "cpu" / "cuda"
  void setDtype(const QString& dtype);    // "float32" / "bfloat16" / "float16"
  void setModelDir(const QString& dir);

  // Loading: shows the folder and a progress bar; fraction < 0 is unknown.
  void beginLoading(const QString& dir);
  void setLoadProgress(double fraction, const QString& text);
  void setModel(const ModelSummary& summary, const QVector<ModuleRow>& modules);
  // Ends a load that did not replace the model (error or cancel): the
  // previous model stays on display; `message` says what happened.
  void endLoading(const QString& message, bool isError);

  // Generation: the output area is cleared and shows the prompt, then grows.
  void beginGeneration(const QString& promptText);
  void appendText(const QString& chunk, int tokens, double tokensPerSecond);
  void endGeneration(const QString& outcome, bool isError = false);

  GenerateSettings generateSettings() const;
  void setGenerateSettings(const GenerateSettings& s);

  // The decode engine's linear: "cublas", "dense" or "sparse" (the last only
  // where the loaded folder has a model.sdwsparse). Choosing another one with
  // a model loaded reloads that model with it (loadRequested).
  QString engineChoice() const;
  void setEngineChoice(const QString& linear);
  bool sparseSelectable() const;
  QString engineDescription() const;  // as shown: the loaded model's engine

  // Run-time activation sparsity p_x (0 to 0.95): a load option like the
  // dtype, so a new value takes effect when the model is loaded again (Load,
  // or another engine choice); until then the status line says so.
  double activationSparsity() const;
  void setActivationSparsity(double p);
  // Which entries p_x keeps, a load option too: "" each token's top-k, else
  // the calibration run whose activation samples set fixed thresholds
  // (gpu/activation_thresholds.h); "" at p_x 0. The picker lists the
  // workspace's calibration runs.
  QString activationThresholdsRun() const;
  void setActivationThresholdsRun(const QString& run);
  void setCalibrationRuns(const QVector<RunChoice>& runs);
  ActivationSelection* activationSelection() const { return activationSelection_; }

  // For tests and for the window.
  const ModelSummary& summary() const { return summary_; }
  QString summaryValue(const QString& key) const;  // the text shown next to "Layers", ...
  ModuleTreeModel* moduleModel() const { return modules_; }
  QTreeView* moduleView() const { return tree_; }
  QString generatedText() const { return generated_; }
  int tokenCount() const { return tokens_; }
  double tokensPerSecond() const { return rate_; }
  QString statusText() const;
  QString generationStatusText() const;
  bool isLoading() const { return loading_; }
  bool isGenerating() const { return generating_; }
  bool cudaSelectable() const;
  QString cudaToolTip() const;

 Q_SIGNALS:
  void loadRequested(const QString& dir, const QString& device, const QString& dtype, const QString& linear,
                     double activationSparsity, const QString& activationThresholds);
  void cancelLoadRequested();
  void generateRequested(const sdw::widgets::GenerateSettings& settings);
  void stopRequested();

 private:
  QWidget* buildCheckpointBox();
  QWidget* buildSummaryBox();
  QWidget* buildModulesBox();
  QWidget* buildGenerateBox();
  void requestLoad();
  void engineChosen();
  void activationSparsityChanged();
  void chooseFolder();
  void updateButtons();
  void setStatus(const QString& text, bool isError);
  // `tip`: the value's tool tip (default: the value itself, which may be cut off).
  void setSummaryValue(const QString& key, const QString& value, const QString& tip = QString());

  // checkpoint
  QLineEdit* dirEdit_ = nullptr;
  QPushButton* openButton_ = nullptr;
  QPushButton* sampleButton_ = nullptr;
  QComboBox* device_ = nullptr;
  QComboBox* dtype_ = nullptr;
  QPushButton* loadButton_ = nullptr;
  QProgressBar* loadBar_ = nullptr;
  QLabel* status_ = nullptr;
  QString sampleDir_;
  // summary and modules
  QFormLayout* summaryForm_ = nullptr;
  QVector<QPair<QString, QLabel*>> summaryLabels_;
  ModuleTreeModel* modules_ = nullptr;
  QTreeView* tree_ = nullptr;
  // generate
  QPlainTextEdit* prompt_ = nullptr;
  QSpinBox* maxTokens_ = nullptr;
  QDoubleSpinBox* temperature_ = nullptr;
  QSpinBox* topK_ = nullptr;
  QDoubleSpinBox* topP_ = nullptr;
  QSpinBox* seed_ = nullptr;
  QComboBox* chat_ = nullptr;
  QComboBox* engine_ = nullptr;
  QDoubleSpinBox* activationSparsity_ = nullptr;
  ActivationSelection* activationSelection_ = nullptr;
  QLabel* engineText_ = nullptr;
  QPushButton* generateButton_ = nullptr;
  QPushButton* stopButton_ = nullptr;
  QPlainTextEdit* output_ = nullptr;
  QLabel* genStatus_ = nullptr;
  QString genSparsity_;  // the generating model's activation sparsity, for the status line

  ModelSummary summary_;
  bool haveModel_ = false;
  bool loading_ = false;
  bool generating_ = false;
  QString generated_;
  int tokens_ = 0;
  double rate_ = 0;
};

}  // namespace sdw::widgets

Q_DECLARE_METATYPE(sdw::widgets::ModelSummary)
Q_DECLARE_METATYPE(sdw::widgets::GenerateSettings)
Q_DECLARE_METATYPE(sdw::widgets::ModuleRow)
