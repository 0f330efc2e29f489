#include "gpu/spmv.h"
#include "core/json_limits.h"
#include "gpu/kernels/spmv_tc.h"  // spmvShuffleBatch, spmvShuffleUnroll (plain C++)
#include "gpu/spmv_ops.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>

#ifdef SDW_TORCH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "gpu/kernels/gemv.cuh"
#include "gpu/kernels/launch_space.h"
#include "gpu/kernels/spmv.cuh"
#endif

namespace sdw::gpu {

// ---- launch configurations ----------------------------------------------------

SpmvLaunch defaultSpmvLaunch(std::int64_t rows, std::int64_t cols, int batch, int smCount) {
  SpmvLaunch c;
  const std::int64_t tiles = (rows + 31) / 32, words = cols / 32;
  // About four blocks per SM, each with at least 32 words to walk.
  c.splitK = static_cast<int>(std::clamp<std::int64_t>((4 * smCount + tiles - 1) / std::max<std::int64_t>(tiles, 1), 1,
                                                       std::max<std::int64_t>(1, std::min<std::int64_t>(16, words / 32))));
  c.unroll = batch <= 2 ? 2 : 1;
  return c;
}

SpmvLaunch xShuffleLaunch(SpmvLaunch tuned, const SpmvLaunch& tuned1, bool shuffle) {
  const bool tunedShuffle = kernels::spmvShuffleUnroll(tuned.unroll);
  if (!shuffle) {
    if (tunedShuffle) tuned.warps = std::min(tuned.warps, 8), tuned.unroll = 2, tuned.cluster = -1;
    return tuned;
  }
  if (tunedShuffle) return tuned;
  SpmvLaunch c = tuned1;
  const int u = c.unroll > 10 && c.unroll < 100 ? c.unroll % 10 : c.unroll;
  c.unroll = 200 + std::clamp(u, 1, 3);
  return c;
}

bool xShuffleFromEnv(int batch) {
  if (!kernels::spmvShuffleBatch(batch)) return false;
  const char* env = std::getenv(batch == 2 ? "SDW_SPMV_B2" : "SDW_SPMV_B34");
  return !(env && std::string(env) == "staged");
}

GemvLaunch defaultGemvLaunch(std::int64_t rows, std::int64_t cols, int batch, int smCount) {
  GemvLaunch c;
  c.unroll = batch <= 2 ? 2 : 1;
  const std::int64_t blocks = (rows + c.warps * c.rowsPerWarp - 1) / (c.warps * c.rowsPerWarp);
  c.splitK = static_cast<int>(std::clamp<std::int64_t>((4 * smCount + blocks - 1) / std::max<std::int64_t>(blocks, 1), 1,
                                                       std::max<std::int64_t>(1, std::min<std::int64_t>(8, cols / 2048))));
  return c;
}

std::string defaultTuningPath(const std::filesystem::path& resourcesDir, const std::string& deviceName) {
  if (deviceName.empty()) return {};
  std::string name;
  for (char c : deviceName)
    name += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c)) : '-';
  const std::filesystem::path p = resourcesDir / "tuning" / (name + ".json");
  return std::filesystem::exists(p) ? p.string() : std::string();
}

TuningTable TuningTable::load(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path.string() + ": cannot open tuning table");
  TuningTable t;
  try {
    const auto j = readJsonFileBounded(path);
    t.device = j.value("device", "");
    t.hbmReadGBs = j.value("hbm_read_gbs", 0.0);
    for (const auto& e : j.at("entries")) {
      TuningEntry te;
      te.rows = e.at("rows");
      te.cols = e.at("cols");
      te.batch = e.at("batch");
      te.dtype = e.value("dtype", "bf16");
      // "cluster" is optional; "sparse_chained" / "dense_chained" too (launched with pdl).
      const auto sparse = [](const nlohmann::json& c, bool pdl) {
        return SpmvLaunch{c.at("warps"), c.at("unroll"), c.at("split_k"), c.value("cluster", -1), pdl};
      };
      const auto dense = [](const nlohmann::json& c, bool pdl) {
        return GemvLaunch{c.at("warps"), c.at("rows_per_warp"), c.at("unroll"), c.at("split_k"), pdl};
      };
      te.sparse = sparse(e.at("sparse"), false);
      te.sparseUs = e.at("sparse").value("us", 0.0);
      te.dense = dense(e.at("dense"), false);
      te.denseUs = e.at("dense").value("us", 0.0);
      if (const auto it = e.find("sparse_chained"); it != e.end())
        te.sparseChained = sparse(*it, true), te.sparseChainedUs = it->value("us", 0.0);
      if (const auto it = e.find("dense_chained"); it != e.end())
        te.denseChained = dense(*it, true), te.denseChainedUs = it->value("us", 0.0);
      if (const auto it = e.find("sparse_step"); it != e.end())
        te.sparseStep = sparse(*it, it->value("pdl", true)), te.sparseStepUs = it->value("us", 0.0);
      if (const auto it = e.find("sparse_step_m16"); it != e.end())
        te.sparseStepM16 = sparse(*it, it->value("pdl", true)), te.sparseStepM16Us = it->value("us", 0.0);
      if (const auto it = e.find("dense_step"); it != e.end())
        te.denseStep = dense(*it, it->value("pdl", true)), te.denseStepUs = it->value("us", 0.0);
      t.entries_.push_back(te);
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path.string() + ": not a tuning table: " + e.what());
  }
  return t;
}

