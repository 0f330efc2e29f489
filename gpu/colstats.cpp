#include "gpu/colstats.h"

#include "gpu/colstats_ops.h"
#include "gpu/device.h"

#include <ATen/ATen.h>

#include <stdexcept>
#include <string>

#ifdef SDW_TORCH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "gpu/kernels/colstats.cuh"
#endif

namespace sdw::gpu {

void accumulateColumnSumSquares(const at::Tensor& x, at::Tensor& acc) {
  TORCH_CHECK(x.dim() == 2, "x must be [rows, cols], got ", x.sizes());
  TORCH_CHECK(acc.dim() == 1 && acc.size(0) == x.size(1), "acc must be [cols=", x.size(1), "], got ",
              acc.sizes());
  TORCH_CHECK(acc.scalar_type() == at::kFloat, "acc must be fp32");
  TORCH_CHECK(acc.device() == x.device(), "x and acc must be on the same device");
  if (x.is_cuda()) {
#ifdef SDW_TORCH_CUDA
    TORCH_CHECK(acc.is_contiguous(), "acc must be contiguous");
    const at::Tensor xc = x.stride(1) == 1 ? x : x.contiguous();  // rows may be strided
    sdw::kernels::DType dt;
    switch (xc.scalar_type()) {
      case at::kFloat: dt = sdw::kernels::DType::F32; break;
      case at::kBFloat16: dt = sdw::kernels::DType::BF16; break;
      case at::kHalf: dt = sdw::kernels::DType::F16; break;
      default: TORCH_CHECK(false, "unsupported dtype ", xc.scalar_type());
    }
    const c10::cuda::CUDAGuard guard(xc.device());
    const cudaError_t err = sdw::kernels::launchColumnSumSquares(
        xc.data_ptr(), dt, xc.size(0), xc.size(1), xc.stride(0), acc.data_ptr<float>(),
        c10::cuda::getCurrentCUDAStream());
    TORCH_CHECK(err == cudaSuccess, "column sum-of-squares kernel: ", cudaGetErrorString(err));
    return;
#else
    TORCH_CHECK(false, "CUDA tensor given but this build has no CUDA kernels");
#endif
  }
  acc.add_(x.to(at::kFloat).square().sum(0));
}

std::vector<float> columnSumSquares(std::span<const float> x, std::int64_t rows, std::int64_t cols,
                                    Backend backend) {
  if (rows < 0 || cols <= 0 || static_cast<std::int64_t>(x.size()) != rows * cols)
    throw std::invalid_argument("columnSumSquares: buffer of " + std::to_string(x.size()) +
                                " values does not hold [" + std::to_string(rows) + ", " +
                                std::to_string(cols) + "]");
  const bool useCuda =
      backend == Backend::Cuda || (backend == Backend::Auto && deviceInfo().cudaAvailable);
  if (backend == Backend::Cuda && !deviceInfo().cudaAvailable)
    throw std::runtime_error("CUDA backend requested: " + describeDevice(deviceInfo()));

  // from_blob does not copy; the const_cast is safe because we only read.
  at::Tensor xt = at::from_blob(const_cast<float*>(x.data()), {rows, cols}, at::kFloat);
  at::Tensor acc;
  try {
    if (useCuda) {
      xt = xt.to(at::Device(at::kCUDA, 0));
      acc = at::zeros({cols}, xt.options());
    } else {
      acc = at::zeros({cols}, at::kFloat);
    }
    accumulateColumnSumSquares(xt, acc);
    acc = acc.cpu();
  } catch (const c10::Error& e) {
    throw std::runtime_error(e.what_without_backtrace());
  }
  return {acc.data_ptr<float>(), acc.data_ptr<float>() + cols};
}

}  // namespace sdw::gpu
