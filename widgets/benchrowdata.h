#pragma once
// What the Benchmark panel displays of one measured kernel: plain values
// built by the application from the benchmark's rows (gpu::BenchRow,
// app/gui/benchmarkcontroller.h). The widgets only draw and format them.

#include <QMetaType>
#include <QString>
#include <QVector>

namespace sdw::widgets {

struct BenchRowData {
  QString model, module;  // module: "q_proj", ..., or "layer" for a whole-layer sequence
  bool layer = false;     // the projections of a layer back to back, not one projection
  qint64 rows = 0, cols = 0;  // out features, in features (0 for a whole-layer sequence)
  QString pattern;  // "2:4", ..., or "-" for dense kernels
  int batch = 1;
  QString kernel;   // "sparse", "cublas", "dense-cpu", ...
  double us = 0;         // median time per call
  double usChained = 0;  // median time per call, launched chained (0: not measured)
  double bytes = 0;      // bytes the kernel must read (weights)
  double gbs = 0;
  double fractionHbm = 0;
  double speedupVsCublas = 0;  // cuBLAS time / this time (0: no baseline)
  double speedupVsDense = 0;   // our dense time / this time
  QString config;              // launch configuration used
  double activationSparsity = -1;  // spMspV rows: the fraction p_x of x skipped; -1 for the other kernels
};

}  // namespace sdw::widgets

Q_DECLARE_METATYPE(sdw::widgets::BenchRowData)
