#pragma once
// What the epsilon plots display: plain values built by the application from
// an epsilon analysis (gpu/epsilon_analysis.h). Everything computed (eps,
// ratios, the summary, the spectra clipped for a log axis) arrives ready; the
// widgets only draw and format it.

#include <QMetaType>
#include <QString>
#include <QStringList>
#include <QVector>

#include <limits>

namespace sdw::widgets {

inline constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();

// One shared projection input (q/k/v share one, gate/up share one).
struct EpsilonInputData {
  QString name;          // "model.layers.0.self_attn.q_proj"
  QString type;          // "q/k/v", "o", "gate/up", "down"
  QStringList modules;   // full names of the modules reading it
  int layer = -1;
  int dIn = 0;
  int kUsed = 0;
  double epsC = kNoValue;   // the fixed-text ("C4") run
  double epsAR = kNoValue;  // the AR run
  // Noise floors: the eps two runs of that run's process show at its budget
  // (docs/epsilon.md); kNoValue where a run has none.
  double noiseC = kNoValue, noiseAR = kNoValue;
  double noiseReference = kNoValue;
  // Eigenvalues, descending, only the positive ones (a log axis cannot show
  // the rest); the index on the x axis is the position in the full spectrum.
  QVector<double> spectrumReference, spectrumC, spectrumAR;
};

// One module; modules sharing an input share its eps.
struct EpsilonModuleData {
  QString module;        // full checkpoint name
  QString shortName;     // "q_proj"
  int layer = -1;
  int input = -1;        // index into EpsilonData::inputs
  double epsC = kNoValue;
  double epsAR = kNoValue;
  double ratio = kNoValue;  // eps(C) / eps(AR)
  double noiseC = kNoValue, noiseAR = kNoValue;
  int beyondNoise = -1;     // |eps(C) - eps(AR)| > noiseC + noiseAR: 1, 0, or -1 (no noise floor)
};

struct EpsilonData {
  QString path;           // the analysis run file; empty when not saved
  QString referenceLabel; // "reference-heldout.sdw.h5 (ar, 20000 tokens)"
  QString cLabel;         // short name of the fixed-text run, e.g. "C4"
  QString arLabel;        // "AR"; empty with a single run
  QString cFile, arFile;  // file names of the two runs
  int k = 0;
  bool approximate = false;  // a run stored top-k eigenpairs only
  bool hasPair = false;      // two runs: ratios and the summary exist
  QVector<EpsilonInputData> inputs;    // forward order
  QVector<EpsilonModuleData> modules;  // forward order
  // Summary over modules with both eps finite (computed by the engine).
  int summaryModules = 0;
  int summaryArLower = 0;
  double shareArLower = kNoValue;  // [0, 1]
  double medianRatio = kNoValue;
  double ratioQ1 = kNoValue;
  double ratioQ3 = kNoValue;
  // Noise floors: modules with both, of those beyond them, and of those where
  // AR is lower; why a run has none ("" when it has one).
  int noiseModules = 0;
  int beyondNoise = 0;
  int arLowerBeyondNoise = 0;
  QString cNoiseNote, arNoiseNote, referenceNoiseNote;
  // From the engine (core/decoding_checks.h): a run decoded otherwise than the
  // reference or on its prompts; each run's decoding and prompt set.
  QStringList warnings, notes;

  bool isEmpty() const { return inputs.isEmpty(); }
  bool hasNoise() const { return noiseModules > 0; }
  // "AR lower on 87.5% of modules (14 of 16), median ratio 1.81 (IQR 1.20-2.40);
  // 9 of 16 beyond the noise floor (AR lower on 8)"
  QString summaryLine() const;
  // Why there is no noise floor, in words; empty when there is one.
  QString noiseNote() const;
};

// Number formatting shared by the table, the tool tips and the CSV.
QString formatEps(double v);

}  // namespace sdw::widgets

Q_DECLARE_METATYPE(sdw::widgets::EpsilonData)
