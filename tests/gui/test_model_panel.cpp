// The Model panel offscreen, driven through its controller: loading the
// sample model (summary and module tree against config.json), streamed
// generation checked against a direct greedy run, a prompt stop, clear
// errors that keep the previous model, cancelled loads, the CUDA choice, the
// decode engine's linear reaching the model (sparse on a pruned copy), and the
// run-time activation sparsity p_x reaching the model's load options, per
// token's top-k or with thresholds from a calibration run of the workspace
// (and a run without activation samples failing the load with its error).

#include "app/gui/mainwindow.h"
#include "app/gui/modelcontroller.h"
#include "app/jobmanager.h"
#include "core/chat_format.h"
#include "core/tokenizer.h"
#include "gpu/activation_thresholds.h"
#include "gpu/device.h"
#include "gpu/model.h"
#include "gpu/model_config.h"
#include "tests/gpu/sparse_fixture.h"
#include "tests/gui/sample_calibration.h"
#include "widgets/activationselection.h"
#include "widgets/logview.h"
#include "widgets/modelpanel.h"
#include "widgets/moduletreemodel.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <memory>

using sdw::app::JobManager;
using sdw::app::ModelController;
using sdw::widgets::GenerateSettings;
using sdw::widgets::ModelPanel;
using sdw::widgets::ModuleRow;
using sdw::widgets::ModuleTreeModel;

namespace {

QJsonObject sampleConfig() {
  QFile f(QDir(sdw::app::sampleModelDir()).filePath(QStringLiteral("config.json")));
  if (!f.open(QIODevice::ReadOnly)) return {};
  return QJsonDocument::fromJson(f.readAll()).object();
}

QString en(qint64 v) { return QLocale(QLocale::English).toString(v); }

QPushButton* button(QWidget* w, const char* name) { return w->findChild<QPushButton*>(QLatin1String(name)); }

// Greedy (the text is known), plain prompt "The jury said", `tokens` new tokens.
GenerateSettings jurySaid(int tokens) {
  GenerateSettings s;
  s.prompt = QStringLiteral("The jury said");
  s.maxNewTokens = tokens;
  s.temperature = 0;
  s.chatFormat = false;
  return s;
}

}  // namespace

class TestModelPanel : public QObject {
  Q_OBJECT
 private:
  std::unique_ptr<JobManager> jobs_;
  std::unique_ptr<ModelPanel> panel_;
  std::unique_ptr<ModelController> controller_;
  std::unique_ptr<QAbstractItemModelTester> tester_;
  QJsonObject config_;

  // Loads the sample through the panel's "Sample model" button.
  bool loadSample() {
    QSignalSpy loaded(controller_.get(), &ModelController::modelLoaded);
    QPushButton* b = button(panel_.get(), "sampleModel");
    if (!b || !b->isEnabled()) return false;
    b->click();
    return loaded.wait(30000) || loaded.count() == 1;
  }

  // Generates 12 greedy tokens after "The jury said" through the panel; true when it
  // ended without an error.
  bool generateInPanel() {
    panel_->setGenerateSettings(jurySaid(12));
    QSignalSpy ended(controller_.get(), &ModelController::generationEnded);
    button(panel_.get(), "generate")->click();
    if (!ended.wait(30000) && ended.count() == 0) return false;
    return !ended.first().at(1).toBool();
  }
  // What the runtime itself generates for generateInPanel() with the sample loaded as `lo`.
  static QString runtimeGreedyText(const sdw::gpu::LoadOptions& lo) {
    const std::filesystem::path dir = QFile::encodeName(sdw::app::sampleModelDir()).toStdString();
    const sdw::Tokenizer tok = sdw::Tokenizer::fromFile(dir / "tokenizer.json");
    sdw::gpu::GenerationOptions o;
    o.maxNewTokens = 12;
    o.stopIds = tok.stopIds();
    const auto ids = sdw::encodePrompt(tok, sdw::ChatFamily::Plain, "The jury said");
    const auto model = sdw::gpu::Model::load(dir, lo);
    return QString::fromStdString(tok.decode(model->generate(ids, o).tokens, /*skipSpecialTokens=*/true));
  }

 private Q_SLOTS:
  void initTestCase() {
    config_ = sampleConfig();
    QVERIFY2(!config_.isEmpty(), qPrintable(sdw::app::sampleModelDir()));
    jobs_ = std::make_unique<JobManager>();
    jobs_->setProgressInterval(5);
    panel_ = std::make_unique<ModelPanel>();
    panel_->resize(1200, 800);
    controller_ = std::make_unique<ModelController>(jobs_.get());
    controller_->attach(panel_.get());
    tester_ = std::make_unique<QAbstractItemModelTester>(panel_->moduleModel(),
                                                         QAbstractItemModelTester::FailureReportingMode::QtTest);
  }

  void cleanupTestCase() {
    controller_->stop();
    jobs_->cancelAll();
    QVERIFY(jobs_->waitForDone(10000));
  }