void TuningTable::save(const std::filesystem::path& path) const {
  nlohmann::json j;
  j["device"] = device;
  j["hbm_read_gbs"] = hbmReadGBs;
  j["entries"] = nlohmann::json::array();
  const auto sparseJson = [](const SpmvLaunch& c, double us) {
    return nlohmann::json{{"warps", c.warps}, {"unroll", c.unroll}, {"split_k", c.splitK}, {"cluster", c.cluster}, {"us", us}};
  };
  const auto denseJson = [](const GemvLaunch& c, double us) {
    return nlohmann::json{
        {"warps", c.warps}, {"rows_per_warp", c.rowsPerWarp}, {"unroll", c.unroll}, {"split_k", c.splitK}, {"us", us}};
  };
  for (const auto& e : entries_) {
    nlohmann::json o{{"rows", e.rows},
                     {"cols", e.cols},
                     {"batch", e.batch},
                     {"dtype", e.dtype},
                     {"sparse", sparseJson(e.sparse, e.sparseUs)},
                     {"dense", denseJson(e.dense, e.denseUs)}};
    if (e.sparseChained) o["sparse_chained"] = sparseJson(*e.sparseChained, e.sparseChainedUs);
    if (e.denseChained) o["dense_chained"] = denseJson(*e.denseChained, e.denseChainedUs);
    if (e.sparseStep) {
      o["sparse_step"] = sparseJson(*e.sparseStep, e.sparseStepUs);
      o["sparse_step"]["pdl"] = e.sparseStep->pdl;
    }
    if (e.sparseStepM16) {
      o["sparse_step_m16"] = sparseJson(*e.sparseStepM16, e.sparseStepM16Us);
      o["sparse_step_m16"]["pdl"] = e.sparseStepM16->pdl;
    }
    if (e.denseStep) {
      o["dense_step"] = denseJson(*e.denseStep, e.denseStepUs);
      o["dense_step"]["pdl"] = e.denseStep->pdl;
    }
    j["entries"].push_back(o);
  }
  std::ofstream out(path);
  if (!out) throw std::runtime_error(path.string() + ": cannot write tuning table");
  out << j.dump(1) << "\n";
}

void TuningTable::put(const TuningEntry& e) {
  for (auto& x : entries_)
    if (x.rows == e.rows && x.cols == e.cols && x.batch == e.batch && x.dtype == e.dtype) {
      TuningEntry merged = e;  // chained configurations the new entry lacks are kept
      if (!merged.sparseChained) merged.sparseChained = x.sparseChained, merged.sparseChainedUs = x.sparseChainedUs;
      if (!merged.denseChained) merged.denseChained = x.denseChained, merged.denseChainedUs = x.denseChainedUs;
      if (!merged.sparseStep) merged.sparseStep = x.sparseStep, merged.sparseStepUs = x.sparseStepUs;
      if (!merged.sparseStepM16) merged.sparseStepM16 = x.sparseStepM16, merged.sparseStepM16Us = x.sparseStepM16Us;
      if (!merged.denseStep) merged.denseStep = x.denseStep, merged.denseStepUs = x.denseStepUs;
      x = merged;
      return;
    }
  entries_.push_back(e);
}

const TuningEntry* TuningTable::find(std::int64_t rows, std::int64_t cols, int batch, const std::string& dtype) const {
  const TuningEntry* best = nullptr;
  double bestDist = 1e300;
  for (const auto& e : entries_) {
    if (e.batch != batch) continue;
    const double d = std::abs(std::log(double(e.rows) / rows)) + std::abs(std::log(double(e.cols) / cols)) +
                     (e.dtype == dtype ? 0.0 : 1e-3);
    if (d < bestDist) bestDist = d, best = &e;
  }
  return best && bestDist < 0.7 ? best : nullptr;  // within about 2x per dimension
}

const TuningEntry* TuningTable::exact(std::int64_t rows, std::int64_t cols, int batch, const std::string& dtype) const {
  for (const auto& e : entries_)
    if (e.rows == rows && e.cols == cols && e.batch == batch && e.dtype == dtype) return &e;
  return nullptr;
}

