// The decode engine: how a model's projections are held (dense, fused q|k|v and
// gate|up storage, or packed bitmask N:M read from a model.sdwsparse) and how a
// decode step runs on CUDA: embedding, then per layer residual add + RMSNorm,
// one q|k|v projection, q/k norm + RoPE + KV-cache write, split-slot attention,
// o projection, add + RMSNorm, one gate|up projection, SwiGLU, down projection;
// final norm, lm_head, argmax. Gemma 3: the embedding scaled, its (1 + w) norms with
// the attention and MLP outputs normalised before each residual add (one kernel:
// post-norm, add, next norm), per-layer windows and RoPE tables, GELU-tanh, the
// final logits soft-capped in the argmax kernel. Each projection through the selected linear
// (cuBLAS, our dense GEMV, our bitmask SpMV). The whole step is captured once as
// a CUDA graph and replayed per token with the position on the device.
// On the CPU the eager forward pass (gpu/llama_forward.cpp) decodes, with the
// CPU bitmask SpMV for packed projections.

#include "gpu/engine_internal.h"

#include "core/name_table.h"
#include "core/sparse_file.h"
#include "gpu/device.h"
#include "gpu/kernels/spmv_tc.h"  // spmvTensorCoresFromBatch (plain C++)
#include "gpu/spmspv_file.h"
#include "gpu/spmv_cpu.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

#if defined(SDW_TORCH_CUDA) && defined(SDW_HAVE_CUDA_KERNELS)
#define SDW_ENGINE_CUDA 1
#include "gpu/kernels/actsparse.cuh"
#include "gpu/kernels/decode.cuh"
#include "gpu/kernels/launch_space.h"
#include "gpu/kernels/spmspv.cuh"

#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

namespace sdw::gpu {

namespace {
inline constexpr NameEntry<Linear> kLinearNames[] = {
    {Linear::Cublas, "cublas"}, {Linear::Dense, "dense"}, {Linear::Sparse, "sparse"}};

at::Tensor& denseOf(LayerWeights& L, int kind) {
  switch (kind) {
    case kProjQ: return L.q;
    case kProjK: return L.k;
    case kProjV: return L.v;
    case kProjO: return L.o;
    case kProjGate: return L.gate;
    case kProjUp: return L.up;
    default: return L.down;
  }
}

std::string shapeText(std::int64_t r, std::int64_t c) {
  return "[" + std::to_string(r) + ", " + std::to_string(c) + "]";
}

sparse::DType sparseDTypeOf(at::ScalarType t) { return t == at::kHalf ? sparse::DType::F16 : sparse::DType::BF16; }
[[maybe_unused]] at::ScalarType scalarOf(sparse::DType d) { return d == sparse::DType::F16 ? at::kHalf : at::kBFloat16; }

#ifdef SDW_ENGINE_CUDA
void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("decode engine: ") + what + ": " + cudaGetErrorString(e));
}
kernels::DType kdtOf(at::ScalarType t) {
  if (t == at::kBFloat16) return kernels::DType::BF16;
  if (t == at::kHalf) return kernels::DType::F16;
  return kernels::DType::F32;
}
kernels::DType kdtOf(sparse::DType d) { return d == sparse::DType::F16 ? kernels::DType::F16 : kernels::DType::BF16; }
int smCount() {
  static const int n = [] {
    cudaDeviceProp p{};
    return cudaGetDeviceProperties(&p, 0) == cudaSuccess ? p.multiProcessorCount : 132;
  }();
  return n;
}
std::string tuningDtype(at::ScalarType t) { return t == at::kHalf ? "fp16" : "bf16"; }
#endif

}  // namespace

std::map<std::string, std::pair<int, int>> projectionIndex(const Model::Impl& m) {
  std::map<std::string, std::pair<int, int>> index;
  for (std::size_t l = 0; l < m.names.size(); ++l)
    for (int k = 0; k < 7; ++k) index[m.names[l][static_cast<std::size_t>(k)]] = {static_cast<int>(l), k};
  return index;
}