  void sampleFolderIsFound() {
    const QString dir = sdw::app::sampleModelDir();
    QVERIFY2(QFile::exists(QDir(dir).filePath(QStringLiteral("config.json"))), qPrintable(dir));
    QVERIFY(QFile::exists(QDir(dir).filePath(QStringLiteral("tokenizer.json"))));
  }

  void loadsTheSampleModel() {
    QVERIFY(!controller_->hasModel());
    QVERIFY(!button(panel_.get(), "generate")->isEnabled());  // nothing to generate with yet
    QSignalSpy started(jobs_.get(), &JobManager::started);
    QVERIFY(loadSample());
    QCOMPARE(started.count(), 1);
    QCOMPARE(started.first().at(1).toString(), QStringLiteral("Load model"));
    QVERIFY(controller_->hasModel());
    QVERIFY(!panel_->isLoading());

    const qint64 layers = config_.value(QStringLiteral("num_hidden_layers")).toInteger();
    const qint64 hidden = config_.value(QStringLiteral("hidden_size")).toInteger();
    const qint64 inter = config_.value(QStringLiteral("intermediate_size")).toInteger();
    const qint64 heads = config_.value(QStringLiteral("num_attention_heads")).toInteger();
    const qint64 kvHeads = config_.value(QStringLiteral("num_key_value_heads")).toInteger();
    const qint64 headDim = config_.value(QStringLiteral("head_dim")).toInteger();
    const qint64 vocab = config_.value(QStringLiteral("vocab_size")).toInteger();
    const bool tied = config_.value(QStringLiteral("tie_word_embeddings")).toBool();
    QCOMPARE(layers, qint64(6));  // the sample as documented in samples/model/brown-llama/README.md
    QCOMPARE(hidden, qint64(256));

    QCOMPARE(panel_->summaryValue(QStringLiteral("Architecture")), QStringLiteral("LlamaForCausalLM"));
    QCOMPARE(panel_->summaryValue(QStringLiteral("Layers")), en(layers));
    QCOMPARE(panel_->summaryValue(QStringLiteral("Hidden size")), en(hidden));
    QCOMPARE(panel_->summaryValue(QStringLiteral("Intermediate size")), en(inter));
    QCOMPARE(panel_->summaryValue(QStringLiteral("Attention heads")), en(heads));
    QVERIFY(panel_->summaryValue(QStringLiteral("KV heads")).startsWith(en(kvHeads)));
    QCOMPARE(panel_->summaryValue(QStringLiteral("Head dim")), en(headDim));
    QCOMPARE(panel_->summaryValue(QStringLiteral("Vocabulary")), en(vocab));
    QCOMPARE(panel_->summaryValue(QStringLiteral("Context length")), en(512));
    QCOMPARE(panel_->summaryValue(QStringLiteral("Tied embeddings")), QStringLiteral("yes"));
    QCOMPARE(panel_->summaryValue(QStringLiteral("RoPE scaling")), QStringLiteral("none"));

    // Parameters counted by hand from the config: embeddings (+ lm_head when
    // untied), per layer q/k/v/o + gate/up/down + two norms, the final norm.
    const qint64 perLayer = hidden * heads * headDim + 2 * hidden * kvHeads * headDim + heads * headDim * hidden +
                            3 * hidden * inter + 2 * hidden;
    const qint64 params = vocab * hidden * (tied ? 1 : 2) + layers * perLayer + hidden;
    QCOMPARE(params, qint64(5770496));  // README's figure
    QCOMPARE(panel_->summary().parameters, quint64(params));
    QCOMPARE(panel_->summaryValue(QStringLiteral("Parameters")), en(params));
    QCOMPARE(panel_->summary().bytesFp32, quint64(params) * 4);
    QCOMPARE(panel_->summary().bytesBf16, quint64(params) * 2);
    QCOMPARE(panel_->summary().bytesFp16, quint64(params) * 2);
    QCOMPARE(panel_->summary().bytesLoaded, quint64(params) * 4);  // cpu float32
    QVERIFY(panel_->summaryValue(QStringLiteral("Size fp32")).contains(en(params * 4)));
    QVERIFY(panel_->summaryValue(QStringLiteral("As loaded")).contains(QStringLiteral("float32")));
    QVERIFY(panel_->summaryValue(QStringLiteral("Tokenizer")).contains(QStringLiteral("4096 tokens")));

    // Module tree: embeddings, one node per layer with its 7 projections, lm_head.
    ModuleTreeModel* m = panel_->moduleModel();
    QCOMPARE(m->rowCount(), int(layers) + 2);
    QCOMPARE(m->layerCount(), int(layers));
    QCOMPARE(m->projectionCount(), 7 * int(layers));
    QCOMPARE(m->index(0, ModuleTreeModel::Name).data().toString(), QStringLiteral("model.embed_tokens"));
    QCOMPARE(m->index(0, ModuleTreeModel::Shape).data().toString(), QStringLiteral("[%1, %2]").arg(vocab).arg(hidden));
    int projections = 0;
    for (int l = 0; l < layers; ++l) {
      const QModelIndex layer = m->index(1 + l, 0);
      QCOMPARE(layer.data().toString(), QStringLiteral("model.layers.%1").arg(l));
      QCOMPARE(m->rowCount(layer), 7);
      projections += m->rowCount(layer);
    }
    QCOMPARE(projections, 7 * int(layers));
    const QModelIndex layer0 = m->index(1, 0);
    auto cell = [&](int row, int col) { return m->index(row, col, layer0).data().toString(); };
    QCOMPARE(cell(0, ModuleTreeModel::Name), QStringLiteral("q_proj"));
    QCOMPARE(cell(0, ModuleTreeModel::Shape), QStringLiteral("[%1, %2]").arg(heads * headDim).arg(hidden));
    QCOMPARE(cell(1, ModuleTreeModel::Name), QStringLiteral("k_proj"));
    QCOMPARE(cell(1, ModuleTreeModel::Shape), QStringLiteral("[%1, %2]").arg(kvHeads * headDim).arg(hidden));
    QCOMPARE(cell(6, ModuleTreeModel::Name), QStringLiteral("down_proj"));
    QCOMPARE(cell(6, ModuleTreeModel::Shape), QStringLiteral("[%1, %2]").arg(hidden).arg(inter));
    QCOMPARE(cell(6, ModuleTreeModel::DType), QStringLiteral("float32"));
    QCOMPARE(m->index(6, ModuleTreeModel::Bytes, layer0).data(ModuleTreeModel::SortRole).toULongLong(),
             quint64(hidden * inter * 4));
    const QModelIndex lmHead = m->index(m->rowCount() - 1, 0);
    QCOMPARE(lmHead.data().toString(), QStringLiteral("lm_head"));
    QVERIFY(m->index(lmHead.row(), ModuleTreeModel::Bytes).data().toString().contains(QStringLiteral("tied")));
    QVERIFY(button(panel_.get(), "generate")->isEnabled());
  }