TuningEntry TuningTable::entry(std::int64_t rows, std::int64_t cols, int batch, const std::string& dtype,
                               int smCount) const {
  if (const TuningEntry* x = exact(rows, cols, batch, dtype)) return *x;
  TuningEntry e;
  e.rows = rows, e.cols = cols, e.batch = batch, e.dtype = dtype;
  e.sparse = sparse(rows, cols, batch, dtype, smCount);
  e.dense = dense(rows, cols, batch, dtype, smCount);
  return e;
}

SpmvLaunch TuningTable::sparse(std::int64_t rows, std::int64_t cols, int batch, const std::string& dtype,
                               int smCount, bool chained) const {
  const TuningEntry* e = find(rows, cols, batch, dtype);
  SpmvLaunch c = !e ? defaultSpmvLaunch(rows, cols, batch, smCount)
                    : chained && e->sparseChained ? *e->sparseChained : e->sparse;
  c.pdl = chained;
  if (kernels::spmvShuffleBatch(batch))
    c = xShuffleLaunch(c, sparse(rows, cols, 1, dtype, smCount, chained), xShuffleFromEnv(batch));
  return c;
}

std::optional<SpmvLaunch> TuningTable::sparseStep(std::int64_t rows, std::int64_t cols, int batch,
                                                  const std::string& dtype, bool tensorCores, int patternM) const {
  const TuningEntry* e = exact(rows, cols, batch, dtype);
  if (!e) return std::nullopt;
  // 8:16 and 16:32: their own entry where it was tuned on this path; else, on the CUDA cores (whose
  // kernel reads every pattern alike), the batch's other entry.
  if (patternM >= 16 && e->sparseStepM16 && onTensorCores(*e->sparseStepM16) == tensorCores) return e->sparseStepM16;
  if (patternM >= 16 && tensorCores) return std::nullopt;  // 2:4's tensor-core launch is not theirs
  if (!e->sparseStep || onTensorCores(*e->sparseStep) != tensorCores) return std::nullopt;
  return e->sparseStep;
}

std::optional<GemvLaunch> TuningTable::denseStep(std::int64_t rows, std::int64_t cols, int batch,
                                                 const std::string& dtype) const {
  const TuningEntry* e = exact(rows, cols, batch, dtype);
  return e ? e->denseStep : std::nullopt;
}

GemvLaunch TuningTable::dense(std::int64_t rows, std::int64_t cols, int batch, const std::string& dtype,
                              int smCount, bool chained) const {
  const TuningEntry* e = find(rows, cols, batch, dtype);
  GemvLaunch c = !e ? defaultGemvLaunch(rows, cols, batch, smCount)
                    : chained && e->denseChained ? *e->denseChained : e->dense;
  c.pdl = chained;
  return c;
}

// ---- torch entry points -------------------------------------------------------

DeviceBitmask toDeviceLayout(const sparse::PackedMatrix& p, const at::Device& device) {
  sparse::validate(p);
  const std::int64_t G = p.cols / 32, tiles = (p.rows + 31) / 32, padRows = tiles * 32;
  // Row-major [rows, G, 16] / [rows, G], padded with inert rows, then tiled.
  auto v = at::zeros({padRows, G, 16}, at::kShort);
  auto m = at::full({padRows, G}, 0x0000ffff, at::kInt);
  std::memcpy(v.data_ptr(), p.values.data(), p.values.size() * 2);
  std::memcpy(m.data_ptr(), p.masks.data(), p.masks.size() * 4);
  DeviceBitmask d;
  d.values = v.view({tiles, 32, G, 16}).permute({0, 2, 1, 3}).contiguous().view({-1}).to(device);
  d.masks = m.view({tiles, 32, G}).permute({0, 2, 1}).contiguous().view({-1}).to(device);
  d.rows = p.rows;
  d.cols = p.cols;
  d.pattern = p.pattern;
  d.dtype = p.dtype;
  return d;
}

at::Tensor interleaveBatch(const at::Tensor& x) {
  TORCH_CHECK(x.dim() == 2 && x.size(0) >= 1 && x.size(0) <= 8, "x must be [batch 1..8, cols], got ", x.sizes());
  const std::int64_t b = x.size(0);
  const std::int64_t xs = b <= 1 ? 1 : b == 2 ? 2 : b <= 4 ? 4 : 8;
  auto out = at::zeros({x.size(1), xs}, x.options());
  out.narrow(1, 0, b).copy_(x.t());
  return out;
}