namespace {

// The dense tensor unpacked from a packed projection, in `dtype` on the model's device.
at::Tensor unpackToDense(const Model::Impl& m, const PackedProj& p, at::ScalarType dtype) {
  if (m.device.is_cpu()) {
    const std::vector<float> d = sparse::unpack(p.host);
    return at::from_blob(const_cast<float*>(d.data()), {p.host.rows, p.host.cols}, at::TensorOptions().dtype(at::kFloat))
        .to(dtype, false, true);
  }
#ifdef SDW_ENGINE_CUDA
  at::Tensor out = at::empty({p.dev.rows, p.dev.cols}, at::TensorOptions().dtype(dtype).device(m.device));
  ck(kernels::launchUnpackBitmask(p.dev.values.data_ptr(), reinterpret_cast<const std::uint32_t*>(p.dev.masks.data_ptr()),
                                  kdtOf(p.dev.dtype), p.dev.rows, p.dev.cols, out.data_ptr(), kdtOf(dtype),
                                  c10::cuda::getCurrentCUDAStream()),
     "unpack");
  return out;
#else
  throw std::runtime_error("decode engine: this build has no CUDA kernels to unpack a sparse projection");
#endif
}

// The projection a packed file's module replaces, after the checks every packed file
// passes: a projection of this model, named once, of the checkpoint's shape, its values in
// the checkpoint's 16-bit dtype and in the dtype the model is loaded as.
PackedProj& packedSlot(Model::Impl& m, EngineState& e, const std::map<std::string, std::pair<int, int>>& index,
                       const std::map<std::string, std::string>& ckDtypes, const std::filesystem::path& file,
                       const std::string& name, std::int64_t rows, std::int64_t cols, sparse::DType dtype) {
  const auto it = index.find(name);
  if (it == index.end())
    throw std::runtime_error(file.string() + ": module '" + name + "' is not a projection of this model (" +
                             std::to_string(m.config.numLayers) + " layers, e.g. " + m.names.front()[0] + ")");
  const auto [layer, kind] = it->second;
  PackedProj& p = e.packed[static_cast<std::size_t>(layer)][static_cast<std::size_t>(kind)];
  if (p.present) throw std::runtime_error(file.string() + ": module '" + name + "' appears twice");
  const at::Tensor& w = denseOf(m.w.layers[static_cast<std::size_t>(layer)], kind);
  if (rows != w.size(0) || cols != w.size(1))
    throw std::runtime_error(file.string() + ": module '" + name + "' is " + shapeText(rows, cols) +
                             " in the sparse file, the checkpoint's is " + shapeText(w.size(0), w.size(1)));
  const std::string fileDt(sparse::dtypeName(dtype));
  const auto ckIt = ckDtypes.find(name + ".weight");
  const std::string ckDt = ckIt == ckDtypes.end() ? "" : ckIt->second;
  if (ckDt != (dtype == sparse::DType::BF16 ? "BF16" : "F16"))
    throw std::runtime_error(file.string() + ": module '" + name + "' holds " + fileDt +
                             " values, the checkpoint's tensor is " + (ckDt.empty() ? "missing" : ckDt));
  if (m.storeDtype != at::kFloat && sparseDTypeOf(m.storeDtype) != dtype)
    throw std::runtime_error(file.string() + ": module '" + name + "' holds " + fileDt +
                             " values, the model is loaded as " + m.options.dtype + " (load it as " +
                             (dtype == sparse::DType::BF16 ? "bfloat16" : "float16") + " or float32)");
  return p;
}
at::Tensor& slotWeight(Model::Impl& m, const std::map<std::string, std::pair<int, int>>& index,
                       const std::string& name) {
  const auto [layer, kind] = index.at(name);
  return denseOf(m.w.layers[static_cast<std::size_t>(layer)], kind);
}

// Reads the column file (model.sdwcolumn) and replaces the matching dense projections by
// their column layout. On CUDA the spMspV kernel reads x in the file's 16-bit dtype, so the
// model must be loaded in it.
void loadColumn(Model::Impl& m, EngineState& e, const std::filesystem::path& file,
                const std::map<std::string, std::string>& ckDtypes) {
  std::vector<SpmspvModule> mods = readSpmspvFile(file);
  if (mods.empty()) throw std::runtime_error(file.string() + ": the column file holds no module");
  const auto index = projectionIndex(m);
  e.pattern = spmspvPatternName(mods.front().matrix.format);
  for (auto& mod : mods) {
    SpmspvMatrix& cm = mod.matrix;
    PackedProj& p = packedSlot(m, e, index, ckDtypes, file, mod.name, cm.rows, cm.cols, cm.dtype);
    if (m.device.is_cuda() && m.computeDtype != scalarOf(cm.dtype))
      throw std::runtime_error(file.string() + ": the spMspV kernel reads x in the file's " +
                               std::string(sparse::dtypeName(cm.dtype)) + ": load the model as " +
                               (cm.dtype == sparse::DType::BF16 ? "bfloat16" : "float16") + " on CUDA");
    at::Tensor& w = slotWeight(m, index, mod.name);
    // The packed values must be the checkpoint's weights (zeros where pruned).
    std::vector<std::uint16_t> bits = unpackSpmspv(cm);
    const at::Tensor unpacked = at::from_blob(bits.data(), {cm.rows, cm.cols}, at::TensorOptions().dtype(at::kShort))
                                    .view(scalarOf(cm.dtype))
                                    .to(w.scalar_type());
    if (!at::equal(unpacked, w.cpu()))
      throw std::runtime_error(file.string() + ": module '" + mod.name +
                               "': the packed weights differ from the checkpoint's (the file belongs to another "
                               "pruning or another model)");
    if (m.device.is_cuda()) {
      p.colChunks = at::from_blob(cm.chunks.data(), {static_cast<std::int64_t>(cm.chunks.size())},
                                  at::TensorOptions().dtype(at::kShort))
                        .to(m.device);
      cm.chunks = {};
      cm.chunks.shrink_to_fit();
    }
    p.col = std::move(cm);
    p.column = true;
    p.present = true;
    w = at::Tensor();  // no dense copy of a packed projection
  }
}

// Reads the packed file and replaces the matching dense projections by their packed form:
// the bitmask file (model.sdwsparse), or else the column file (model.sdwcolumn).
void loadPacked(Model::Impl& m, EngineState& e, const std::filesystem::path& dir,
                const std::map<std::string, std::string>& ckDtypes) {
  std::filesystem::path file = m.options.sparseFile.empty() ? dir / "model.sdwsparse" : m.options.sparseFile;
  if (m.options.sparseFile.empty() && !std::filesystem::exists(file) && std::filesystem::exists(dir / kSpmspvFileName))
    file = dir / kSpmspvFileName;
  if (!std::filesystem::exists(file))
    throw std::runtime_error(file.string() +
                             ": no packed sparse file (sdw-cli prune writes model.sdwsparse next to a checkpoint "
                             "pruned to a row N:M pattern, 2:4 to 16:32, and model.sdwcolumn for col2:4 and col4:8; "
                             "unstructured and other column patterns have none: decode those with --linear dense)");
  if (file.extension() == ".sdwcolumn") {
    loadColumn(m, e, file, ckDtypes);
    return;
  }
  std::vector<sparse::SparseModule> mods = sparse::readSparseFile(file);
  if (mods.empty()) throw std::runtime_error(file.string() + ": the sparse file holds no module");
  const auto index = projectionIndex(m);
  e.pattern = sparse::patternName(mods.front().matrix.pattern);
  for (auto& mod : mods) {
    const auto& pm = mod.matrix;
    PackedProj& p = packedSlot(m, e, index, ckDtypes, file, mod.name, pm.rows, pm.cols, pm.dtype);
    at::Tensor& w = slotWeight(m, index, mod.name);
    if (m.device.is_cpu()) {
      p.host = std::move(mod.matrix);
    } else {
      p.dev = toDeviceLayout(mod.matrix, m.device);
      mod.matrix = {};
    }
    p.present = true;
    // The packed values must be the checkpoint's weights (zeros where pruned).
    const at::Tensor unpacked = unpackToDense(m, p, w.scalar_type());
    if (!at::equal(unpacked, w))
      throw std::runtime_error(file.string() + ": module '" + mod.name +
                               "': the packed weights differ from the checkpoint's (the file belongs to another "
                               "pruning or another model)");
    w = at::Tensor();  // no dense copy of a packed projection
  }
}

// Projections a compressed-tensors checkpoint delivered packed (the loader made no dense copy).
void usePrepacked(Model::Impl& m, EngineState& e, std::vector<sparse::SparseModule> mods,
                  const std::filesystem::path& dir) {
  if (mods.empty())
    throw std::runtime_error(dir.string() + ": no projection of this compressed-tensors checkpoint has a pattern the "
                             "bitmask kernel takes");
  const auto index = projectionIndex(m);
  e.pattern = sparse::patternName(mods.front().matrix.pattern);
  for (auto& mod : mods) {
    const auto it = index.find(mod.name);
    if (it == index.end()) throw std::runtime_error(dir.string() + ": '" + mod.name + "' is not a projection of this model");
    PackedProj& p = e.packed[static_cast<std::size_t>(it->second.first)][static_cast<std::size_t>(it->second.second)];
    if (m.storeDtype != at::kFloat && sparseDTypeOf(m.storeDtype) != mod.matrix.dtype)
      throw std::runtime_error(dir.string() + ": '" + mod.name + "' holds " + std::string(sparse::dtypeName(mod.matrix.dtype)) +
                               " values, the model is loaded as " + m.options.dtype);
    if (m.device.is_cpu()) p.host = std::move(mod.matrix);
    else p.dev = toDeviceLayout(mod.matrix, m.device);
    p.present = true;
  }
}

// Random weights pruned by magnitude to a column pattern (col2:4, col4:8: in each input
// column the N largest |w| of every group of M rows), held in the column layout; the dense
// copies dropped. Projections whose rows are not a multiple of M stay dense.
void packRandomColumn(Model::Impl& m, EngineState& e, kernels::SpmspvFormat format) {
  const int M = kernels::spmspvColumnGroup(format), N = M / 2;
  e.pattern = spmspvPatternName(format);
  const sparse::DType vdt = sparseDTypeOf(m.storeDtype == at::kFloat ? at::kBFloat16 : m.storeDtype);
  if (m.device.is_cuda() && m.computeDtype != scalarOf(vdt))
    throw std::runtime_error(
        "decode engine: the spMspV kernel reads x in bf16 or fp16: load the model as bfloat16 or "
        "float16 on CUDA for " +
        e.pattern);
  for (std::size_t l = 0; l < m.w.layers.size(); ++l)
    for (int k = 0; k < 7; ++k) {
      at::Tensor& w = denseOf(m.w.layers[l], k);
      const std::int64_t rows = w.size(0), cols = w.size(1);
      if (rows % M != 0) continue;
      const at::Tensor w16 = w.to(scalarOf(vdt));
      const at::Tensor groups = w16.to(at::kFloat).abs().view({rows / M, M, cols});
      const at::Tensor idx = std::get<1>(groups.topk(N, 1));
      const at::Tensor keep = at::zeros_like(groups).scatter_(1, idx, 1.f).view({rows, cols}).to(at::kBool);
      const at::Tensor pruned = w16.masked_fill(keep.logical_not(), 0).cpu().contiguous();
      std::vector<std::uint16_t> bits(static_cast<std::size_t>(rows * cols));
      std::memcpy(bits.data(), pruned.data_ptr(), bits.size() * 2);
      PackedProj& p = e.packed[l][static_cast<std::size_t>(k)];
      p.col = packSpmspv(bits, rows, cols, vdt, format);
      if (m.device.is_cuda()) {
        p.colChunks = at::from_blob(p.col.chunks.data(), {static_cast<std::int64_t>(p.col.chunks.size())},
                                    at::TensorOptions().dtype(at::kShort))
                          .to(m.device);
        p.col.chunks = {};
        p.col.chunks.shrink_to_fit();
      }
      p.column = p.present = true;
      w = at::Tensor();
    }
}

// Random weights pruned by magnitude to the pattern, packed; the dense copies dropped.
void packRandom(Model::Impl& m, EngineState& e) {
  if (m.options.randomPattern == "col2:4" || m.options.randomPattern == "col4:8") {
    packRandomColumn(
        m, e, m.options.randomPattern == "col2:4" ? kernels::SpmspvFormat::Column24 : kernels::SpmspvFormat::Column48);
    return;
  }
  const sparse::Pattern pat = sparse::parsePattern(m.options.randomPattern);
  e.pattern = sparse::patternName(pat);
  const sparse::DType vdt = sparseDTypeOf(m.storeDtype == at::kFloat ? at::kBFloat16 : m.storeDtype);
  for (std::size_t l = 0; l < m.w.layers.size(); ++l) {
    for (int k = 0; k < 7; ++k) {
      at::Tensor& w = denseOf(m.w.layers[l], k);
      const std::int64_t rows = w.size(0), cols = w.size(1);
      if (cols % 32 != 0) continue;  // the format needs multiples of 32: stays dense
      PackedProj& p = e.packed[l][static_cast<std::size_t>(k)];
      if (m.device.is_cpu()) {
        const at::Tensor wf = w.to(at::kFloat).contiguous();
        const at::Tensor groups = wf.abs().view({rows, cols / pat.m, pat.m});
        const at::Tensor idx = std::get<1>(groups.topk(pat.n, -1));
        const at::Tensor keep = at::zeros({rows, cols / pat.m, pat.m}, at::kByte).scatter_(2, idx, 1).view({rows, cols});
        p.host = sparse::pack({wf.data_ptr<float>(), static_cast<std::size_t>(wf.numel())},
                              {keep.data_ptr<std::uint8_t>(), static_cast<std::size_t>(keep.numel())}, rows, cols, pat,
                              vdt);
      } else {
#ifdef SDW_ENGINE_CUDA
        const at::Tensor w16 = w.scalar_type() == at::kFloat ? w.to(scalarOf(vdt)) : w;
        const std::int64_t tiles = (rows + 31) / 32, G = cols / 32;
        p.dev.values = at::empty({tiles * G * 32 * 16}, at::TensorOptions().dtype(at::kShort).device(m.device));
        p.dev.masks = at::empty({tiles * G * 32}, at::TensorOptions().dtype(at::kInt).device(m.device));
        ck(kernels::launchPackNm(w16.data_ptr(), kdtOf(vdt), rows, cols, pat.n, pat.m, p.dev.values.data_ptr(),
                                 reinterpret_cast<std::uint32_t*>(p.dev.masks.data_ptr()),
                                 c10::cuda::getCurrentCUDAStream()),
           "pack");
        p.dev.rows = rows;
        p.dev.cols = cols;
        p.dev.pattern = pat;
        p.dev.dtype = vdt;
#else
        throw std::runtime_error("decode engine: this build has no CUDA kernels to pack sparse weights");
#endif
      }
      p.present = true;
      w = at::Tensor();
    }
  }
}

// Fused storage for q|k|v and gate|up (CUDA): the members become views of it.
void fuseGroups(Model::Impl& m, EngineState& e) {
  const std::size_t L = m.w.layers.size();
  e.qkvDense.assign(L, {});
  e.guDense.assign(L, {});
  e.qkvPacked.assign(L, {});
  e.guPacked.assign(L, {});
  e.qkvColumn.assign(L, {});
  e.guColumn.assign(L, {});
  e.qkvBias.assign(L, {});
  for (std::size_t l = 0; l < L; ++l) {
    LayerWeights& W = m.w.layers[l];
    const auto fuse = [&](std::initializer_list<int> kinds, at::Tensor& dense, DeviceBitmask& packed) {
      bool allDense = true, allPacked = true;
      for (const int k : kinds) {
        allDense = allDense && denseOf(W, k).defined();
        allPacked = allPacked && e.packed[l][static_cast<std::size_t>(k)].present &&
                    !e.packed[l][static_cast<std::size_t>(k)].column;
      }
      if (allDense) {
        std::vector<at::Tensor> parts;
        for (const int k : kinds) parts.push_back(denseOf(W, k));
        dense = at::cat(parts, 0);
        std::int64_t off = 0;
        for (const int k : kinds) {
          at::Tensor& w = denseOf(W, k);
          const std::int64_t r = w.size(0);
          w = dense.narrow(0, off, r);
          off += r;
        }
        return;
      }
      if (!allPacked) return;
      std::vector<at::Tensor> vals, masks;
      std::int64_t rows = 0;
      for (const int k : kinds) {
        const DeviceBitmask& d = e.packed[l][static_cast<std::size_t>(k)].dev;
        if (d.rows % 32 != 0) return;  // a member ending mid-tile: kept apart
        vals.push_back(d.values);
        masks.push_back(d.masks);
        rows += d.rows;
      }
      const DeviceBitmask& first = e.packed[l][static_cast<std::size_t>(*kinds.begin())].dev;
      packed.values = at::cat(vals, 0);
      packed.masks = at::cat(masks, 0);
      packed.rows = rows;
      packed.cols = first.cols;
      packed.pattern = first.pattern;
      packed.dtype = first.dtype;
      const std::int64_t G = first.cols / 32;
      std::int64_t tile = 0;
      for (const int k : kinds) {
        DeviceBitmask& d = e.packed[l][static_cast<std::size_t>(k)].dev;
        const std::int64_t t = d.rows / 32;
        d.values = packed.values.narrow(0, tile * G * 32 * 16, t * G * 32 * 16);
        d.masks = packed.masks.narrow(0, tile * G * 32, t * G * 32);
        tile += t;
      }
    };
    // Column-layout members: their chunk buffers in member order are the fused matrix's
    // (tile-major, every member a whole number of 256-row tiles); the members become views.
    const auto fuseColumn = [&](std::initializer_list<int> kinds, PackedProj& fused) {
      const PackedProj& first = e.packed[l][static_cast<std::size_t>(*kinds.begin())];
      std::vector<at::Tensor> parts;
      std::int64_t rows = 0;
      for (const int k : kinds) {
        const PackedProj& p = e.packed[l][static_cast<std::size_t>(k)];
        if (!p.column || p.col.rows % kernels::kSpmspvTileRows != 0 || p.col.cols != first.col.cols ||
            p.col.format != first.col.format || p.col.dtype != first.col.dtype)
          return;
        parts.push_back(p.colChunks);
        rows += p.col.rows;
      }
      fused.colChunks = at::cat(parts, 0);
      fused.col = first.col;  // shape, format and dtype (its chunks live on the device)
      fused.col.rows = rows;
      fused.column = fused.present = true;
      std::int64_t off = 0;
      for (const int k : kinds) {
        PackedProj& p = e.packed[l][static_cast<std::size_t>(k)];
        const std::int64_t n = p.colChunks.numel();
        p.colChunks = fused.colChunks.narrow(0, off, n);
        off += n;
      }
    };
    fuseColumn({kProjQ, kProjK, kProjV}, e.qkvColumn[l]);
    fuseColumn({kProjGate, kProjUp}, e.guColumn[l]);
    fuse({kProjQ, kProjK, kProjV}, e.qkvDense[l], e.qkvPacked[l]);
    if (W.qBias.defined()) e.qkvBias[l] = at::cat({W.qBias, W.kBias, W.vBias}, 0);
    fuse({kProjGate, kProjUp}, e.guDense[l], e.guPacked[l]);
  }
}

}  // namespace

