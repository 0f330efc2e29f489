#include "gpu/kernel_id.h"

#include <stdexcept>

namespace sdw::gpu {

namespace {
// The one name table (order of KernelId). The names are in saved results: never rename.
constexpr KernelInfo kKernels[] = {
    {KernelId::Sparse, "sparse", "sparse", true, std::nullopt},
    {KernelId::Dense, "dense", "dense GEMV (ours)", false, Baseline::OwnDense},
    {KernelId::Cublas, "cublas", "cuBLAS", false, Baseline::Cublas},
    {KernelId::Cusparselt, "cusparselt", "cuSPARSELt", false, Baseline::Cusparselt},
    {KernelId::SparseCpu, "sparse-cpu", "sparse (CPU)", true, std::nullopt},
    {KernelId::DenseCpu, "dense-cpu", "dense GEMV (CPU)", false, Baseline::OwnDense},
    {KernelId::Spmspv, "spmspv", "spMspV (sparse x, sparse W)", false, std::nullopt},
    {KernelId::SpmspvCpu, "spmspv-cpu", "spMspV (CPU)", false, std::nullopt},
};
}  // namespace

const KernelInfo& kernelInfo(KernelId id) {
  for (const auto& k : kKernels)
    if (k.id == id) return k;
  throw std::logic_error("kernelInfo: unknown kernel id");
}

std::string_view kernelName(KernelId id) { return kernelInfo(id).name; }

std::optional<KernelId> kernelFromName(std::string_view name) {
  for (const auto& k : kKernels)
    if (k.name == name) return k.id;
  return std::nullopt;
}

}  // namespace sdw::gpu
