#include "app/gui/modelcontroller.h"

#include "app/gui/workspace.h"
#include "core/chat_format.h"
#include "core/tokenizer.h"
#include "gpu/activation_thresholds.h"
#include "gpu/device.h"
#include "gpu/model.h"
#include "gpu/model_config.h"
#include "gpu/spmspv_file.h"
#include "gpu/spmv.h"  // defaultTuningPath
#include "widgets/prunedata.h"  // activationSparsityText

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace sdw::app {

struct LoadedModel {
  std::shared_ptr<gpu::Model> model;
  std::shared_ptr<const Tokenizer> tokenizer;  // null when the folder has no tokenizer.json
  std::filesystem::path dir;
  ChatFamily family = ChatFamily::Plain;
  widgets::ModelSummary summary;
  QVector<widgets::ModuleRow> modules;
};

// Decoded text as the generation job sends it, token by token.
struct TextChunk {
  std::string text;  // UTF-8
  int tokens = 0;    // generated so far
  double tokensPerSecond = 0;
};

struct GenerationOutcome {
  int tokens = 0;
  int promptTokens = 0;
  QString reason;
  double prefillSeconds = 0;
  double decodeSeconds = 0;
};

}  // namespace sdw::app

Q_DECLARE_METATYPE(std::shared_ptr<sdw::app::LoadedModel>)
Q_DECLARE_METATYPE(sdw::app::GenerationOutcome)