// Every supported architecture, Gemma 3 included; attention soft-capping (which
// transformers does not apply to Gemma 3, so the parser never sets it) has no kernel.
bool engineSupportsArchitecture(const ModelConfig& c) { return !(c.attnLogitSoftcap > 0); }

std::string linearName(Linear l) { return std::string(nameOf(kLinearNames, l)); }
Linear parseLinear(std::string_view s) { return parseName(kLinearNames, "linear", s); }

int EngineState::packedCount() const {
  int n = 0;
  for (const auto& layer : packed)
    for (const auto& p : layer) n += p.present ? 1 : 0;
  return n;
}

void setupEngine(Model::Impl& m, const std::filesystem::path& checkpointDir,
                 const std::map<std::string, std::string>& checkpointDtypes,
                 std::vector<sparse::SparseModule> prepacked, bool fromCompressed) {
  auto e = std::make_shared<EngineState>();
  e->linear = m.options.linear;
  e->packed.resize(m.w.layers.size());
  try {
    const c10::NoGradGuard noGrad;
    if (!m.options.tuningFile.empty() && m.device.is_cuda()) {
      e->tuning = TuningTable::load(m.options.tuningFile);
      e->haveTuning = true;
    }
    if (e->linear == Linear::Sparse) {
      if (checkpointDir.empty()) packRandom(m, *e);
      else if (fromCompressed) usePrepacked(m, *e, std::move(prepacked), checkpointDir);
      else loadPacked(m, *e, checkpointDir, checkpointDtypes);
    }
    if (m.device.is_cuda()) fuseGroups(m, *e);
  } catch (const c10::Error& err) {
    throw std::runtime_error(std::string("decode engine: ") + err.what_without_backtrace());
  }
  m.engine = std::move(e);
}

at::Tensor packedLinear(Model::Impl& m, int layer, int kind, const at::Tensor& x) {
  TORCH_CHECK(m.engine && m.engine->packed[static_cast<std::size_t>(layer)][static_cast<std::size_t>(kind)].present,
              "projection ", m.names[static_cast<std::size_t>(layer)][static_cast<std::size_t>(kind)],
              " has neither dense nor packed weights");
  const PackedProj& p = m.engine->packed[static_cast<std::size_t>(layer)][static_cast<std::size_t>(kind)];
  const std::int64_t K = x.size(-1);
  const std::int64_t N = x.numel() / K;
  std::vector<std::int64_t> outSizes = x.sizes().vec();
  const at::Tensor x2 = x.reshape({N, K});
  if (p.column) {
    // The column layout: the spMspV kernel (CPU: its reference) per row of x; exact zeros
    // (the entries activation sparsity dropped) are skipped.
    outSizes.back() = p.col.rows;
    if (m.device.is_cpu()) {
      const at::Tensor xf = x2.to(at::kFloat).contiguous();
      at::Tensor y = at::empty({N, p.col.rows}, at::TensorOptions().dtype(at::kFloat));
      for (std::int64_t r = 0; r < N; ++r)
        spmspvCpu(p.col, {xf.data_ptr<float>() + r * K, static_cast<std::size_t>(K)}, 0.f,
                  {y.data_ptr<float>() + r * p.col.rows, static_cast<std::size_t>(p.col.rows)});
      return y.view(outSizes).to(x.scalar_type());
    }
#ifdef SDW_ENGINE_CUDA
    const at::Tensor xc = x2.to(scalarOf(p.col.dtype)).contiguous();
    at::Tensor y = at::empty({N, p.col.rows}, xc.options());
    const kernels::SpmspvConfig cfg = kernels::spmspvRunDefaults(p.col.format);  // SDW_SPMSPV_LANES / _WAVEFIT: A/B
    const kernels::SpmspvLayout layout{p.colChunks.data_ptr(), nullptr,     p.col.rows, p.col.cols,
                                       kdtOf(p.col.dtype),     p.col.format};
    // Split-K workspace and counters, made on the first call (the kernel leaves the counters zero).
    PackedProj& slot = m.engine->packed[static_cast<std::size_t>(layer)][static_cast<std::size_t>(kind)];
    if (!slot.colCounters.defined()) {
      const auto wsN = kernels::spmspvWorkspaceFloats(p.col.rows, p.col.cols, cfg);
      slot.colWorkspace =
          at::empty({static_cast<std::int64_t>(std::max<std::size_t>(wsN, 1))}, xc.options().dtype(at::kFloat));
      slot.colCounters = at::zeros({kernels::spmspvCounters(p.col.rows)}, xc.options().dtype(at::kInt));
    }
    const at::Tensor& ws = slot.colWorkspace;
    const at::Tensor& counters = slot.colCounters;
    const auto elem = static_cast<std::int64_t>(xc.element_size());
    for (std::int64_t r = 0; r < N; ++r)
      ck(kernels::launchSpmspv(layout, static_cast<const char*>(xc.data_ptr()) + r * K * elem, 0.f,
                               static_cast<char*>(y.data_ptr()) + r * p.col.rows * elem, cfg, ws.data_ptr<float>(),
                               reinterpret_cast<unsigned*>(counters.data_ptr()), c10::cuda::getCurrentCUDAStream()),
         "spMspV");
    return y.view(outSizes).to(x.scalar_type());
#else
    throw std::runtime_error("decode engine: this build has no CUDA kernels for a column-layout projection");
#endif
  }
  if (m.device.is_cpu()) {
    const at::Tensor xf = x2.to(at::kFloat).contiguous();
    at::Tensor y = at::empty({N, p.host.rows}, at::TensorOptions().dtype(at::kFloat));
    constexpr std::int64_t kRows = 64;  // the CPU kernel's batch limit: longer inputs go in chunks
    for (std::int64_t r0 = 0; r0 < N; r0 += kRows) {
      const std::int64_t n = std::min(kRows, N - r0);
      spmvCpu(p.host, {xf.data_ptr<float>() + r0 * K, static_cast<std::size_t>(n * K)}, static_cast<int>(n),
              {y.data_ptr<float>() + r0 * p.host.rows, static_cast<std::size_t>(n * p.host.rows)}, p.host.rows);
    }
    outSizes.back() = p.host.rows;
    return y.view(outSizes).to(x.scalar_type());
  }
  outSizes.back() = p.dev.rows;
#ifdef SDW_ENGINE_CUDA
  if (N <= 8 && x.scalar_type() == scalarOf(p.dev.dtype)) {
    at::Tensor y = at::empty({N, p.dev.rows}, x.options());
    const SpmvLaunch cfg = m.engine->tuning.sparse(p.dev.rows, p.dev.cols, static_cast<int>(N),
                                                   tuningDtype(x.scalar_type()), smCount());
    bitmaskSpmvInto(p.dev, x2.contiguous(), y, cfg);
    return y.view(outSizes);
  }
#endif
  return at::linear(x2, unpackToDense(m, p, x.scalar_type())).view(outSizes);
}

#ifdef SDW_ENGINE_CUDA

// ---- the captured decode step ---------------------------------------------------

struct LinOp {
  enum Mode { Cublas, Gemv, Spmv, Unpack, Spmspv } mode = Cublas;
  at::Tensor w;           // Cublas / Gemv: [rows, cols]
  DeviceBitmask packed;   // Spmv / Unpack
  std::int64_t rows = 0, cols = 0, yOff = 0;
  kernels::GemvConfig gemv;
  kernels::SpmvConfig spmv;
  int stepPdl = -1;  // the tuning table's step-tuned launch (TuningEntry::sparseStep / denseStep) sets pdl (0 / 1)
  // Spmspv: a column-layout projection, one launch per row of the batch reading x's nonzero
  // entries (activation sparsity's zeros are skipped with their weight bytes).
  at::Tensor colChunks;
  kernels::SpmspvFormat colFormat = kernels::SpmspvFormat::Column24;
  sparse::DType colDtype = sparse::DType::BF16;
  kernels::SpmspvConfig spmspv;
  // The columns it reads: |x_j| > threshold. 0 skips the zeros a sparsify launch left; with
  // fixed per-layer thresholds (TEAL) the layer's own, and no sparsify launch before it.
  float threshold = 0.f;
};

// A projection input: row-major [B, cols] and, where the CUDA-core sparse kernel reads it
// at batch > 1, batch-interleaved [cols, xStride].
struct Site {
  at::Tensor xr, xi;
  bool interleaved = false;  // producers write xi (every consumer reads it interleaved)
  std::int64_t cols = 0;
  void* out() const { return interleaved ? xi.data_ptr() : xr.data_ptr(); }
  kernels::XLayout layout() const {
    if (interleaved) return {1, xi.size(1)};
    return {cols, 1};
  }
};

struct DecodeGraph {
  std::int64_t B = 0, capacity = 0;
  const void* cacheKey = nullptr;
  const void* ropeKey = nullptr;
  at::Tensor ids, slot, pad;  // int32 [B], [1], [B]
  std::vector<std::int32_t> padHost;  // what `pad` holds
  at::Tensor h, yQkv, yO, yGu, yDown, logits, scratch;
  Site sHidden, sAttn, sInter, sFinal;
  at::Tensor attnWs, attnCounters, splitWs, counters;
  std::vector<std::array<std::vector<LinOp>, 4>> ops;  // [layer][qkv, o, gate|up, down]
  LinOp lmHead;
  std::unique_ptr<at::cuda::CUDAGraph> graph;
  // Profiling aid (SDW_ENGINE_SKIP, docs/decode-engine.md): a comma list of what to leave
  // out of the step, to time the rest: linears (the projections and lm_head), others
  // (everything but them), attention, norms, swiglu. Tokens are then wrong.
  enum Skip : unsigned { kSkipLinears = 1, kSkipAttention = 2, kSkipNorms = 4, kSkipSwiglu = 8, kSkipEdges = 16 };
  unsigned skip = 0;
  bool runs(unsigned what) const { return (skip & what) == 0; }
  // How the attention merges its splits: a cluster through distributed shared memory
  // where the splits fit one (sm_90, capacity <= 1024), else the workspace and a ticket;
  // SDW_ATTENTION=ticket|cluster|empty chooses (empty: a profiling aid, the launch alone).
  kernels::AttentionMerge attentionMerge = kernels::AttentionMerge::Ticket;
  // Lanes per cache slot (AttentionArgs::lanesPerSlot): 2 where the kernel takes it (16-bit
  // types, headDim a multiple of 16), else 1; SDW_ATTENTION_LANES=1|2|4 chooses.
  int attentionLanes = 2;
  // Whether the attention prefetches the value rows with the keys (AttentionArgs::valuesPrefetch):
  // -1 where that keeps the grid in fewer waves (the default), SDW_ATTENTION_PV=1|0 always|never.
  int attentionValues = -1;
  // Norms run as the tail of the projection before them (kernels::NormTail; 1) or folded
  // into the projections around them (kernels::NormFold; 2), by index: 2l layer l's input
  // norm, 2l + 1 its post-attention norm, 2L the final norm. 0: a launch of its own.
  std::vector<char> normFused;
  // [layer * kProjectionInputs + input]: the input's fixed threshold is applied by its
  // consumers (every one an spMspV op, LinOp::threshold) instead of a sparsify launch.
  std::vector<char> thresholdInKernel;
  at::Tensor normCounters, foldPartials;
  bool fused(std::size_t k) const { return k < normFused.size() && normFused[k]; }
  std::vector<at::Tensor> tensors() const {
    return {ids,       slot,    pad,          h,          yQkv,     yO,           yGu,         yDown,
            logits,    scratch, sHidden.xr,   sHidden.xi, sAttn.xr, sAttn.xi,     sInter.xr,   sInter.xi,
            sFinal.xr, attnWs,  attnCounters, splitWs,    counters, normCounters, foldPartials};
  }
};