  void generationStreamsTheGreedyText() {
    QVERIFY(controller_->hasModel());
    panel_->setGenerateSettings(jurySaid(20));
    QCOMPARE(panel_->generateSettings().maxNewTokens, 20);

    QVector<int> sizes;  // generated text length at each chunk
    auto conn = connect(controller_.get(), &ModelController::textStreamed, this,
                        [&] { sizes.push_back(int(panel_->generatedText().size())); });
    QSignalSpy ended(controller_.get(), &ModelController::generationEnded);
    QSignalSpy started(jobs_.get(), &JobManager::started);
    button(panel_.get(), "generate")->click();
    QCOMPARE(started.count(), 1);
    QCOMPARE(started.first().at(1).toString(), QStringLiteral("Generate"));
    QVERIFY(panel_->isGenerating());
    QVERIFY(!button(panel_.get(), "generate")->isEnabled());
    QVERIFY(button(panel_.get(), "stop")->isEnabled());
    QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 30000);
    disconnect(conn);
    QCOMPARE(ended.first().at(1).toBool(), false);
    QVERIFY(!panel_->isGenerating());

    const QString text = panel_->generatedText();
    QVERIFY(!text.trimmed().isEmpty());
    QVERIFY(!sizes.isEmpty());
    for (int i = 1; i < sizes.size(); ++i) QVERIFY(sizes[i] >= sizes[i - 1]);
    QCOMPARE(sizes.last(), int(text.size()));
    const QString outcome = ended.first().at(0).toString();
    QVERIFY2(panel_->tokenCount() == 20 || outcome.contains(QStringLiteral("end of text")), qPrintable(outcome));
    QVERIFY(panel_->tokensPerSecond() > 0);
    QVERIFY(panel_->generationStatusText().contains(QStringLiteral("tokens/s")));