namespace sdw::app {

namespace {

// Runs inside the load job: reads everything the panel shows while the
// model is still private to this thread. With `thresholdsRun` the options'
// p_x becomes thresholds from that run's activation samples.
std::shared_ptr<LoadedModel> loadModel(const QString& dirText, gpu::LoadOptions options, const QString& thresholdsRun,
                                       const sdw::ProgressFn& progress) {
  const QFileInfo info(dirText);
  if (!info.exists()) throw std::runtime_error(dirText.toStdString() + ": no such folder");
  if (!info.isDir()) throw std::runtime_error(dirText.toStdString() + ": not a folder");
  auto out = std::make_shared<LoadedModel>();
  out->dir = toPath(info.absoluteFilePath());
  const double sparsity = options.activationSparsity;
  std::string thresholdsRunId;
  if (!thresholdsRun.isEmpty())
    thresholdsRunId = gpu::applyActivationSparsity(options, sparsity, toPath(thresholdsRun),
                                                   gpu::loadModelConfig(out->dir))
                          .runId;
  out->model = std::shared_ptr<gpu::Model>(gpu::Model::load(out->dir, options, progress));

  const auto tokPath = out->dir / "tokenizer.json";
  QString tokText;
  if (std::filesystem::exists(tokPath)) {
    auto tok = std::make_shared<Tokenizer>(Tokenizer::fromFile(tokPath));
    out->family = detectChatFamily(*tok, out->dir);
    tokText = QStringLiteral("BPE, %1 tokens, chat: %2")
                  .arg(tok->vocabSize())
                  .arg(QString::fromLatin1(chatFamilyName(out->family)));
    out->tokenizer = std::move(tok);
  } else {
    tokText = QStringLiteral("none (no tokenizer.json: generation is off)");
  }

  const gpu::ModelConfig& c = out->model->config();
  const std::string dtype = out->model->options().dtype;
  widgets::ModelSummary& s = out->summary;
  s.dir = fromPath(out->dir);
  s.architecture = QString::fromStdString(c.architectureName);
  s.features = QString::fromStdString(gpu::architectureFeatures(c));
  s.layers = c.numLayers;
  s.hiddenSize = c.hiddenSize;
  s.intermediateSize = c.intermediateSize;
  s.heads = c.numHeads;
  s.kvHeads = c.numKvHeads;
  s.headDim = c.headDim;
  s.vocabSize = c.vocabSize;
  s.contextLength = c.maxPositionEmbeddings;
  s.ropeTheta = c.ropeTheta;
  s.ropeScaling = QString::fromStdString(gpu::ropeScalingText(c.ropeScaling));
  s.tiedEmbeddings = c.tieWordEmbeddings;
  s.parameters = out->model->parameterCount();
  s.bytesFp32 = s.parameters * 4;
  s.bytesBf16 = s.parameters * 2;
  s.bytesFp16 = s.parameters * 2;
  s.bytesLoaded = out->model->weightBytes();
  s.device = QString::fromStdString(out->model->options().device);
  s.dtype = QString::fromStdString(dtype);
  s.computeDtype = QString::fromStdString(out->model->computeDtype());
  s.tokenizer = tokText;
  s.chatFamily = QString::fromLatin1(chatFamilyName(out->family));
  s.canGenerate = out->tokenizer != nullptr;
  s.linear = QString::fromStdString(gpu::linearName(out->model->options().linear));
  s.engine = QString::fromStdString(out->model->engineDescription());
  s.activationSparsity = thresholdsRun.isEmpty() ? out->model->options().activationSparsity : sparsity;
  s.activationThresholds = thresholdsRun;
  s.activationThresholdsRunId = QString::fromStdString(thresholdsRunId);
  s.hasSparseFile =
      std::filesystem::exists(out->dir / "model.sdwsparse") || std::filesystem::exists(out->dir / gpu::kSpmspvFileName);

  // embeddings first, then the projections in checkpoint order (lm_head last)
  widgets::ModuleRow embed;
  embed.name = QStringLiteral("model.embed_tokens");
  embed.kind = QStringLiteral("embed_tokens");
  embed.outFeatures = c.vocabSize;
  embed.inFeatures = c.hiddenSize;
  embed.dtype = s.dtype;
  embed.bytes = static_cast<quint64>(c.vocabSize) * static_cast<quint64>(c.hiddenSize) * gpu::dtypeBytes(dtype);
  if (c.isGemma()) embed.note = QStringLiteral("rows scaled by sqrt(hidden_size)");
  out->modules.push_back(embed);
  for (const gpu::ModuleInfo& m : out->model->modules()) {
    widgets::ModuleRow r;
    r.name = QString::fromStdString(m.name);
    r.kind = QString::fromStdString(m.kind);
    r.layer = m.layer;
    r.outFeatures = m.outFeatures;
    r.inFeatures = m.inFeatures;
    r.dtype = QString::fromStdString(m.dtype);
    r.bytes = m.bytes;
    if (m.kind == "lm_head" && c.tieWordEmbeddings) r.note = QStringLiteral("tied to model.embed_tokens");
    out->modules.push_back(r);
  }
  return out;
}

QString stopReasonText(gpu::StopReason r) {
  switch (r) {
    case gpu::StopReason::MaxTokens: return QStringLiteral("max new tokens reached");
    case gpu::StopReason::StopToken: return QStringLiteral("end of text");
    case gpu::StopReason::Callback: return QStringLiteral("stopped");
    case gpu::StopReason::ContextFull: return QStringLiteral("context full");
  }
  return {};
}

}  // namespace

QString sampleModelDir() {
  const QString rel = QStringLiteral("model/brown-llama");
  if (const QByteArray env = qgetenv("SDW_SAMPLES_DIR"); !env.isEmpty())
    return QDir(QString::fromLocal8Bit(env)).filePath(rel);
  // build/bin/sdw -> <source>/samples/model/brown-llama when run from the build tree
  const QDir exeDir(QCoreApplication::applicationDirPath());
  for (const QString& base : {QStringLiteral("../../samples/"), QStringLiteral("../share/sdw/samples/")}) {
    const QString cand = QDir::cleanPath(exeDir.filePath(base + rel));
    if (QFileInfo(cand).isDir()) return cand;
  }
  return QStringLiteral(SDW_SOURCE_DIR "/samples/") + rel;
}

ModelController::ModelController(JobManager* jobs, QObject* parent) : QObject(parent), jobs_(jobs) {
  qRegisterMetaType<sdw::widgets::ModelSummary>("sdw::widgets::ModelSummary");
  qRegisterMetaType<QVector<sdw::widgets::RunChoice>>("QVector<sdw::widgets::RunChoice>");
}

void ModelController::attach(widgets::ModelPanel* panel) {
  const gpu::DeviceInfo& dev = gpu::deviceInfo();
  panel->setCudaAvailable(dev.cudaAvailable, QString::fromStdString(dev.reason));
  panel->setSampleDir(sampleModelDir());
  connect(panel, &widgets::ModelPanel::loadRequested, this,
          [this](const QString& dir, const QString& device, const QString& dtype, const QString& linear,
                 double activationSparsity, const QString& activationThresholds) {
            load(dir, device, dtype, linear, activationSparsity, activationThresholds);
          });
  connect(panel, &widgets::ModelPanel::cancelLoadRequested, this, &ModelController::cancelLoad);
  connect(panel, &widgets::ModelPanel::generateRequested, this,
          [this](const widgets::GenerateSettings& s) { generate(s); });
  connect(panel, &widgets::ModelPanel::stopRequested, this, &ModelController::stop);
  connect(this, &ModelController::loadStarted, panel, &widgets::ModelPanel::beginLoading);
  connect(this, &ModelController::loadProgress, panel, &widgets::ModelPanel::setLoadProgress);
  connect(this, &ModelController::modelLoaded, panel, &widgets::ModelPanel::setModel);
  connect(this, &ModelController::loadEnded, panel, &widgets::ModelPanel::endLoading);
  connect(this, &ModelController::generationStarted, panel, &widgets::ModelPanel::beginGeneration);
  connect(this, &ModelController::textStreamed, panel, &widgets::ModelPanel::appendText);
  connect(this, &ModelController::generationEnded, panel, &widgets::ModelPanel::endGeneration);
  connect(this, &ModelController::calibrationRunsFound, panel, &widgets::ModelPanel::setCalibrationRuns);
  if (current_) panel->setModel(current_->summary, current_->modules);
}

QString ModelController::modelDir() const { return current_ ? current_->summary.dir : QString(); }

widgets::ModelSummary ModelController::summary() const {
  return current_ ? current_->summary : widgets::ModelSummary{};
}

JobId ModelController::setWorkspace(const QString& dir) {
  if (!jobs_) return 0;
  return jobs_->start(Job<QVector<widgets::RunChoice>>{
      .name = tr("Find calibration runs"),
      .slot = &scan_,
      .context = this,
      .work = [dir](const sdw::ProgressFn&) { return findCalibrationRuns(dir); },
      .finished = [this](const QVector<widgets::RunChoice>& runs) { Q_EMIT calibrationRunsFound(runs); },
      .failed = [this](const QString& m) { Q_EMIT error(tr("cannot list calibration runs: %1").arg(m)); },
  });
}

JobId ModelController::load(const QString& dir, const QString& device, const QString& dtype, const QString& linear,
                            double activationSparsity, const QString& activationThresholds) {
  if (!jobs_) return 0;
  gpu::LoadOptions options{device.toStdString(), dtype.toStdString()};
  options.activationSparsity = activationSparsity;  // outside [0, 1): the load fails and says why
  try {
    options.linear = gpu::parseLinear(linear.toStdString());
  } catch (const std::invalid_argument& e) {
    Q_EMIT error(tr("%1; loading with cuBLAS").arg(QString::fromUtf8(e.what())));
  }
  // The sparse engine reads the folder's packed file; a folder without one
  // still loads, with the default engine, rather than failing.
  if (options.linear == gpu::Linear::Sparse &&
      !QFileInfo::exists(QDir(dir).filePath(QStringLiteral("model.sdwsparse")))) {
    options.linear = gpu::Linear::Cublas;
    Q_EMIT info(tr("%1 has no model.sdwsparse: loading it with cuBLAS instead of the sparse engine").arg(dir));
  }
  // Our kernels' launch configurations for this GPU, as sdw-cli generate uses them.
  if (options.device != "cpu")
    options.tuningFile =
        gpu::defaultTuningPath(std::filesystem::path(SDW_SOURCE_DIR) / "resources", gpu::deviceInfo().name);
  // A load already running is replaced: its result is dropped.
  const JobId id = jobs_->start(Job<std::shared_ptr<LoadedModel>>{
      .name = tr("Load model"),
      .slot = &load_,
      .context = this,
      .work = [dir, options, activationThresholds](const sdw::ProgressFn& p) {
        return loadModel(dir, options, activationThresholds, p);
      },
      .progress =
          [this](const JobUpdate& u) {
            const double mib = 1024.0 * 1024.0;
            const QString text = u.total > 0
                                     ? tr("%1 / %2 MiB").arg(u.done / mib, 0, 'f', 1).arg(u.total / mib, 0, 'f', 1)
                                     : tr("%1 MiB").arg(u.done / mib, 0, 'f', 1);
            Q_EMIT loadProgress(u.fraction, text);
          },
      .finished =
          [this](const std::shared_ptr<LoadedModel>& loaded) {
            current_ = loaded;
            const widgets::ModelSummary& s = current_->summary;
            Q_EMIT modelLoaded(s, current_->modules);
            Q_EMIT info(tr("model loaded: %1 (%2 layers, %3 parameters, %4 on %5; %6)")
                            .arg(s.dir)
                            .arg(s.layers)
                            .arg(s.parameters)
                            .arg(s.dtype, s.device, s.engine));
          },
      .failed =
          [this](const QString& message) {
            const QString m = tr("Cannot load the model: %1").arg(message);
            Q_EMIT loadEnded(current_ ? m + tr(" (still using %1)").arg(current_->summary.dir) : m, true);
            Q_EMIT error(m);
          },
      .cancelled =
          [this, dir] {
            Q_EMIT loadEnded(current_ ? tr("Loading cancelled; still using %1.").arg(current_->summary.dir)
                                      : tr("Loading cancelled."),
                             false);
            Q_EMIT info(tr("model loading cancelled: %1").arg(dir));
          },
  });
  Q_EMIT loadStarted(dir);
  QString how = QString::fromStdString(gpu::linearName(options.linear));
  if (activationSparsity != 0)
    how += QStringLiteral(", ") + widgets::activationSparsityText(activationSparsity, activationThresholds);
  Q_EMIT info(tr("loading model %1 (%2, %3, %4)").arg(dir, device, dtype, how));
  return id;
}

void ModelController::cancelLoad() {
  if (jobs_) jobs_->cancel(load_.id());
}

JobId ModelController::generate(const widgets::GenerateSettings& settings) {
  if (!jobs_) return 0;
  QString refusal;
  if (generate_.busy()) refusal = tr("a generation is already running");
  else if (!current_) refusal = tr("no model is loaded");
  else if (!current_->tokenizer) refusal = tr("this checkpoint has no tokenizer.json");
  if (!refusal.isEmpty()) {
    Q_EMIT error(tr("cannot generate: %1").arg(refusal));
    if (!generate_.busy()) Q_EMIT generationEnded(tr("Cannot generate: %1").arg(refusal), true);
    return 0;
  }

  std::shared_ptr<LoadedModel> loaded = current_;
  gpu::GenerationOptions options;
  options.maxNewTokens = settings.maxNewTokens;
  options.sampling.temperature = settings.temperature;
  options.sampling.topK = settings.topK;
  options.sampling.topP = settings.topP;
  options.sampling.seed = settings.seed;
  options.stopIds = loaded->tokenizer->stopIds();
  for (std::int32_t id : loaded->model->config().eosTokenIds)  // config only: plain data, never changes
    if (std::find(options.stopIds.begin(), options.stopIds.end(), id) == options.stopIds.end())
      options.stopIds.push_back(id);
  const ChatFamily family = settings.chatFormat ? loaded->family : ChatFamily::Plain;
  const std::string prompt = settings.prompt.toStdString();

  const JobId job = jobs_->start(Job<GenerationOutcome, TextChunk>{
      .name = tr("Generate"),
      .slot = &generate_,
      .context = this,
      .work =
          [loaded, options, family, prompt](const sdw::ProgressFn& progress, const JobChannel<TextChunk>& text) {
            using Clock = std::chrono::steady_clock;
            const Tokenizer& tok = *loaded->tokenizer;
            const std::vector<std::int32_t> ids = encodePrompt(tok, family, prompt);
            if (ids.empty()) throw std::runtime_error("the prompt is empty and the tokenizer has no bos token");
            const double max = options.maxNewTokens;
            reportOrThrow(progress, {0, max, "tokens", "prefill"});
            StreamDecoder decoder(tok, /*skipSpecialTokens=*/true);
            Clock::time_point first;
            int n = 0;
            double rate = 0;
            bool stopped = false;
            const gpu::GenerationResult r = loaded->model->generate(ids, options, [&](std::int32_t id) {
              const auto now = Clock::now();
              if (++n == 1) first = now;
              const double secs = std::chrono::duration<double>(now - first).count();
              // decode rate: the first token's time is prefill
              rate = (n >= 2 && secs > 0) ? (n - 1) / secs : 0.0;
              text.send({decoder.push(id), n, rate});
              if (!progress({double(n), max, "tokens", "decode"})) {
                stopped = true;
                return false;
              }
              return true;
            });
            if (r.decodeSeconds > 0 && r.tokens.size() >= 2) rate = double(r.tokens.size() - 1) / r.decodeSeconds;
            text.send({decoder.flush(), n, rate});
            if (stopped) throw sdw::Cancelled();
            GenerationOutcome o;
            o.tokens = static_cast<int>(r.tokens.size());
            o.promptTokens = r.promptTokens;
            o.reason = stopReasonText(r.stopReason);
            o.prefillSeconds = r.prefillSeconds;
            o.decodeSeconds = r.decodeSeconds;
            return o;
          },
      .data =
          [this](const std::vector<TextChunk>& chunks) {
            std::string text;
            for (const TextChunk& c : chunks) text += c.text;
            Q_EMIT textStreamed(QString::fromUtf8(text), chunks.back().tokens, chunks.back().tokensPerSecond);
          },
      .dataIntervalMs = chunkMs_,
      .finished =
          [this](const GenerationOutcome& o) {
            Q_EMIT generationEnded(tr("%1 · prompt %2 tokens, prefill %3 ms")
                                       .arg(o.reason)
                                       .arg(o.promptTokens)
                                       .arg(o.prefillSeconds * 1000.0, 0, 'f', 0),
                                   false);
            Q_EMIT info(tr("generated %1 tokens: %2").arg(o.tokens).arg(o.reason));
          },
      .failed =
          [this](const QString& message) {
            const QString m = tr("Generation failed: %1").arg(message);
            Q_EMIT generationEnded(m, true);
            Q_EMIT error(m);
          },
      .cancelled = [this] { Q_EMIT generationEnded(tr("stopped"), false); },
  });
  Q_EMIT generationStarted(settings.prompt);
  return job;
}

void ModelController::stop() {
  if (jobs_) jobs_->cancel(generate_.id());
}

}  // namespace sdw::app