namespace {
#ifdef SDW_TORCH_CUDA
kernels::DType kernelDType(at::ScalarType t) {
  if (t == at::kBFloat16) return kernels::DType::BF16;
  if (t == at::kHalf) return kernels::DType::F16;
  TORCH_CHECK(false, "16-bit float expected, got ", t);
  return kernels::DType::BF16;
}
at::ScalarType scalarType(sparse::DType d) { return d == sparse::DType::BF16 ? at::kBFloat16 : at::kHalf; }
#endif
void checkOut(const at::Tensor& x, const at::Tensor& y, std::int64_t rows) {
  TORCH_CHECK(y.dim() == 2 && y.size(0) == x.size(0) && y.size(1) == rows && y.stride(1) == 1,
              "y must be a [", x.size(0), ", ", rows, "] view with unit column stride, got ", y.sizes());
  TORCH_CHECK(y.scalar_type() == x.scalar_type(), "y must have x's dtype");
}
}  // namespace

void bitmaskSpmvInto(const DeviceBitmask& w, const at::Tensor& x, at::Tensor& y, const SpmvLaunch& cfg) {
  TORCH_CHECK(x.dim() == 2 && x.size(1) == w.cols, "x must be [batch, ", w.cols, "], got ", x.sizes());
  checkOut(x, y, w.rows);
#ifdef SDW_TORCH_CUDA
  TORCH_CHECK(x.is_cuda() && w.values.is_cuda() && y.is_cuda(), "bitmaskSpmvInto: CUDA tensors expected");
  TORCH_CHECK(x.scalar_type() == scalarType(w.dtype), "x must have the weights' dtype");
  const c10::cuda::CUDAGuard guard(x.device());
  const auto xi = interleaveBatch(x);
  const int batch = static_cast<int>(x.size(0));
  const kernels::SpmvConfig kc = kernels::toConfig(cfg, cfg.pdl);
  const auto wsN = kernels::spmvWorkspaceFloats(w.rows, w.cols, batch, kc);
  auto ws = at::empty({static_cast<std::int64_t>(std::max<std::size_t>(wsN, 1))}, x.options().dtype(at::kFloat));
  auto counters = at::zeros({kernels::spmvTiles(w.rows)}, x.options().dtype(at::kInt));
  const cudaError_t err = kernels::launchBitmaskSpmv(
      w.values.data_ptr(), reinterpret_cast<const std::uint32_t*>(w.masks.data_ptr()), kernelDType(x.scalar_type()),
      w.rows, w.cols, xi.data_ptr(), batch, y.data_ptr(), y.stride(0), kc, ws.data_ptr<float>(),
      reinterpret_cast<unsigned*>(counters.data_ptr()), c10::cuda::getCurrentCUDAStream());
  TORCH_CHECK(err == cudaSuccess, "bitmask SpMV kernel: ", cudaGetErrorString(err));
#else
  (void)cfg;
  TORCH_CHECK(false, "bitmaskSpmvInto: this build has no CUDA kernels (use spmvCpu)");
#endif
}

void denseGemvInto(const at::Tensor& w, const at::Tensor& x, at::Tensor& y, const GemvLaunch& cfg) {
  TORCH_CHECK(w.dim() == 2 && w.is_contiguous(), "w must be a contiguous [rows, cols] matrix");
  TORCH_CHECK(x.dim() == 2 && x.size(1) == w.size(1) && x.is_contiguous(), "x must be contiguous [batch, ",
              w.size(1), "], got ", x.sizes());
  checkOut(x, y, w.size(0));
#ifdef SDW_TORCH_CUDA
  TORCH_CHECK(x.is_cuda() && w.is_cuda() && y.is_cuda(), "denseGemvInto: CUDA tensors expected");
  TORCH_CHECK(x.scalar_type() == w.scalar_type(), "x must have w's dtype");
  const c10::cuda::CUDAGuard guard(x.device());
  const int batch = static_cast<int>(x.size(0));
  const kernels::GemvConfig kc = kernels::toConfig(cfg, cfg.pdl);
  const auto wsN = kernels::gemvWorkspaceFloats(w.size(0), batch, kc);
  auto ws = at::empty({static_cast<std::int64_t>(std::max<std::size_t>(wsN, 1))}, x.options().dtype(at::kFloat));
  auto counters = at::zeros({kernels::gemvCounters(w.size(0), kc)}, x.options().dtype(at::kInt));
  const cudaError_t err = kernels::launchDenseGemv(w.data_ptr(), kernelDType(w.scalar_type()), w.size(0), w.size(1),
                                                   x.data_ptr(), batch, y.data_ptr(), y.stride(0), kc,
                                                   ws.data_ptr<float>(), reinterpret_cast<unsigned*>(counters.data_ptr()),
                                                   c10::cuda::getCurrentCUDAStream());
  TORCH_CHECK(err == cudaSuccess, "dense GEMV kernel: ", cudaGetErrorString(err));
#else
  (void)cfg;
  TORCH_CHECK(false, "denseGemvInto: this build has no CUDA kernels (use gemvCpu)");
#endif
}

}  // namespace sdw::gpu