namespace {

LinOp denseOp(const EngineState& e, const at::Tensor& w, std::int64_t yOff, int B, bool forceCublas) {
  LinOp op;
  op.w = w;
  op.rows = w.size(0);
  op.cols = w.size(1);
  op.yOff = yOff;
  const bool gemvOk = w.scalar_type() != at::kFloat && op.cols % 8 == 0;
  op.mode = (e.linear == Linear::Cublas || forceCublas || !gemvOk) ? LinOp::Cublas : LinOp::Gemv;
  if (op.mode == LinOp::Gemv) {
    op.gemv = kernels::toConfig(e.tuning.dense(op.rows, op.cols, B, tuningDtype(w.scalar_type()), smCount(), true), true);
    // First the launch chosen in the whole step at this batch (`bench decode --tune-step`).
    if (const auto step = e.tuning.denseStep(op.rows, op.cols, B, tuningDtype(w.scalar_type()))) {
      op.gemv = kernels::toConfig(*step, step->pdl);
      op.stepPdl = step->pdl ? 1 : 0;
    }
  }
  return op;
}

LinOp packedOp(const EngineState& e, const DeviceBitmask& d, std::int64_t yOff, int B, at::ScalarType compute,
               int tensorCores) {
  LinOp op;
  op.packed = d;
  op.rows = d.rows;
  op.cols = d.cols;
  op.yOff = yOff;
  op.mode = compute == scalarOf(d.dtype) ? LinOp::Spmv : LinOp::Unpack;
  // The tuning table's chained configurations (each chosen in a chain of launches of one shape)
  // or first the one chosen in the whole step at this batch on this path (`bench decode
  // --tune-step`): in the step the chained ones lost 3-7% on the H100 (docs/decode-engine.md,
  // "What limits it"); on the tensor cores the heuristic's launch (spmvOnTensorCores) otherwise.
  const bool tensorCoresUsed = op.mode == LinOp::Spmv && kernels::spmvUseTensorCores(tensorCores, B, d.pattern.m);
  if (op.mode == LinOp::Spmv)
    op.spmv = kernels::toConfig(e.tuning.sparse(op.rows, op.cols, B, tuningDtype(compute), smCount(), true), true);
  // (8:16 and 16:32 have step entries of their own, on either path; one tuned on the other path
  // is not used.)
  std::optional<SpmvLaunch> step;
  if (op.mode == LinOp::Spmv)
    step = e.tuning.sparseStep(op.rows, op.cols, B, tuningDtype(compute), tensorCoresUsed, d.pattern.m);
  if (tensorCoresUsed) {
    op.spmv = kernels::spmvOnTensorCores(op.spmv, op.rows, op.cols);
    op.spmv.tcM = d.pattern.m;  // 8:16 and 16:32 take the longer expansion
    // x as the step's other kernels write it ([batch, cols]): the norms, the SwiGLU and the
    // attention then store it whole instead of scattering 2-byte values over [cols, xStride],
    // and the kernel stages it with 16-byte loads. SDW_TC_X=interleaved (profiling) keeps the
    // batch-interleaved input of the CUDA-core kernel.
    const char* env = std::getenv("SDW_TC_X");
    op.spmv.xRowMajor =
        op.spmv.tcM >= 16 || !(env && std::string(env) == "interleaved");  // 8:16, 16:32: [batch, cols] only
    // SDW_TC_SEL=copies: the selector table in 8 copies (SpmvConfig::tcSelectorCopies; an A/B switch).
    const char* sel = std::getenv("SDW_TC_SEL");
    op.spmv.tcSelectorCopies = sel && std::string(sel) == "copies" && op.spmv.tcM < 16;
  }
  if (step) {  // chosen in the step: warps, unroll (ring), split-K, cluster; pdl set with the others'
    op.spmv.warps = step->warps, op.spmv.unroll = step->unroll, op.spmv.splitK = step->splitK;
    op.spmv.cluster = step->cluster;
    op.stepPdl = step->pdl ? 1 : 0;
  }
  return op;
}

LinOp columnOp(const PackedProj& p, std::int64_t yOff) {
  LinOp op;
  op.mode = LinOp::Spmspv;
  op.colChunks = p.colChunks;
  op.colFormat = p.col.format;
  op.spmspv = kernels::spmspvRunDefaults(p.col.format);  // SDW_SPMSPV_LANES / _WAVEFIT: A/B
  op.colDtype = p.col.dtype;
  op.rows = p.col.rows;
  op.cols = p.col.cols;
  op.yOff = yOff;
  return op;
}

// The ops of one group (members in order, each writing its rows of y).
std::vector<LinOp> groupOps(const Model::Impl& m, const EngineState& e, std::size_t l, std::initializer_list<int> kinds,
                            const at::Tensor& fusedDense, const DeviceBitmask& fusedPacked, int B,
                            const PackedProj& fusedColumn = {}) {
  if (fusedDense.defined()) return {denseOp(e, fusedDense, 0, B, false)};
  if (fusedColumn.present) return {columnOp(fusedColumn, 0)};
  if (fusedPacked.values.defined())
    return {packedOp(e, fusedPacked, 0, B, m.computeDtype, m.options.sparseTensorCores)};
  std::vector<LinOp> ops;
  std::int64_t off = 0;
  auto& W = const_cast<LayerWeights&>(m.w.layers[l]);
  for (const int k : kinds) {
    const PackedProj& p = e.packed[l][static_cast<std::size_t>(k)];
    ops.push_back(p.column    ? columnOp(p, off)
                  : p.present ? packedOp(e, p.dev, off, B, m.computeDtype, m.options.sparseTensorCores)
                              : denseOp(e, denseOf(W, k), off, B, false));
    off += ops.back().rows;
  }
  return ops;
}

Site makeSite(std::int64_t B, std::int64_t cols, const at::TensorOptions& o, bool allInterleaved) {
  Site s;
  s.cols = cols;
  s.xr = at::zeros({B, cols}, o);
  s.interleaved = B > 1 && allInterleaved;
  if (B > 1) s.xi = at::zeros({cols, kernels::spmvXStride(static_cast<int>(B))}, o);
  return s;
}

// Whether every op reads its x batch-interleaved (the SpMV on the CUDA cores; on the tensor
// cores it reads [batch, cols] unless SDW_TC_X=interleaved).
bool allInterleaved(const std::vector<LinOp>& ops) {
  return std::all_of(ops.begin(), ops.end(), [](const LinOp& o) { return o.mode == LinOp::Spmv && !o.spmv.xRowMajor; });
}

// With SDW_FUSE_NORMS=1, the residual add + RMSNorm after the o and down projections run as
// those projections' last block (kernels::NormTail; bitwise the separate kernel's result)
// where the group is one GEMV or SpMV op over the hidden rows: batch 1, Llama-style norms
// (not Gemma 3's), norms not skipped. Layer 0's input norm follows the embedding and keeps
// its launch. Off by default: on the H200 the step is slower with it (a2ed288: 215.0 against
// 232.8 tokens/s, Llama-3.1-8B dense; docs/decode-engine.md).
void fuseNorms(const Model::Impl& m, DecodeGraph& g) {
  const ModelConfig& c = m.config;
  const std::size_t L = g.ops.size();
  g.normFused.assign(2 * L + 1, 0);
  // SDW_FUSE_NORMS=ticket (profiling): the projections take the tails' tickets without
  // running the norms, which stay launches: the cost of the fences and atomics alone.
  bool fuse = false, ticketOnly = false;
  if (const char* env = std::getenv("SDW_FUSE_NORMS")) {
    const std::string v = env;
    if (v == "1") fuse = true;
    else if (v == "ticket") fuse = ticketOnly = true;
    else if (v != "0" && !v.empty()) throw std::runtime_error("SDW_FUSE_NORMS: \"" + v + "\" is not 0, 1 or ticket");
  }
  fuse = fuse && g.B == 1 && !c.isGemma() && g.runs(DecodeGraph::kSkipNorms) && g.runs(DecodeGraph::kSkipLinears);
  if (!fuse) return;
  g.normCounters = at::zeros({static_cast<std::int64_t>(2 * L + 1)}, g.counters.options());
  const auto tail = [&](std::vector<LinOp>& grp, const at::Tensor& w, const Site& site, std::size_t k) {
    if (grp.size() != 1) return;
    LinOp& op = grp.front();
    if (op.rows != c.hiddenSize || op.yOff != 0 || site.interleaved) return;
    kernels::NormTail t;
    t.h = g.h.data_ptr();
    t.w = w.data_ptr();
    t.x = site.out();
    t.counter = reinterpret_cast<unsigned*>(g.normCounters.data_ptr<std::int32_t>()) + k;
    t.eps = static_cast<float>(c.rmsNormEps);
    t.normalize = !ticketOnly;
    if (op.mode == LinOp::Gemv) op.gemv.tail = t;
    else if (op.mode == LinOp::Spmv && !kernels::spmvTensorCores(op.spmv)) op.spmv.tail = t;
    else return;
    g.normFused[k] = ticketOnly ? 0 : 1;
  };
  for (std::size_t l = 0; l < L; ++l) {
    tail(g.ops[l][1], m.w.layers[l].postNorm, g.sHidden, 2 * l + 1);
    if (l + 1 < L) tail(g.ops[l][3], m.w.layers[l + 1].inputNorm, g.sHidden, 2 * l + 2);
    else tail(g.ops[l][3], m.w.finalNorm, g.sFinal, 2 * L);
  }
}

// With SDW_FOLD_NORMS=1, the residual add + RMSNorm between two projections is folded into
// both (kernels::NormFold): the o projection (the down projection) adds its rows into h and
// leaves partial sums of squares, the gate|up projection (the next layer's q|k|v) forms its
// input from h as it loads it; no launch, no normalised vector in memory. Where the producer
// is one dense GEMV over the hidden rows and every consumer a dense GEMV: batch 1,
// Llama-style norms, no run-time activation sparsity (it would sparsify x), norms and
// linears not skipped, the tails (SDW_FUSE_NORMS) off. Layer 0's input norm and the final
// norm keep their launches. Off by default until timed (docs/decode-engine.md).
void foldNorms(const Model::Impl& m, DecodeGraph& g) {
  const ModelConfig& c = m.config;
  const std::size_t L = g.ops.size();
  const char* env = std::getenv("SDW_FOLD_NORMS");
  const std::string v = env ? env : "";
  if (v != "1" && v != "0" && !v.empty()) throw std::runtime_error("SDW_FOLD_NORMS: \"" + v + "\" is not 0 or 1");
  const bool anyFused = std::any_of(g.normFused.begin(), g.normFused.end(), [](char f) { return f != 0; });
  const bool sparseInputs = !m.actThresholds.empty() ||
                            std::any_of(m.actSparsity.begin(), m.actSparsity.end(), [](double p) { return p > 0; });
  if (v != "1" || g.B != 1 || c.isGemma() || sparseInputs || anyFused || !g.runs(DecodeGraph::kSkipNorms) ||
      !g.runs(DecodeGraph::kSkipLinears))
    return;
  std::int64_t most = 1;  // partials per site: the producers' row blocks
  for (const auto& layer : g.ops)
    for (const int k : {1, 3})
      if (layer[static_cast<std::size_t>(k)].size() == 1)
        most = std::max(most, kernels::gemvCounters(layer[static_cast<std::size_t>(k)].front().rows,
                                                    layer[static_cast<std::size_t>(k)].front().gemv));
  g.foldPartials = at::zeros({static_cast<std::int64_t>(2 * L + 1) * most}, g.splitWs.options());
  const auto fold = [&](std::vector<LinOp>& producer, std::vector<LinOp>& consumers, const at::Tensor& w,
                        std::size_t k) {
    if (producer.size() != 1 || consumers.empty()) return;
    LinOp& p = producer.front();
    if (p.mode != LinOp::Gemv || p.rows != c.hiddenSize || p.yOff != 0) return;
    if ((reinterpret_cast<std::uintptr_t>(w.data_ptr()) & 15) != 0) return;  // read 16 bytes at a time
    for (const LinOp& op : consumers)
      if (op.mode != LinOp::Gemv || op.cols != c.hiddenSize) return;
    float* partials = g.foldPartials.data_ptr<float>() + static_cast<std::int64_t>(k) * most;
    p.gemv.fold.out = true;
    p.gemv.fold.h = g.h.data_ptr();
    p.gemv.fold.partials = partials;
    for (LinOp& op : consumers) {
      kernels::NormFold& f = op.gemv.fold;
      f.in = true;
      f.h = g.h.data_ptr();
      f.partials = partials;
      f.count = static_cast<int>(kernels::gemvCounters(p.rows, p.gemv));
      f.w = w.data_ptr();
      f.eps = static_cast<float>(c.rmsNormEps);
      f.n = c.hiddenSize;
    }
    g.normFused[k] = 2;
  };
  for (std::size_t l = 0; l < L; ++l) {
    fold(g.ops[l][1], g.ops[l][2], m.w.layers[l].postNorm, 2 * l + 1);
    if (l + 1 < L) fold(g.ops[l][3], g.ops[l + 1][0], m.w.layers[l + 1].inputNorm, 2 * l + 2);
  }
}

std::unique_ptr<DecodeGraph> buildGraph(Model::Impl& m, KvCache& cache, std::int64_t B) {
  const ModelConfig& c = m.config;
  EngineState& e = *m.engine;
  auto g = std::make_unique<DecodeGraph>();
  if (const char* env = std::getenv("SDW_ENGINE_SKIP")) {
    std::stringstream list(env);
    for (std::string v; std::getline(list, v, ',');) {
      if (v == "linears") g->skip |= DecodeGraph::kSkipLinears;
      else if (v == "attention") g->skip |= DecodeGraph::kSkipAttention;
      else if (v == "norms") g->skip |= DecodeGraph::kSkipNorms;
      else if (v == "swiglu") g->skip |= DecodeGraph::kSkipSwiglu;
      else if (v == "others")
        g->skip |= DecodeGraph::kSkipAttention | DecodeGraph::kSkipNorms | DecodeGraph::kSkipSwiglu | DecodeGraph::kSkipEdges;
      else if (!v.empty()) throw std::runtime_error("SDW_ENGINE_SKIP: unknown part \"" + v + "\" (linears, others, attention, norms, swiglu)");
    }
  }
  g->B = B;
  g->capacity = cache.capacity;
  g->attentionMerge = kernels::attentionClusterMergeSupported(cache.capacity) ? kernels::AttentionMerge::Cluster
                                                                              : kernels::AttentionMerge::Ticket;
  if (const char* env = std::getenv("SDW_ATTENTION")) {
    const std::string v = env;
    if (v == "ticket") g->attentionMerge = kernels::AttentionMerge::Ticket;
    else if (v == "empty") g->attentionMerge = kernels::AttentionMerge::Empty;
    else if (v == "cluster") {
      if (!kernels::attentionClusterMergeSupported(cache.capacity))
        throw std::runtime_error("SDW_ATTENTION=cluster: needs sm_90 and a cache of at most " +
                                 std::to_string(kernels::kMaxAttentionClusterSplits * 128) + " slots");
      g->attentionMerge = kernels::AttentionMerge::Cluster;
    } else if (!v.empty())
      throw std::runtime_error("SDW_ATTENTION: unknown merge \"" + v + "\" (ticket, cluster, empty)");
  }
  if (const char* env = std::getenv("SDW_ATTENTION_LANES")) {
    const std::string v = env;
    if (v == "1" || v == "2" || v == "4") g->attentionLanes = std::stoi(v);
    else if (!v.empty()) throw std::runtime_error("SDW_ATTENTION_LANES: \"" + v + "\" is not 1, 2 or 4");
  }
  if (const char* env = std::getenv("SDW_ATTENTION_PV")) {
    const std::string v = env;
    if (v == "0" || v == "1") g->attentionValues = std::stoi(v);
    else if (v != "auto" && !v.empty()) throw std::runtime_error("SDW_ATTENTION_PV: \"" + v + "\" is not 0, 1 or auto");
  }
  g->cacheKey = cache.k.front().data_ptr();
  g->ropeKey = m.ropeCos.data_ptr();
  const auto o = at::TensorOptions().dtype(m.computeDtype).device(m.device);
  const auto oi = at::TensorOptions().dtype(at::kInt).device(m.device);
  g->ids = at::zeros({B}, oi);
  g->slot = at::zeros({1}, oi);
  g->pad = at::zeros({B}, oi);
  const int Bi = static_cast<int>(B);
  const std::size_t L = m.w.layers.size();
  bool hiddenInterleaved = true, attnInterleaved = true, interInterleaved = true;
  std::int64_t scratchFloats = 0;
  for (std::size_t l = 0; l < L; ++l) {
    std::array<std::vector<LinOp>, 4> ops;
    ops[0] = groupOps(m, e, l, {kProjQ, kProjK, kProjV}, e.qkvDense[l], e.qkvPacked[l], Bi, e.qkvColumn[l]);
    ops[1] = groupOps(m, e, l, {kProjO}, at::Tensor(), DeviceBitmask{}, Bi);
    ops[2] = groupOps(m, e, l, {kProjGate, kProjUp}, e.guDense[l], e.guPacked[l], Bi, e.guColumn[l]);
    ops[3] = groupOps(m, e, l, {kProjDown}, at::Tensor(), DeviceBitmask{}, Bi);
    hiddenInterleaved = hiddenInterleaved && allInterleaved(ops[0]) && allInterleaved(ops[2]);
    attnInterleaved = attnInterleaved && allInterleaved(ops[1]);
    interInterleaved = interInterleaved && allInterleaved(ops[3]);
    for (const auto& grp : ops)
      for (const auto& op : grp)
        if (op.mode == LinOp::Unpack) scratchFloats = std::max(scratchFloats, op.rows * op.cols);
    // Fixed thresholds (TEAL) on an input whose consumers are all spMspV ops: the kernel
    // compares |x_j| with the threshold as it builds its column list, which is what the
    // sparsify launch would have zeroed.
    if (!m.actThresholds.empty()) {
      g->thresholdInKernel.resize(L * kProjectionInputs, 0);
      for (int i = 0; i < kProjectionInputs; ++i) {
        auto& grp = ops[static_cast<std::size_t>(i)];
        if (grp.empty() ||
            !std::all_of(grp.begin(), grp.end(), [](const LinOp& op) { return op.mode == LinOp::Spmspv; }))
          continue;
        const float t = m.actThresholds[l][static_cast<std::size_t>(i)];
        for (auto& op : grp) op.threshold = t < 0 ? -1.f : t;
        g->thresholdInKernel[l * kProjectionInputs + static_cast<std::size_t>(i)] = 1;
      }
    }
    g->ops.push_back(std::move(ops));
  }
  // The sparse engine's lm_head (dense) on cuBLAS from batch 4, where our dense GEMV falls
  // behind it (bench/results/kernels/h200-spmv-batch-fma-495a5b6.json: 1.3-1.6x at 14336x4096).
  g->lmHead = denseOp(e, m.w.lmHead, 0, Bi, e.linear == Linear::Sparse && Bi >= 4);
  // The tensor-core SpMV without programmatic dependent launch: with it the sparse step ran
  // 15% slower at batch 4 and 8 (docs/decode-engine.md, "Batch 8"); SDW_TC_PDL=1 keeps it.
  const char* tcPdl = std::getenv("SDW_TC_PDL");
  const bool tcPdlOn = tcPdl && std::string(tcPdl) == "1";
  const auto setPdl = [&](LinOp& op) {
    op.gemv.pdl = op.spmv.pdl = m.options.pdl;
    if (op.mode == LinOp::Spmv && kernels::spmvTensorCores(op.spmv) && !tcPdlOn) op.spmv.pdl = false;
    if (op.mode == LinOp::Spmv && op.stepPdl >= 0) op.spmv.pdl = op.stepPdl == 1 && m.options.pdl;
    if (op.mode == LinOp::Gemv && op.stepPdl >= 0) op.gemv.pdl = op.stepPdl == 1 && m.options.pdl;
    op.spmspv.pdl = op.spmspv.pdl && m.options.pdl;  // column 2:4 / 4:8 unless SDW_SPMSPV_PDL=0, and the option
  };
  for (auto& layer : g->ops)
    for (auto& grp : layer)
      for (auto& op : grp) setPdl(op);
  setPdl(g->lmHead);
  g->sHidden = makeSite(B, c.hiddenSize, o, hiddenInterleaved);
  g->sAttn = makeSite(B, c.qDim(), o, attnInterleaved);
  g->sInter = makeSite(B, c.intermediateSize, o, interInterleaved);
  g->sFinal = makeSite(B, c.hiddenSize, o, false);
  g->h = at::zeros({B, c.hiddenSize}, o);
  g->yQkv = at::zeros({B, c.qDim() + 2 * c.kvDim()}, o);
  g->yO = at::zeros({B, c.hiddenSize}, o);
  g->yGu = at::zeros({B, 2 * c.intermediateSize}, o);
  g->yDown = at::zeros({B, c.hiddenSize}, o);
  g->logits = at::zeros({B, c.vocabSize}, o);
  if (scratchFloats > 0) g->scratch = at::empty({scratchFloats}, o);
  const auto attnN =
      kernels::attentionWorkspaceFloats(Bi, static_cast<int>(c.numHeads), static_cast<int>(c.headDim), cache.capacity);
  g->attnWs = at::empty({static_cast<std::int64_t>(attnN)}, o.dtype(at::kFloat));
  g->attnCounters = at::zeros({B * c.numKvHeads}, oi);
  std::size_t wsN = 1;
  std::int64_t counters = 1;
  const auto account = [&](const LinOp& op) {
    if (op.mode == LinOp::Gemv) {
      wsN = std::max(wsN, kernels::gemvWorkspaceFloats(op.rows, Bi, op.gemv));
      counters = std::max(counters, kernels::gemvCounters(op.rows, op.gemv));
    } else if (op.mode == LinOp::Spmv) {
      wsN = std::max(wsN, kernels::spmvWorkspaceFloats(op.rows, op.cols, Bi, op.spmv));
      counters = std::max(counters, kernels::spmvTiles(op.rows));
    } else if (op.mode == LinOp::Spmspv) {  // its launches run one after another: one workspace
      wsN = std::max(wsN, kernels::spmspvWorkspaceFloats(op.rows, op.cols, op.spmspv));
      counters = std::max(counters, kernels::spmspvCounters(op.rows));
    }
  };
  for (const auto& layer : g->ops)
    for (const auto& grp : layer)
      for (const auto& op : grp) account(op);
  account(g->lmHead);
  g->splitWs = at::empty({static_cast<std::int64_t>(wsN)}, o.dtype(at::kFloat));
  g->counters = at::zeros({counters}, oi);
  fuseNorms(m, *g);
  foldNorms(m, *g);
  return g;
}

void runLinear(DecodeGraph& g, const LinOp& op, const Site& site, at::Tensor& y, cudaStream_t st) {
  if (!g.runs(DecodeGraph::kSkipLinears)) return;
  const std::int64_t ldy = y.size(1);
  const auto elem = static_cast<std::int64_t>(y.element_size());
  void* yp = static_cast<char*>(y.data_ptr()) + op.yOff * elem;
  const int B = static_cast<int>(g.B);
  switch (op.mode) {
    case LinOp::Cublas: {
      at::Tensor yv = y.narrow(1, op.yOff, op.rows);
      at::mm_out(yv, site.xr, op.w.t());
      return;
    }
    case LinOp::Gemv:
      ck(kernels::launchDenseGemv(op.w.data_ptr(), kdtOf(op.w.scalar_type()), op.rows, op.cols, site.xr.data_ptr(), B,
                                  yp, ldy, op.gemv, g.splitWs.data_ptr<float>(),
                                  reinterpret_cast<unsigned*>(g.counters.data_ptr()), st),
         "dense GEMV");
      return;
    case LinOp::Spmv: {
      const void* x = site.xr.data_ptr();
      if (B > 1 && !op.spmv.xRowMajor) {
        if (!site.interleaved) const_cast<at::Tensor&>(site.xi).narrow(1, 0, B).copy_(site.xr.t());
        x = site.xi.data_ptr();
      }
      ck(kernels::launchBitmaskSpmv(op.packed.values.data_ptr(),
                                    reinterpret_cast<const std::uint32_t*>(op.packed.masks.data_ptr()),
                                    kdtOf(op.packed.dtype), op.rows, op.cols, x, B, yp, ldy, op.spmv,
                                    g.splitWs.data_ptr<float>(), reinterpret_cast<unsigned*>(g.counters.data_ptr()), st),
         "bitmask SpMV");
      return;
    }
    case LinOp::Spmspv: {
      const kernels::SpmspvLayout layout{op.colChunks.data_ptr(), nullptr,     op.rows, op.cols,
                                         kdtOf(op.colDtype),      op.colFormat};
      for (int b = 0; b < B; ++b)
        ck(kernels::launchSpmspv(layout, static_cast<const char*>(site.xr.data_ptr()) + b * op.cols * elem,
                                 op.threshold, static_cast<char*>(yp) + b * ldy * elem, op.spmspv,
                                 g.splitWs.data_ptr<float>(), reinterpret_cast<unsigned*>(g.counters.data_ptr()), st),
           "spMspV");
      return;
    }
    case LinOp::Unpack: {
      at::Tensor dense = g.scratch.narrow(0, 0, op.rows * op.cols).view({op.rows, op.cols});
      ck(kernels::launchUnpackBitmask(op.packed.values.data_ptr(),
                                      reinterpret_cast<const std::uint32_t*>(op.packed.masks.data_ptr()),
                                      kdtOf(op.packed.dtype), op.rows, op.cols, dense.data_ptr(),
                                      kdtOf(dense.scalar_type()), st),
         "unpack");
      at::Tensor yv = y.narrow(1, op.yOff, op.rows);
      at::mm_out(yv, site.xr, dense.t());
      return;
    }
  }
}

// The embedding's scale: 1, or Gemma 3's sqrt(hidden) in fp32 cast to the compute dtype
// (Gemma3TextScaledWordEmbedding; the eager pass rounds it the same way).
float embedScale(const Model::Impl& m) {
  if (!m.config.isGemma()) return 1.f;
  const auto s = static_cast<float>(std::pow(static_cast<double>(m.config.hiddenSize), 0.5));
  if (m.computeDtype == at::kBFloat16) return static_cast<float>(c10::BFloat16(s));
  if (m.computeDtype == at::kHalf) return static_cast<float>(c10::Half(s));
  return s;
}

// The step's launches, in order, on the current stream.
void runStep(Model::Impl& m, DecodeGraph& g, KvCache& cache) {
  const ModelConfig& c = m.config;
  const cudaStream_t st = c10::cuda::getCurrentCUDAStream();
  const kernels::DType dt = kdtOf(m.computeDtype);
  const int B = static_cast<int>(g.B);
  const auto eps = static_cast<float>(c.rmsNormEps);
  const auto hid = c.hiddenSize;
  const bool pdl = m.options.pdl;  // our kernels overlap their neighbours' launch and ramp-up
  const bool edges = g.runs(DecodeGraph::kSkipEdges), norms = g.runs(DecodeGraph::kSkipNorms);
  const bool attention = g.runs(DecodeGraph::kSkipAttention), swiglu = g.runs(DecodeGraph::kSkipSwiglu);
  const bool gemma = c.isGemma();
  if (edges) ck(kernels::launchEmbedRows(m.w.embed.data_ptr(), dt, hid, g.ids.data_ptr<std::int32_t>(), B, g.h.data_ptr(), st, pdl,
                                         embedScale(m)),
     "embedding");
  // Residual add + norm into `site`: h += y, x = norm(h, w); Gemma 3: h += postNorm(y) (its
  // weights postW: the attention or MLP output's norm), x = its (1 + w) norm of h.
  const auto addNorm = [&](const void* y, const at::Tensor* postW, const at::Tensor& w, const Site& site,
                           const char* what) {
    if (gemma)
      ck(kernels::launchGemmaAddNorm(g.h.data_ptr(), y, hid, y ? postW->data_ptr() : nullptr, w.data_ptr(), dt, hid, B,
                                     eps, site.out(), site.layout(), st, pdl),
         what);
    else
      ck(kernels::launchAddRmsNorm(g.h.data_ptr(), y, hid, w.data_ptr(), dt, hid, B, eps, site.out(), site.layout(), st,
                                   pdl),
         what);
  };
  // Run-time activation sparsity on a projection input (the eager pass's sparsify):
  // per-token top-k at the layer's p_x, or the layer's fixed threshold for that input.
  const auto sparsify = [&](const Site& site, std::size_t l, ProjectionInput input, const char* what) {
    int keep = 0;
    float threshold = -1.f;
    if (!m.actThresholds.empty()) {
      const std::size_t k = l * kProjectionInputs + static_cast<std::size_t>(input);
      if (k < g.thresholdInKernel.size() && g.thresholdInKernel[k]) return;  // the spMspV ops compare it themselves
      threshold = m.actThresholds[l][static_cast<std::size_t>(input)];
      if (threshold < 0) return;
    } else if (!m.actSparsity.empty()) {
      const double px = m.actSparsity[l];
      if (!(px > 0)) return;
      keep = static_cast<int>(std::clamp<std::int64_t>(std::llround((1.0 - px) * static_cast<double>(site.cols)), 1,
                                                      site.cols));
      if (keep >= site.cols) return;
    } else {
      return;
    }
    ck(kernels::launchSparsifyRows(site.out(), dt, site.cols, B, site.layout(), keep, threshold, st, pdl), what);
  };
  const void* prevY = nullptr;
  const at::Tensor* prevPost = nullptr;  // Gemma 3: the previous layer's post-feedforward norm
  for (std::size_t l = 0; l < m.w.layers.size(); ++l) {
    const LayerWeights& W = m.w.layers[l];
    if (norms && !g.fused(2 * l)) addNorm(prevY, prevPost, W.inputNorm, g.sHidden, "input norm");
    sparsify(g.sHidden, l, ProjectionInput::Qkv, "q|k|v input sparsity");
    for (const auto& op : g.ops[l][0]) runLinear(g, op, g.sHidden, g.yQkv, st);
    kernels::AttentionArgs aa;
    aa.qkv = g.yQkv.data_ptr();
    aa.ldqkv = g.yQkv.size(1);
    aa.qkvBias = m.engine->qkvBias[l].defined() ? m.engine->qkvBias[l].data_ptr() : nullptr;
    // Per layer (Gemma 3: sliding layers with the window and the local RoPE, global ones without).
    aa.window = c.slidingLayer(static_cast<std::int64_t>(l)) ? static_cast<int>(c.slidingWindow) : 0;
    aa.qNorm = c.hasQkNorm() ? W.qNorm.data_ptr() : nullptr;
    aa.kNorm = c.hasQkNorm() ? W.kNorm.data_ptr() : nullptr;
    aa.gemmaNorm = gemma;
    aa.eps = eps;
    const bool localRope = c.localRopeLayer(static_cast<std::int64_t>(l));
    aa.cos = (localRope ? m.ropeCosLocal : m.ropeCos).data_ptr();
    aa.sin = (localRope ? m.ropeSinLocal : m.ropeSin).data_ptr();
    aa.heads = static_cast<int>(c.numHeads);
    aa.kvHeads = static_cast<int>(c.numKvHeads);
    aa.headDim = static_cast<int>(c.headDim);
    aa.capacity = cache.capacity;
    aa.slot = g.slot.data_ptr<int>();
    aa.pad = g.pad.data_ptr<int>();
    aa.batch = B;
    aa.kCache = cache.k[l].data_ptr();
    aa.vCache = cache.v[l].data_ptr();
    aa.scale = static_cast<float>(c.attentionScale());  // head_dim^-0.5; Gemma 3: query_pre_attn_scalar^-0.5
    aa.out = g.sAttn.out();
    aa.layout = g.sAttn.layout();
    aa.counters = reinterpret_cast<unsigned*>(g.attnCounters.data_ptr());
    aa.merge = g.attentionMerge;
    aa.lanesPerSlot = g.attentionLanes;
    aa.valuesPrefetch = g.attentionValues;
    if (attention) ck(kernels::launchDecodeAttention(aa, dt, g.attnWs.data_ptr<float>(), st, pdl), "attention");
    sparsify(g.sAttn, l, ProjectionInput::O, "o input sparsity");
    for (const auto& op : g.ops[l][1]) runLinear(g, op, g.sAttn, g.yO, st);
    // Llama: post_attention_layernorm is the MLP's input norm; Gemma 3: the attention
    // output's norm, then pre_feedforward_layernorm the MLP's input norm.
    if (norms && !g.fused(2 * l + 1))
      addNorm(g.yO.data_ptr(), &W.postNorm, gemma ? W.preFfnNorm : W.postNorm, g.sHidden, "post-attention norm");
    sparsify(g.sHidden, l, ProjectionInput::GateUp, "gate|up input sparsity");
    for (const auto& op : g.ops[l][2]) runLinear(g, op, g.sHidden, g.yGu, st);
    if (swiglu)
      ck(kernels::launchGatedMul(g.yGu.data_ptr(), g.yGu.size(1), c.intermediateSize, B, dt, g.sInter.out(),
                                 g.sInter.layout(), gemma, st, pdl),
         gemma ? "GELU-tanh" : "SwiGLU");
    sparsify(g.sInter, l, ProjectionInput::Down, "down input sparsity");
    for (const auto& op : g.ops[l][3]) runLinear(g, op, g.sInter, g.yDown, st);
    prevY = g.yDown.data_ptr();
    prevPost = &W.postFfnNorm;
  }
  if (edges && !g.fused(2 * m.w.layers.size())) addNorm(prevY, prevPost, m.w.finalNorm, g.sFinal, "final norm");
  runLinear(g, g.lmHead, g.sFinal, g.logits, st);
  if (edges) {
    if (c.finalLogitSoftcap > 0)  // Gemma 3: the logits capped in place (the step returns them), then argmax
      ck(kernels::launchSoftcapArgmax(g.logits.data_ptr(), c.vocabSize, c.vocabSize, B, dt,
                                      static_cast<float>(c.finalLogitSoftcap), g.ids.data_ptr<std::int32_t>(), st, pdl),
         "soft-cap + argmax");
    else
      ck(kernels::launchArgmax(g.logits.data_ptr(), c.vocabSize, c.vocabSize, B, dt, g.ids.data_ptr<std::int32_t>(), st,
                               pdl),
         "argmax");
  }
}

DecodeGraph& prepare(Model::Impl& m, KvCache& cache, std::int64_t B, const std::vector<std::int64_t>& pad) {
  EngineState& e = *m.engine;
  DecodeGraph* g = e.graph.get();
  if (!g || g->B != B || g->capacity != cache.capacity || g->cacheKey != cache.k.front().data_ptr() ||
      g->ropeKey != m.ropeCos.data_ptr()) {
    e.graph.reset();
    e.graph = std::shared_ptr<DecodeGraph>(buildGraph(m, cache, B).release());
    g = e.graph.get();
  }
  std::vector<std::int32_t> p(static_cast<std::size_t>(B), 0);
  for (std::size_t b = 0; b < p.size() && b < pad.size(); ++b) p[b] = static_cast<std::int32_t>(pad[b]);
  if (p != g->padHost) {  // once per generation call, not per step
    g->pad.copy_(at::from_blob(p.data(), {B}, at::TensorOptions().dtype(at::kInt)));
    g->padHost = std::move(p);
  }
  return *g;
}

void setInputs(DecodeGraph& g, const std::vector<std::int32_t>& ids, std::int64_t slot) {
  g.slot.fill_(static_cast<int>(slot));
  g.ids.copy_(at::from_blob(const_cast<std::int32_t*>(ids.data()), {g.B}, at::TensorOptions().dtype(at::kInt)));
}

// One step: the captured graph's replay (captured on first use), or the launches.
void launchStep(Model::Impl& m, DecodeGraph& g, KvCache& cache, const std::vector<std::int32_t>& ids) {
  if (!m.options.cudaGraph) {
    runStep(m, g, cache);
    return;
  }
  if (!g.graph) {
    runStep(m, g, cache);  // warm-up: cuBLAS handles and workspaces exist before capture
    ck(cudaStreamSynchronize(c10::cuda::getCurrentCUDAStream()), "warm-up step");
    g.graph = std::make_unique<at::cuda::CUDAGraph>();
    {
      const c10::cuda::CUDAStreamGuard guard(c10::cuda::getStreamFromPool());
      g.graph->capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
      runStep(m, g, cache);
      g.graph->capture_end();
    }
    // The warm-up's argmax replaced the ids: the replay below repeats the same step.
    g.ids.copy_(at::from_blob(const_cast<std::int32_t*>(ids.data()), {g.B}, at::TensorOptions().dtype(at::kInt)));
  }
  g.graph->replay();
}

}  // namespace