    // The same greedy run straight through the runtime gives the same text.
    const std::filesystem::path dir = QFile::encodeName(sdw::app::sampleModelDir()).toStdString();
    const sdw::Tokenizer tok = sdw::Tokenizer::fromFile(dir / "tokenizer.json");
    auto model = sdw::gpu::Model::load(dir, {.device = "cpu", .dtype = "float32"});
    sdw::gpu::GenerationOptions o;
    o.maxNewTokens = 20;
    o.stopIds = tok.stopIds();
    const auto ids = sdw::encodePrompt(tok, sdw::ChatFamily::Plain, "The jury said");
    const auto r = model->generate(ids, o);
    QCOMPARE(panel_->tokenCount(), int(r.tokens.size()));
    QCOMPARE(text, QString::fromStdString(tok.decode(r.tokens, /*skipSpecialTokens=*/true)));
  }

  void stopEndsALongGenerationPromptly() {
    panel_->setGenerateSettings(jurySaid(480));  // near the sample's 512-token context
    controller_->setChunkInterval(5);
    QVector<int> sizes;
    auto conn = connect(controller_.get(), &ModelController::textStreamed, this,
                        [&] { sizes.push_back(int(panel_->generatedText().size())); });
    QSignalSpy ended(controller_.get(), &ModelController::generationEnded);
    button(panel_.get(), "generate")->click();
    QTRY_VERIFY_WITH_TIMEOUT(panel_->tokenCount() >= 8, 20000);
    QVERIFY(panel_->isGenerating());
    QElapsedTimer t;
    t.start();
    button(panel_.get(), "stop")->click();
    QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 1000);
    const qint64 ms = t.elapsed();
    disconnect(conn);
    controller_->setChunkInterval(30);
    QVERIFY2(ms < 1000, qPrintable(QString::number(ms)));
    QCOMPARE(ended.first().at(0).toString(), QStringLiteral("stopped"));
    QVERIFY(panel_->tokenCount() < 480);
    QVERIFY(panel_->generationStatusText().contains(QStringLiteral("stopped")));
    QVERIFY(!controller_->isGenerating());
    QVERIFY(button(panel_.get(), "generate")->isEnabled());
    // Text arrived in several growing pieces while decoding.
    int growths = 0;
    for (int i = 1; i < sizes.size(); ++i) growths += sizes[i] > sizes[i - 1] ? 1 : 0;
    QVERIFY2(growths >= 2, qPrintable(QString::number(growths)));
  }

  void badFoldersShowAnErrorAndKeepTheModel_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("expected");
    QTest::newRow("no config.json") << "empty" << "no config.json";
    QTest::newRow("missing folder") << "missing" << "no such folder";
    QTest::newRow("unsupported architecture") << "gpt2" << "unsupported architecture";
  }
  void badFoldersShowAnErrorAndKeepTheModel() {
    QFETCH(QString, kind);
    QFETCH(QString, expected);
    QVERIFY(controller_->hasModel());
    const QString before = controller_->modelDir();
    const int rowsBefore = panel_->moduleModel()->rowCount();
    QTemporaryDir tmp;
    QString dir = tmp.path();
    if (kind == QLatin1String("missing")) {
      dir = tmp.filePath(QStringLiteral("not-here"));
    } else if (kind == QLatin1String("gpt2")) {
      QJsonObject c = config_;
      c[QStringLiteral("architectures")] = QJsonArray{QStringLiteral("GPT2LMHeadModel")};
      c[QStringLiteral("model_type")] = QStringLiteral("gpt2");
      QFile f(tmp.filePath(QStringLiteral("config.json")));
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(QJsonDocument(c).toJson());
    }
    QSignalSpy ended(controller_.get(), &ModelController::loadEnded);
    QSignalSpy errors(controller_.get(), &ModelController::error);
    controller_->load(dir);
    QVERIFY(panel_->isLoading());
    QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 10000);
    QCOMPARE(ended.first().at(1).toBool(), true);
    const QString message = ended.first().at(0).toString();
    QVERIFY2(message.contains(expected), qPrintable(message));
    QVERIFY2(panel_->statusText().contains(expected), qPrintable(panel_->statusText()));
    QVERIFY(panel_->statusText().contains(before));  // says which model is still in use
    QCOMPARE(errors.count(), 1);
    QVERIFY(errors.first().at(0).toString().contains(expected));
    QVERIFY(!panel_->isLoading());
    QCOMPARE(controller_->modelDir(), before);
    QCOMPARE(panel_->summaryValue(QStringLiteral("Layers")), en(6));
    QCOMPARE(panel_->moduleModel()->rowCount(), rowsBefore);
    QVERIFY(button(panel_.get(), "generate")->isEnabled());
  }

  void cancelledLoadKeepsTheModel() {
    const QString before = controller_->modelDir();
    QSignalSpy ended(controller_.get(), &ModelController::loadEnded);
    QSignalSpy cancelled(jobs_.get(), &JobManager::cancelled);
    QSignalSpy loaded(controller_.get(), &ModelController::modelLoaded);
    controller_->load(sdw::app::sampleModelDir(), QStringLiteral("cpu"), QStringLiteral("bfloat16"));
    QCOMPARE(button(panel_.get(), "loadModel")->text(), QStringLiteral("Cancel"));
    button(panel_.get(), "loadModel")->click();  // Cancel while loading
    QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 10000);
    QCOMPARE(cancelled.count(), 1);
    QCOMPARE(loaded.count(), 0);
    QCOMPARE(ended.first().at(1).toBool(), false);
    QVERIFY(ended.first().at(0).toString().contains(QStringLiteral("cancelled")));
    QCOMPARE(controller_->modelDir(), before);
    QCOMPARE(controller_->summary().dtype, QStringLiteral("float32"));
    QCOMPARE(button(panel_.get(), "loadModel")->text(), QStringLiteral("Load"));
  }

  void reloadsInAnotherDtype() {
    QSignalSpy loaded(controller_.get(), &ModelController::modelLoaded);
    controller_->load(sdw::app::sampleModelDir(), QStringLiteral("cpu"), QStringLiteral("bfloat16"));
    QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 1, 30000);
    QCOMPARE(controller_->summary().dtype, QStringLiteral("bfloat16"));
    QCOMPARE(panel_->summary().bytesLoaded, panel_->summary().bytesBf16);
    QCOMPARE(panel_->moduleModel()->index(0, ModuleTreeModel::DType, panel_->moduleModel()->index(1, 0)).data(),
             QVariant(QStringLiteral("bfloat16")));
  }

  void engineChoiceReachesTheModel() {
    // The sample has no packed file: the sparse engine is not on offer.
    QVERIFY(controller_->hasModel());
    QCOMPARE(QDir(controller_->modelDir()).dirName(), QStringLiteral("brown-llama"));
    QVERIFY(!panel_->summary().hasSparseFile);
    QVERIFY(!panel_->sparseSelectable());
    QCOMPARE(panel_->engineChoice(), QStringLiteral("cublas"));
    QCOMPARE(controller_->summary().linear, QStringLiteral("cublas"));
    QVERIFY2(panel_->engineDescription().contains(QStringLiteral("LibTorch matmul")),
             qPrintable(panel_->engineDescription()));

    // The sample pruned 2:4 by magnitude, as sdw-cli prune writes it (the
    // checkpoint with zeros and its model.sdwsparse), loaded through the panel.
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const QString pruned = tmp.filePath(QStringLiteral("pruned-2-4"));
    sdw::testing::writeNmPruned(QFile::encodeName(pruned).toStdString(), {2, 4});
    QVERIFY(QFile::exists(pruned + QStringLiteral("/model.sdwsparse")));
    QSignalSpy loaded(controller_.get(), &ModelController::modelLoaded);
    QSignalSpy requested(panel_.get(), &ModelPanel::loadRequested);
    panel_->setModelDir(pruned);
    button(panel_.get(), "loadModel")->click();
    QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 1, 30000);
    QCOMPARE(requested.first().at(3).toString(), QStringLiteral("cublas"));
    QVERIFY(panel_->summary().hasSparseFile);
    QVERIFY(panel_->sparseSelectable());

    panel_->setGenerateSettings(jurySaid(10));
    const auto generate = [&]() -> QString {
      QSignalSpy ended(controller_.get(), &ModelController::generationEnded);
      button(panel_.get(), "generate")->click();
      if (!ended.wait(30000) && ended.isEmpty()) return QStringLiteral("<no end>");
      return panel_->generatedText();
    };
    const QString dense = generate();
    QVERIFY(!dense.trimmed().isEmpty());

    // Choosing the sparse engine reloads the model with it.
    panel_->setEngineChoice(QStringLiteral("sparse"));
    QCOMPARE(requested.count(), 2);
    QCOMPARE(requested.last().at(0).toString(), controller_->modelDir());
    QCOMPARE(requested.last().at(3).toString(), QStringLiteral("sparse"));
    QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 2, 30000);
    QCOMPARE(controller_->summary().linear, QStringLiteral("sparse"));
    QCOMPARE(panel_->engineChoice(), QStringLiteral("sparse"));
    const QString engine = panel_->engineDescription();
    QVERIFY2(engine.contains(QStringLiteral("bitmask SpMV 2:4 (42 of 42 projections packed)")), qPrintable(engine));
    QCOMPARE(engine, controller_->summary().engine);
    QCOMPARE(panel_->findChild<QLabel*>(QStringLiteral("engineDescription"))->text(), engine);

    // It decodes the same greedy text from the packed weights (the checkpoint
    // holds the same values with zeros where pruned), at a measured rate.
    QCOMPARE(generate(), dense);
    QVERIFY(panel_->tokensPerSecond() > 0);
    QVERIFY(panel_->generationStatusText().contains(QStringLiteral("tokens/s")));

    // A folder without a packed file loads with cuBLAS, and says so.
    QSignalSpy infos(controller_.get(), &ModelController::info);
    panel_->setModelDir(sdw::app::sampleModelDir());
    button(panel_.get(), "loadModel")->click();
    QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 3, 30000);
    QCOMPARE(requested.last().at(3).toString(), QStringLiteral("sparse"));
    QCOMPARE(controller_->summary().linear, QStringLiteral("cublas"));
    QCOMPARE(panel_->engineChoice(), QStringLiteral("cublas"));
    QVERIFY(!panel_->sparseSelectable());
    bool said = false;
    for (const auto& i : infos) said = said || i.at(0).toString().contains(QStringLiteral("no model.sdwsparse"));
    QVERIFY(said);
  }

  void activationSparsityReachesTheModel() {
    auto* px = panel_->findChild<QDoubleSpinBox*>(QStringLiteral("modelActivationSparsity"));
    QVERIFY(px);
    QCOMPARE(px->minimum(), 0.0);
    QCOMPARE(px->maximum(), 0.95);
    QCOMPARE(px->singleStep(), 0.05);
    QVERIFY(px->toolTip().contains(QStringLiteral("largest (1 - p_x) share")));
    QVERIFY(px->toolTip().contains(QStringLiteral("eager forward pass")));
    // The model loaded so far is dense, and the field says so.
    QCOMPARE(controller_->summary().activationSparsity, 0.0);
    QCOMPARE(px->value(), 0.0);
    QVERIFY2(!panel_->engineDescription().contains(QStringLiteral("activation sparsity")),
             qPrintable(panel_->engineDescription()));

    // A new value is a load option: nothing reloads until Load, and the status says so.
    QSignalSpy requested(panel_.get(), &ModelPanel::loadRequested);
    QSignalSpy loaded(controller_.get(), &ModelController::modelLoaded);
    px->setValue(0.5);
    QCOMPARE(panel_->activationSparsity(), 0.5);
    QCOMPARE(requested.count(), 0);
    QVERIFY(!controller_->isLoading());
    QVERIFY2(panel_->statusText().contains(QStringLiteral("p_x 0.50")), qPrintable(panel_->statusText()));

    // Load: the sample model with p_x 0.5 in its LoadOptions.
    panel_->setModelDir(sdw::app::sampleModelDir());
    button(panel_.get(), "loadModel")->click();
    QCOMPARE(requested.count(), 1);
    QCOMPARE(requested.first().at(4).toDouble(), 0.5);
    QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 1, 30000);
    QCOMPARE(QDir(controller_->modelDir()).dirName(), QStringLiteral("brown-llama"));
    QCOMPARE(controller_->summary().activationSparsity, 0.5);
    const QString engine = panel_->engineDescription();
    QVERIFY2(engine.contains(QStringLiteral("activation sparsity 0.5")), qPrintable(engine));
    QCOMPARE(panel_->findChild<QLabel*>(QStringLiteral("engineDescription"))->text(), engine);
    QVERIFY2(panel_->summaryValue(QStringLiteral("As loaded")).contains(QStringLiteral("p_x 0.50")),
             qPrintable(panel_->summaryValue(QStringLiteral("As loaded"))));
    QCOMPARE(px->value(), 0.5);

    // It generates, with sparsified inputs: the greedy text is the runtime's
    // own at p_x 0.5.
    QVERIFY(generateInPanel());
    QCOMPARE(panel_->generatedText(),
             runtimeGreedyText(
                 {.device = "cpu", .dtype = controller_->summary().dtype.toStdString(), .activationSparsity = 0.5}));

    // Another engine reloads with the p_x the field shows.
    panel_->setEngineChoice(QStringLiteral("dense"));
    QCOMPARE(requested.count(), 2);
    QCOMPARE(requested.last().at(3).toString(), QStringLiteral("dense"));
    QCOMPARE(requested.last().at(4).toDouble(), 0.5);
    QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 2, 30000);
    QCOMPARE(controller_->summary().activationSparsity, 0.5);
    QVERIFY(panel_->engineDescription().contains(QStringLiteral("activation sparsity 0.5")));

    // Back to dense inputs: the next reload (here another engine) takes the field's 0.
    px->setValue(0);
    panel_->setEngineChoice(QStringLiteral("cublas"));
    QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 3, 30000);
    QCOMPARE(requested.last().at(4).toDouble(), 0.0);
    QCOMPARE(controller_->summary().activationSparsity, 0.0);
    QVERIFY(!panel_->engineDescription().contains(QStringLiteral("activation sparsity")));
    QVERIFY(!panel_->summaryValue(QStringLiteral("As loaded")).contains(QStringLiteral("p_x")));
  }

  // Thresholds from a calibration run instead of each token's top-k: the
  // picker lists the workspace's calibration runs (the one without samples
  // says so), is off at p_x 0 and for top-k; the run chosen reaches the
  // model's load options (the greedy text is the runtime's own under those
  // thresholds) and is named where the panel shows p_x; a run without
  // activation samples fails the load with its error, the model stays.
  void activationThresholdsReachTheModel() {
    QTemporaryDir ws;
    QVERIFY(ws.isValid());
    const QString withSamples = ws.filePath(QStringLiteral("calib-samples.sdw.h5"));
    const QString without = ws.filePath(QStringLiteral("calib-plain.sdw.h5"));
    sdw::testing::calibrateSampleModel(withSamples.toStdString(), 32);
    sdw::testing::calibrateSampleModel(without.toStdString(), 0);
    QSignalSpy found(controller_.get(), &ModelController::calibrationRunsFound);
    controller_->setWorkspace(ws.path());
    QVERIFY(found.wait(20000));
    const auto runs = found.first().at(0).value<QVector<sdw::widgets::RunChoice>>();
    QCOMPARE(runs.size(), 2);
    for (const auto& r : runs) QCOMPARE(r.sampleRows, r.path == withSamples ? qint64{32} : qint64{0});

    auto* selection = panel_->findChild<QComboBox*>(QStringLiteral("modelActivationSelection"));
    auto* run = panel_->findChild<QComboBox*>(QStringLiteral("modelThresholdsRun"));
    auto* px = panel_->findChild<QDoubleSpinBox*>(QStringLiteral("modelActivationSparsity"));
    QVERIFY(selection && run && px);
    QCOMPARE(selection->count(), 2);
    QCOMPARE(selection->itemText(0), QStringLiteral("top-k per token"));
    QCOMPARE(selection->itemText(1), QStringLiteral("thresholds"));
    QCOMPARE(run->count(), 2);
    QCOMPARE(run->currentData().toString(), withSamples);  // the first run with samples
    QCOMPARE(run->itemText(run->findData(withSamples)), QStringLiteral("calib-samples.sdw.h5"));
    const int plain = run->findData(without);
    QCOMPARE(run->itemText(plain), QStringLiteral("calib-plain.sdw.h5 (no samples)"));
    QVERIFY(run->itemData(plain, Qt::ToolTipRole).toString().contains(QStringLiteral("Keep activation samples")));

    // Top-k at p_x 0: the picker is off, no thresholds; thresholds at p_x 0: still off.
    QCOMPARE(selection->currentData().toString(), QStringLiteral("topk"));
    QCOMPARE(panel_->activationSparsity(), 0.0);
    QVERIFY(!run->isEnabled());
    selection->setCurrentIndex(1);
    QVERIFY(!run->isEnabled());
    QCOMPARE(panel_->activationThresholdsRun(), QString());
    px->setValue(0.5);
    QVERIFY(run->isEnabled());
    QCOMPARE(panel_->activationThresholdsRun(), withSamples);
    QVERIFY2(panel_->statusText().contains(QStringLiteral("p_x 0.50 (thresholds: calib-samples) applies when")),
             qPrintable(panel_->statusText()));
    selection->setCurrentIndex(0);
    QVERIFY(!run->isEnabled());
    QCOMPARE(panel_->activationThresholdsRun(), QString());
    selection->setCurrentIndex(1);

    // Load: the run goes with the request, its thresholds into the model's options.
    QSignalSpy requested(panel_.get(), &ModelPanel::loadRequested);
    QSignalSpy loaded(controller_.get(), &ModelController::modelLoaded);
    panel_->setModelDir(sdw::app::sampleModelDir());
    button(panel_.get(), "loadModel")->click();
    QCOMPARE(requested.count(), 1);
    QCOMPARE(requested.first().at(4).toDouble(), 0.5);
    QCOMPARE(requested.first().at(5).toString(), withSamples);
    QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 1, 30000);
    const sdw::gpu::ActivationThresholds expected = sdw::gpu::activationThresholdsFromRun(withSamples.toStdString(), 0.5);
    QVERIFY(!expected.runId.empty());
    QCOMPARE(controller_->summary().activationSparsity, 0.5);
    QCOMPARE(controller_->summary().activationThresholds, withSamples);
    QCOMPARE(controller_->summary().activationThresholdsRunId, QString::fromStdString(expected.runId));
    // The runtime took thresholds, not a top-k p_x.
    const QString engine = panel_->engineDescription();
    QVERIFY2(engine.contains(QStringLiteral("activation thresholds")), qPrintable(engine));
    QVERIFY2(!engine.contains(QStringLiteral("activation sparsity 0.5")), qPrintable(engine));
    auto* engineLabel = panel_->findChild<QLabel*>(QStringLiteral("engineDescription"));
    QVERIFY2(engineLabel->toolTip().contains(withSamples), qPrintable(engineLabel->toolTip()));
    QCOMPARE(panel_->summaryValue(QStringLiteral("As loaded")).section(QStringLiteral(", "), -1),
             QStringLiteral("p_x 0.50 thresholds"));
    auto* asLoaded = panel_->findChild<QLabel*>(QStringLiteral("summaryAsLoaded"));
    QVERIFY(asLoaded);
    QVERIFY2(asLoaded->toolTip().contains(QStringLiteral("p_x 0.50 (thresholds: calib-samples)")) &&
                 asLoaded->toolTip().contains(QString::fromStdString(expected.runId)),
             qPrintable(asLoaded->toolTip()));
    QCOMPARE(selection->currentData().toString(), QStringLiteral("thresholds"));
    QCOMPARE(panel_->activationThresholdsRun(), withSamples);
    QCOMPARE(panel_->statusText(), QStringLiteral("Loaded %1 (%2, %3).")
                                       .arg(controller_->summary().dir, controller_->summary().device,
                                            controller_->summary().dtype));

    // It generates with those thresholds: the greedy text is the runtime's own.
    QVERIFY(generateInPanel());
    sdw::gpu::LoadOptions lo{.device = "cpu", .dtype = controller_->summary().dtype.toStdString()};
    lo.activationThresholds = sdw::gpu::thresholdsForModel(
        expected, sdw::gpu::loadModelConfig(QFile::encodeName(sdw::app::sampleModelDir()).toStdString()));
    QCOMPARE(lo.activationThresholds.size(), std::size_t(config_.value(QStringLiteral("num_hidden_layers")).toInt()));
    QCOMPARE(panel_->generatedText(), runtimeGreedyText(lo));
    QVERIFY2(panel_->generationStatusText().endsWith(QStringLiteral(" · p_x 0.50 (thresholds: calib-samples)")),
             qPrintable(panel_->generationStatusText()));

    // A run without activation samples: the load fails with its error, shown
    // in red, and the model with the first run's thresholds stays.
    run->setCurrentIndex(plain);
    QCOMPARE(panel_->activationThresholdsRun(), without);
    QSignalSpy failed(controller_.get(), &ModelController::loadEnded);
    button(panel_.get(), "loadModel")->click();
    QCOMPARE(requested.last().at(5).toString(), without);
    QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 30000);
    QCOMPARE(failed.first().at(1).toBool(), true);
    QVERIFY2(panel_->statusText().contains(
                 QStringLiteral("calib-plain.sdw.h5 has no activation samples: calibrate with --sample-rows N first")),
             qPrintable(panel_->statusText()));
    QVERIFY(panel_->findChild<QLabel*>(QStringLiteral("modelStatus"))->styleSheet().contains(QStringLiteral("#b00020")));
    QCOMPARE(loaded.count(), 1);
    QCOMPARE(controller_->summary().activationThresholds, withSamples);

    // Back to dense inputs.
    selection->setCurrentIndex(0);
    px->setValue(0);
    QVERIFY(!run->isEnabled());
    button(panel_.get(), "loadModel")->click();
    QCOMPARE(requested.last().at(4).toDouble(), 0.0);
    QCOMPARE(requested.last().at(5).toString(), QString());
    QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 2, 30000);
    QCOMPARE(controller_->summary().activationSparsity, 0.0);
    QCOMPARE(controller_->summary().activationThresholds, QString());
    QVERIFY(!panel_->engineDescription().contains(QStringLiteral("activation")));
  }

  void cudaChoiceSaysWhy() {
    const sdw::gpu::DeviceInfo& dev = sdw::gpu::deviceInfo();
    if (dev.cudaAvailable) {
      QVERIFY(panel_->cudaSelectable());
    } else {
      QVERIFY(!panel_->cudaSelectable());
      QVERIFY(!dev.reason.empty());
      QVERIFY2(panel_->cudaToolTip().contains(QString::fromStdString(dev.reason)), qPrintable(panel_->cudaToolTip()));
    }
    ModelPanel p;
    p.setCudaAvailable(false, QStringLiteral("no driver here"));
    QVERIFY(!p.cudaSelectable());
    QVERIFY(p.cudaToolTip().contains(QStringLiteral("no driver here")));
    p.setDevice(QStringLiteral("cuda"));
    QSignalSpy requested(&p, &ModelPanel::loadRequested);
    p.setModelDir(QStringLiteral("/somewhere"));
    button(&p, "loadModel")->click();
    QCOMPARE(requested.count(), 1);
    QCOMPARE(requested.first().at(1).toString(), QStringLiteral("cpu"));
    p.setCudaAvailable(true, {});
    QVERIFY(p.cudaSelectable());
  }

  void moduleTreeModelOnItsOwn() {
    ModuleTreeModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(m.rowCount(), 0);
    QVector<ModuleRow> rows;
    rows.push_back({QStringLiteral("model.embed_tokens"), QStringLiteral("embed_tokens"), -1, 10, 4, QStringLiteral("float32"), 160, {}});
    for (int l = 1; l >= 0; --l)  // out of order: grouped and sorted by layer
      for (const char* k : {"q_proj", "down_proj"})
        rows.push_back({QStringLiteral("model.layers.%1.%2").arg(l).arg(QLatin1String(k)), QLatin1String(k), l, 4, 4,
                        QStringLiteral("float32"), 64, {}});
    rows.push_back({QStringLiteral("lm_head"), QStringLiteral("lm_head"), -1, 10, 4, QStringLiteral("float32"), 160, {}});
    m.setRows(rows);
    QCOMPARE(m.rowCount(), 4);
    QCOMPARE(m.index(1, 0).data().toString(), QStringLiteral("model.layers.0"));
    QCOMPARE(m.index(2, 0).data().toString(), QStringLiteral("model.layers.1"));
    QCOMPARE(m.rowCount(m.index(1, 0)), 2);
    QCOMPARE(m.index(1, ModuleTreeModel::Bytes).data(ModuleTreeModel::SortRole).toULongLong(), 128ull);
    QCOMPARE(m.index(0, 0, m.index(2, 0)).data(Qt::ToolTipRole).toString().section(QLatin1Char('\n'), 0, 0),
             QStringLiteral("model.layers.1.q_proj"));
    QCOMPARE(m.parent(m.index(1, 2, m.index(2, 0))), m.index(2, 0));
    QCOMPARE(m.rowCount(m.index(0, 0)), 0);
    QCOMPARE(ModuleTreeModel::formatBytes(1536), QStringLiteral("1.50 KiB"));
    m.clear();
    QCOMPARE(m.rowCount(), 0);
  }

  void windowOpensTheSampleModel() {
    QTemporaryDir dir;
    sdw::app::Settings settings(dir.filePath(QStringLiteral("sdw.ini")));
    sdw::app::MainWindow w(&settings);
    w.setPersistState(false);
    w.setShowErrorDialogs(false);
    QVERIFY(w.modelController()->isLoading());  // started with the window
    QTRY_VERIFY_WITH_TIMEOUT(w.modelController()->hasModel(), 30000);
    QCOMPARE(w.modelPanel()->summaryValue(QStringLiteral("Layers")), en(6));
    QCOMPARE(QDir(w.modelController()->modelDir()).dirName(), QStringLiteral("brown-llama"));
    QVERIFY(w.logView()->plainText().contains(QStringLiteral("model loaded")));
  }
};

QTEST_MAIN(TestModelPanel)
#include "test_model_panel.moc"
