#pragma once
// The words of the walkthrough: each function turns what a panel shows at the
// end of a story step into a sentence or two with the measured numbers. The
// paper's figures (arXiv 2506.20194) are named as the paper's, and whether AR
// calibration helped is said only where this run's numbers show it; where
// they show the opposite, or a mix, the sentence says so.

#include "core/decoding.h"
#include "gpu/bench.h"
#include "widgets/driftdata.h"
#include "widgets/epsilondata.h"
#include "widgets/modelpanel.h"
#include "widgets/prunedata.h"

#include <QString>
#include <QVector>

namespace sdw::app::findings {

// "brown-llama (LlamaForCausalLM): 6 layers, 5,823,744 parameters, 22.2 MiB as float32 on cpu, loaded in 0.3 s"
QString modelLoaded(const widgets::ModelSummary& summary, double seconds);
// "32 tokens at 812.4 tokens/s (batch 1, sampled, T=1.0, top-k off, top-p 1.0) on cpu"
QString generated(int tokens, double tokensPerSecond, const Decoding& decoding, const QString& device);
// The Calibration panel's end message "Complete: NAME — 3,000 tokens in 4.1 s
// (730 tokens/s), 2.3 MiB": its figures, and the rate parsed from it (0 when absent).
QString calibration(const QString& label, const QString& panelMessage);
double tokensPerSecond(const QString& panelMessage);
// Re-forward against exact capture, both in tokens/s.
QString captureComparison(double reforwardRate, double exactRate);
QString epsilon(const widgets::EpsilonData& data);
QString pruning(const widgets::PruningRecordData& record);
// Dense against the two pruned models of the evaluation; `fixedDir` / `arDir`
// tell which row is which (by checkpoint folder).
QString quality(const widgets::QualityData& data, const QString& fixedDir, const QString& arDir);
QString drift(const widgets::DriftData& data, const QString& fixedDir, const QString& arDir);
// Batch-1 medians of the benchmark's rows; `backend` "cuda" or "cpu".
QString bench(const QVector<gpu::BenchRow>& rows, const QString& backend);

}  // namespace sdw::app::findings