bool engineDecodes(const Model::Impl& m) {
  const ModelConfig& c = m.config;
  // Gemma 3 decodes here too (its scaled embedding, (1 + w) and post norms, GELU-tanh,
  // per-layer windows and RoPE tables, final logit soft-capping: see runStep).
  // Activation sparsity (top-k or thresholds): a row kernel on each projection input.
  return m.device.is_cuda() && m.engine && m.options.decodeEngine && !m.observed() && engineSupportsArchitecture(c) &&
         c.headDim % 8 == 0 && c.headDim <= 256 &&
         c.numHeads % c.numKvHeads == 0 && c.numHeads / c.numKvHeads <= 16;
}

at::Tensor engineStep(Model::Impl& m, KvCache& cache, const std::vector<std::int32_t>& ids, std::int64_t slot,
                      const std::vector<std::int64_t>& pad) {
  DecodeGraph& g = prepare(m, cache, static_cast<std::int64_t>(ids.size()), pad);
  setInputs(g, ids, slot);
  launchStep(m, g, cache, ids);
  return g.logits;
}

// Appends a launch to the step tuning's candidates unless the same launch is there.
template <typename Config>
void addCandidate(std::vector<Config>& cands, const Config& c) {
  for (const Config& x : cands)
    if (kernels::toLaunch(x) == kernels::toLaunch(c)) return;
  cands.push_back(c);
}

