#pragma once
// What the End-to-end decode view (widgets/decodebenchview.h) displays and
// asks for: plain values built by the application from the decode benchmark's
// results and its JSON (gpu/bench_decode.h, gpu/bench_decode_report.h, through
// app/gui/decodebenchcontroller.h). The widgets only draw and format them.

#include <QMetaType>
#include <QString>
#include <QStringList>
#include <QVector>

namespace sdw::widgets {

// One (config, linear, pattern, batch) row of a run or a results file.
struct DecodeRowData {
  QString config;        // "llama-3.1-8b", "bench-tiny", a checkpoint folder's name
  QString architecture;  // "LlamaForCausalLM"
  QString linear;        // "cublas", "dense", "sparse", "eager"
  QString pattern;       // sparse: "2:4", ...; else empty
  QString engine;        // how the steps ran (Model::engineDescription())
  QString dtype;
  int batch = 1;
  int context = 0;
  int warmup = 0;
  int timedSteps = 0;
  qint64 parameters = 0;
  double medianMs = 0, p10Ms = 0, p90Ms = 0;
  double tokensPerSecond = 0;       // batch / median step
  double gbs = 0;                   // bytes per step / median step
  double limitTokensPerSecond = 0;  // batch x measured read bandwidth / bytes per step
  double ratioToLimit = 0;          // tokensPerSecond / limitTokensPerSecond
  double bytesPerStep = 0;
  double memoryBytes = 0;  // what the model held on its device after the timed steps
  int packedProjections = 0;
  // Decode-engine rows: the SpMV / GEMV launches of one step, and how many of them took their
  // launch from a step entry of the tuning table (`bench decode --tune-step`); -1 where the
  // row does not say (cuBLAS, eager, files from before).
  int engineLaunches = -1, stepEntryLaunches = -1;
  QVector<double> stepMs;  // the timed steps, in order
};

// One timed decode step as the live chart draws it.
struct DecodeStepPoint {
  QString cell;    // the series: "bench-tiny · sparse 2:4 · batch 2"
  QString linear;  // colour: the engine ...
  QString pattern;
  int batch = 1;  // ... and its shade
  int index = 0;  // timed steps since the run started, from 0
  double ms = 0;
  double tokensPerSecond = 0;  // batch x 1000 / ms
};

// What the sparse speed-ups are over: our dense engine (the dense GEMV; where it did not run,
// the best dense engine that did), or the best dense engine of the group (cuBLAS or ours,
// whichever decoded faster: the yardstick at batch 2-8, where cuBLAS often wins).
enum class DecodeBaseline { OwnDense, BestDense };

// Per (config, batch) group: each sparse pattern's speed-up over the dense
// baseline and the bandwidth limit of that speed-up, computed by the caller.
struct DecodeSpeedupBars {
  QStringList groups;                 // "bench-tiny\nbatch 1", in first-seen order
  QStringList patterns;               // one bar series each
  QVector<QVector<double>> speedups;  // [pattern][group]; 0: not measured
  QVector<double> limits;             // [group]: dense bytes / sparse bytes per step; 0: unknown
  QStringList baselines;              // [group]: "our dense engine", "cuBLAS (best dense)", ...
};

// A shape the view offers: a name the controller resolves to a config.
struct DecodeConfigChoice {
  QString name;    // "llama3-8b", "bench-tiny"
  QString title;   // "Llama-3.1-8B"
  QString detail;  // "32 layers, hidden 4096, 8.03B parameters"
};

// What Start asks for.
struct DecodeBenchRequest {
  QStringList configs;   // names from the catalog
  QString checkpoint;    // a checkpoint folder benchmarked too (empty: none)
  QStringList linears;   // "cublas", "dense", "sparse", "eager"
  QStringList
      patterns;  // of the sparse engine: N:M or col2:4 / col4:8 (a checkpoint's own packed file sets its pattern)
  QVector<int> batches;
  int context = 512;
  int warmup = 50;
  int tokens = 50;  // timed steps
  QString device = QStringLiteral("cuda");
  QString dtype = QStringLiteral("bfloat16");
  double activationSparsity = 0;  // run-time p_x of every engine (the column layouts skip the dropped inputs)
  // With p_x: fixed |x| thresholds per layer and input set from each model's own prefill
  // (TEAL; DecodeBenchOptions::activationThresholds) instead of each token's top-k.
  bool activationThresholds = false;
};

}  // namespace sdw::widgets

Q_DECLARE_METATYPE(sdw::widgets::DecodeRowData)
Q_DECLARE_METATYPE(sdw::widgets::DecodeStepPoint)
Q_DECLARE_METATYPE(sdw::widgets::DecodeSpeedupBars)
Q_DECLARE_METATYPE(sdw::widgets::DecodeBenchRequest)
