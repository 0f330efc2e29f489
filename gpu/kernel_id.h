#pragma once
// The kernels the benchmark measures, by identity: one enum inside gpu/, one
// name table. Names are what JSON result files and the CLI carry ("sparse",
// "cublas", ...); labels are what a view shows. Plain types.

#include <optional>
#include <string_view>

namespace sdw::gpu {

// Spmspv: sparse weights x sparse activations (batch 1; rows carry an activation sparsity).
enum class KernelId { Sparse, Dense, Cublas, Cusparselt, SparseCpu, DenseCpu, Spmspv, SpmspvCpu };

// What a kernel's times are compared against: speed-ups are "baseline time / this time".
enum class Baseline { Cublas, OwnDense, Cusparselt };

struct KernelInfo {
  KernelId id;
  std::string_view name;   // JSON "kernel", CLI
  std::string_view label;  // for people: "cuBLAS", "dense GEMV (ours)"
  bool sparse;             // one of our bitmask N:M kernels (GPU or CPU)
  std::optional<Baseline> baseline;  // the baseline this kernel provides, if any
};

const KernelInfo& kernelInfo(KernelId id);
std::string_view kernelName(KernelId id);
// The id of a JSON/CLI name; nullopt for names this build does not know.
std::optional<KernelId> kernelFromName(std::string_view name);

}  // namespace sdw::gpu