std::vector<StepTuned> engineTuneStep(Model::Impl& m, KvCache& cache, const std::vector<std::int32_t>& ids,
                                      std::int64_t slot, const std::function<void(const std::string&)>& stage) {
  std::vector<StepTuned> out;
  const int B = static_cast<int>(ids.size());
  if (B < 1 || B > 8 || !m.options.cudaGraph) return out;
  DecodeGraph& g = prepare(m, cache, B, {});
  if (g.ops.empty()) return out;
  EngineState& e = *m.engine;
  const auto stream = [] { return c10::cuda::getCurrentCUDAStream().stream(); };
  // The step's median time over `replays` replays of a fresh capture (us).
  const auto stepUs = [&](int replays) {
    g.graph.reset();
    setInputs(g, ids, slot);
    launchStep(m, g, cache, ids);
    ck(cudaStreamSynchronize(stream()), "step tuning");
    cudaEvent_t a, b;
    ck(cudaEventCreate(&a), "event");
    ck(cudaEventCreate(&b), "event");
    std::vector<double> t;
    for (int r = 0; r < replays; ++r) {
      ck(cudaEventRecord(a, stream()), "event");
      g.graph->replay();
      ck(cudaEventRecord(b, stream()), "event");
      ck(cudaEventSynchronize(b), "event");
      float ms = 0;
      ck(cudaEventElapsedTime(&ms, a, b), "event");
      t.push_back(ms * 1000.0);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  // Whether the step runs with the launches as they are (a cluster the device cannot
  // co-schedule is refused at launch).
  const auto runs = [&] {
    g.graph.reset();
    try {
      runStep(m, g, cache);
      ck(cudaStreamSynchronize(stream()), "step tuning");
      return true;
    } catch (const std::exception&) {
      (void)cudaGetLastError();
      return false;
    }
  };
  // Candidate 0 is the launch there now. Every candidate over 5 replays, then the five fastest
  // and the current one over 25; the winner is kept where the step gains over 0.3%, and applied.
  // Returns (winner, the step's us with candidate 0, with the winner).
  const auto choose = [&](std::size_t n, const std::function<void(std::size_t)>& apply) {
    std::vector<std::pair<double, std::size_t>> quick;
    for (std::size_t c = 0; c < n; ++c) {
      apply(c);
      if (!runs()) continue;
      quick.emplace_back(stepUs(5), c);
    }
    std::sort(quick.begin(), quick.end());
    std::vector<std::size_t> finalists{0};
    for (std::size_t q = 0; q < quick.size() && finalists.size() < 6; ++q)
      if (quick[q].second != 0) finalists.push_back(quick[q].second);
    std::size_t best = 0;
    double bestUs = 0, baseUs = 0;
    for (std::size_t f : finalists) {
      apply(f);
      const double t = stepUs(25);
      if (f == 0) baseUs = t;
      if (f == 0 || t < bestUs) bestUs = t, best = f;
    }
    if (bestUs > baseUs * 0.997) best = 0, bestUs = baseUs;  // keep what was there unless it gains
    apply(best);
    return std::make_tuple(best, baseUs, bestUs);
  };
  // Per projection of the layer (q|k|v, o, gate|up, down; each member where not fused): the
  // SpMV launches of every layer, of one shape and path (CUDA cores or tensor cores).
  for (std::size_t k = 0; k < g.ops.front().size(); ++k)
    for (std::size_t i = 0; i < g.ops.front()[k].size(); ++i) {
      const LinOp& first = g.ops.front()[k][i];
      const bool tc = kernels::spmvTensorCores(first.spmv);
      bool uniform = first.mode == LinOp::Spmv;
      for (const auto& layer : g.ops)
        uniform = uniform && i < layer[k].size() && layer[k][i].mode == LinOp::Spmv && layer[k][i].rows == first.rows &&
                  layer[k][i].cols == first.cols && kernels::spmvTensorCores(layer[k][i].spmv) == tc;
      if (!uniform) continue;
      const std::int64_t rows = first.rows, cols = first.cols;
      const std::string dt = tuningDtype(scalarOf(first.packed.dtype));
      const auto apply = [&](const kernels::SpmvConfig& c) {
        for (auto& layer : g.ops) {
          kernels::SpmvConfig& s = layer[k][i].spmv;
          s.warps = c.warps, s.unroll = c.unroll, s.splitK = c.splitK, s.cluster = c.cluster;
          s.pdl = c.pdl && m.options.pdl;
        }
      };
      const kernels::SpmvConfig base = first.spmv;
      // Candidates (engineTuneStep's comment, gpu/engine_internal.h): the launch there now, then
      // those of its path.
      std::vector<kernels::SpmvConfig> cands{base};
      const auto add = [&](const kernels::SpmvConfig& c) { addCandidate(cands, c); };
      if (tc) {
        // On the tensor cores (batch 2-8): 4 or 8 tiles a block, a ring of 2-4 stages (8:16 and
        // 16:32 too since their kernels take 3 and 4), split-K from half to twice the heuristic's,
        // with and without programmatic launch; x's layout and the pattern's expansion stay as the
        // step set them up.
        const int most = std::max(1, static_cast<int>(cols / 32) / 16);
        for (int w : {8, 4})
          for (int u : {102, 103, 104})
            for (int num : {2, 3, 4, 6, 8})
              for (bool pdl : {false, true}) {
                kernels::SpmvConfig c = base;
                c.warps = w, c.unroll = u, c.pdl = pdl;
                c.splitK = std::clamp((base.splitK * num + 2) / 4, 1, most);
                add(c);
              }
      }
      for (bool chained : {true, false})
        for (bool pdl : {true, false}) {
          if (tc) break;
          add(kernels::toConfig(e.tuning.sparse(rows, cols, B, dt, smCount(), chained), pdl));
        }
      for (kernels::SpmvConfig c : tc ? std::vector<kernels::SpmvConfig>{} : kernels::spmvTuningSpace(cols, B)) {
        // Batch 1: the register path's 1, 2, 4 words and every depth of the bulk pipeline (with
        // programmatic launch each stage's weights are requested before the wait).
        const bool unrollOk = B > 1 || c.unroll != 3;
        if (!unrollOk || c.splitK > (B == 1 ? 6 : 8)) continue;
        c.pdl = true;
        add(c);
      }
      std::size_t wsN = static_cast<std::size_t>(g.splitWs.numel());
      for (const auto& c : cands) wsN = std::max(wsN, kernels::spmvWorkspaceFloats(rows, cols, B, c));
      if (wsN > static_cast<std::size_t>(g.splitWs.numel()))
        g.splitWs = at::empty({static_cast<std::int64_t>(wsN)}, g.splitWs.options());
      if (stage)
        stage("tuning " + shapeText(rows, cols) + " in the step: " + std::to_string(cands.size()) + " launches");
      const auto [best, baseUs, bestUs] = choose(cands.size(), [&](std::size_t c) { apply(cands[c]); });
      StepTuned r;
      r.rows = rows, r.cols = cols, r.batch = B, r.dtype = dt;
      r.m16 = first.packed.pattern.m >= 16;
      r.before = kernels::toLaunch(base);
      r.after = kernels::toLaunch(cands[best]);
      r.beforeUs = baseUs, r.afterUs = bestUs;
      r.candidates = static_cast<int>(cands.size());
      out.push_back(r);
    }
  // Our dense GEMV's launches (the dense engine's projections, and either engine's lm_head): per
  // projection of the layer, of one shape in every layer, then lm_head; the table's chained and
  // plain launches with and without programmatic launch and the tuning space's with it. Not where
  // a norm is run by, or folded into, the projections (SDW_FUSE_NORMS, SDW_FOLD_NORMS).
  std::vector<std::vector<LinOp*>> gemvs;
  for (std::size_t k = 0; k < g.ops.front().size(); ++k)
    for (std::size_t i = 0; i < g.ops.front()[k].size(); ++i) {
      std::vector<LinOp*> ops;
      for (auto& layer : g.ops)
        if (i < layer[k].size()) ops.push_back(&layer[k][i]);
      gemvs.push_back(ops);
    }
  gemvs.push_back({&g.lmHead});
  for (const std::vector<LinOp*>& ops : gemvs) {
    const LinOp& first = *ops.front();
    bool uniform = ops.size() == (ops.front() == &g.lmHead ? 1 : g.ops.size());
    for (const LinOp* op : ops)
      uniform = uniform && op->mode == LinOp::Gemv && op->rows == first.rows && op->cols == first.cols &&
                !op->gemv.tail.on() && !op->gemv.fold.on();
    if (!uniform) continue;
    const std::int64_t rows = first.rows, cols = first.cols;
    const std::string dt = tuningDtype(first.w.scalar_type());
    const kernels::GemvConfig base = first.gemv;
    std::vector<kernels::GemvConfig> cands{base};
    const auto add = [&](const kernels::GemvConfig& c) { addCandidate(cands, c); };
    for (bool chained : {true, false})
      for (bool pdl : {true, false}) add(kernels::toConfig(e.tuning.dense(rows, cols, B, dt, smCount(), chained), pdl));
    for (kernels::GemvConfig c : kernels::gemvTuningSpace(B)) {
      c.pdl = true;
      add(c);
    }
    std::size_t wsN = static_cast<std::size_t>(g.splitWs.numel());
    std::int64_t counters = g.counters.numel();
    for (const auto& c : cands) {
      wsN = std::max(wsN, kernels::gemvWorkspaceFloats(rows, B, c));
      counters = std::max(counters, kernels::gemvCounters(rows, c));
    }
    if (wsN > static_cast<std::size_t>(g.splitWs.numel()))
      g.splitWs = at::empty({static_cast<std::int64_t>(wsN)}, g.splitWs.options());
    if (counters > g.counters.numel()) g.counters = at::zeros({counters}, g.counters.options());
    if (stage)
      stage("tuning " + shapeText(rows, cols) + " (dense GEMV) in the step: " + std::to_string(cands.size()) +
            " launches");
    const auto [best, baseUs, bestUs] = choose(cands.size(), [&](std::size_t c) {
      for (LinOp* op : ops) {
        kernels::GemvConfig& x = op->gemv;
        x.warps = cands[c].warps, x.rowsPerWarp = cands[c].rowsPerWarp, x.unroll = cands[c].unroll;
        x.splitK = cands[c].splitK, x.pdl = cands[c].pdl && m.options.pdl;
      }
    });
    StepTuned r;
    r.rows = rows, r.cols = cols, r.batch = B, r.dtype = dt;
    r.dense = true;
    r.denseBefore = kernels::toLaunch(base);
    r.denseAfter = kernels::toLaunch(cands[best]);
    r.beforeUs = baseUs, r.afterUs = bestUs;
    r.candidates = static_cast<int>(cands.size());
    out.push_back(r);
  }
  g.graph.reset();
  return out;
}

std::pair<int, int> engineStepEntriesUsed(const Model::Impl& m) {
  std::pair<int, int> n{0, 0};
  if (!m.engine || !m.engine->graph) return n;
  const DecodeGraph& g = *m.engine->graph;
  const auto count = [&](const LinOp& op) {
    if (op.mode != LinOp::Spmv && op.mode != LinOp::Gemv) return;
    ++n.second;
    if (op.stepPdl >= 0) ++n.first;
  };
  for (const auto& layer : g.ops)
    for (const auto& grp : layer)
      for (const auto& op : grp) count(op);
  count(g.lmHead);
  return n;
}

void engineGreedyLoop(Model::Impl& m, KvCache& cache, const std::vector<std::int32_t>& ids, std::int64_t slot,
                      int steps, const std::function<void(int, bool)>& bracket) {
  DecodeGraph& g = prepare(m, cache, static_cast<std::int64_t>(ids.size()), {});
  setInputs(g, ids, slot);
  for (int i = 0; i < steps; ++i) {
    if (bracket) bracket(i, true);
    launchStep(m, g, cache, ids);
    if (bracket) bracket(i, false);
  }
}

#else  // no CUDA engine in this build

struct DecodeGraph {};

bool engineDecodes(const Model::Impl&) { return false; }

at::Tensor engineStep(Model::Impl&, KvCache&, const std::vector<std::int32_t>&, std::int64_t,
                      const std::vector<std::int64_t>&) {
  throw std::runtime_error("decode engine: this build has no CUDA kernels");
}

std::vector<StepTuned> engineTuneStep(Model::Impl&, KvCache&, const std::vector<std::int32_t>&, std::int64_t,
                                      const std::function<void(const std::string&)>&) {
  return {};
}
std::pair<int, int> engineStepEntriesUsed(const Model::Impl&) { return {0, 0}; }
void engineGreedyLoop(Model::Impl&, KvCache&, const std::vector<std::int32_t>&, std::int64_t, int,
                      const std::function<void(int, bool)>&) {
  throw std::runtime_error("decode engine: this build has no CUDA kernels");
}

#endif

// ---- Model's engine queries -------------------------------------------------------

std::uint64_t Model::deviceBytes() const {
  const Impl& m = *impl_;
  std::set<const void*> seen;
  std::uint64_t total = 0;
  const auto add = [&](const at::Tensor& t) {
    if (!t.defined() || !t.has_storage()) return;
    const void* key = t.storage().data();
    if (!key || !seen.insert(key).second) return;
    total += t.storage().nbytes();
  };
  add(m.w.embed);
  add(m.w.lmHead);
  add(m.w.finalNorm);
  for (const auto& L : m.w.layers)
    for (const at::Tensor* t : {&L.inputNorm, &L.q, &L.k, &L.v, &L.o, &L.qNorm, &L.kNorm, &L.qBias, &L.kBias, &L.vBias,
                                &L.postNorm, &L.preFfnNorm, &L.postFfnNorm, &L.gate, &L.up, &L.down})
      add(*t);
  for (const auto& t : m.cache.k) add(t);
  for (const auto& t : m.cache.v) add(t);
  add(m.ropeCos);
  add(m.ropeSin);
  add(m.ropeCosLocal);
  add(m.ropeSinLocal);
  if (m.engine) {
    for (const auto& layer : m.engine->packed)
      for (const auto& p : layer) {
        add(p.dev.values);
        add(p.dev.masks);
        add(p.colChunks);
        add(p.colWorkspace);
        add(p.colCounters);
        if (p.present && m.device.is_cpu()) total += p.column ? p.col.bytes() : p.host.bytes();
      }
#ifdef SDW_ENGINE_CUDA
    if (m.engine->graph)
      for (const auto& t : m.engine->graph->tensors()) add(t);
#endif
  }
  return total;
}

std::string Model::engineDescription() const {
  const Impl& m = *impl_;
  std::ostringstream s;
  const bool engine = engineDecodes(m) || (m.device.is_cuda() && m.engine && m.options.decodeEngine && m.observed() &&
                                           engineSupportsArchitecture(m.config));
  if (m.device.is_cpu()) s << "eager CPU forward";
  else if (engine) s << (m.options.cudaGraph ? "CUDA graph of fused kernels" : "fused kernels, no CUDA graph");
  else s << "eager forward";
  const Linear lin = m.options.linear;
  const bool gemv16 = m.computeDtype != at::kFloat && m.device.is_cuda();
  // Without engine kernels for the architecture every dense projection is the eager pass's cuBLAS.
  const std::string denseName =
      lin == Linear::Cublas || !gemv16 || !engineSupportsArchitecture(m.config) ? "cuBLAS" : "dense GEMV";
  const bool column = lin == Linear::Sparse && m.engine && m.engine->pattern.starts_with("col");
  if (m.device.is_cpu())
    s << ", " << (column ? "CPU spMspV" : lin == Linear::Sparse ? "CPU bitmask SpMV" : "LibTorch matmul");
  else if (column) s << ", spMspV";
  else if (lin == Linear::Sparse) s << ", bitmask SpMV";
  else s << ", " << denseName;
  if (lin == Linear::Sparse && m.engine) {
    const int total = static_cast<int>(m.config.numLayers * 7);
    s << " " << m.engine->pattern << " (" << m.engine->packedCount() << " of " << total << " projections packed)";
    // The batches whose row N:M projections run on the tensor cores (16-bit types on a GPU).
    if (gemv16 && !column && !m.engine->pattern.empty()) {
      const int from =
          kernels::spmvTensorCoresFromBatch(m.options.sparseTensorCores, sparse::parsePattern(m.engine->pattern).m);
      if (from > 0) s << " on the tensor cores from batch " << from;
      else s << " on the CUDA cores at every batch";
      if (from != 2) s << (xShuffleFromEnv(2) ? " (batch 2: x by shuffle)" : " (batch 2: x staged)");
      if (from == 0 || from > 3)
        s << (from == 4 ? " (batch 3" : " (batch 3-4") << (xShuffleFromEnv(3) ? ": x by shuffle)" : ": x staged)");
    }
  }
  if (m.device.is_cuda()) {
    s << ", lm_head " << denseName;
    if (lin == Linear::Sparse && denseName != "cuBLAS") s << " (cuBLAS from batch 4)";
  }
  if (m.device.is_cuda() && m.options.decodeEngine && !engineSupportsArchitecture(m.config))
    s << ", the decode engine has no attention soft-capping kernel";
  if (!m.actSparsity.empty()) {
    const auto [lo, hi] = std::minmax_element(m.actSparsity.begin(), m.actSparsity.end());
    s << ", activation sparsity " << *lo;
    if (*hi != *lo) s << ".." << *hi << " by layer";
  }
  if (!m.actThresholds.empty()) s << ", activation thresholds per layer and input";
#ifdef SDW_ENGINE_CUDA
  if (m.engine && m.engine->graph && !m.engine->graph->normFused.empty()) {  // once a step has been built
    const auto& f = m.engine->graph->normFused;
    if (const auto fused = std::count(f.begin(), f.end(), 1); fused > 0)  // the tails (SDW_FUSE_NORMS) only
      s << ", " << fused << " of " << f.size() << " norms in the projection before them";
    if (const auto folded = std::count(f.begin(), f.end(), 2); folded > 0)  // SDW_FOLD_NORMS
      s << ", " << folded << " of " << f.size() << " norms folded into the projections around them";
  }
#endif
  return s.str();
}

}  // namespace sdw::gpu
