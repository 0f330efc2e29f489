#include "gpu/device.h"

#include <torch/types.h>
#include <torch/version.h>

#include <cstdio>

#ifdef SDW_TORCH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>
#endif

namespace sdw::gpu {

namespace {
DeviceInfo probe() {
  DeviceInfo info;
  info.torchVersion = TORCH_VERSION;
#ifdef SDW_HAVE_CUDA_KERNELS
  info.kernelsBuilt = true;
#endif
#ifdef SDW_TORCH_CUDA
  info.torchHasCuda = true;
#endif
  if (!info.kernelsBuilt) {
    info.reason = "this build has no CUDA kernels (nvcc was not found at configure time)";
    return info;
  }
  if (!info.torchHasCuda) {
    info.reason = "the LibTorch in this build has no CUDA support (CPU-only LibTorch " +
                  info.torchVersion + ")";
    return info;
  }
#ifdef SDW_TORCH_CUDA
  info.deviceCount = static_cast<int>(c10::cuda::device_count());
  if (info.deviceCount <= 0) {
    info.reason = "no CUDA device found";
    return info;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    info.reason = "cudaGetDeviceProperties failed";
    return info;
  }
  info.name = prop.name;
  info.ccMajor = prop.major;
  info.ccMinor = prop.minor;
  info.memoryBytes = prop.totalGlobalMem;
  if (info.ccMajor < 8) {
    info.reason = "device " + info.name + " is older than sm_80; the kernels are built for sm_80 and sm_90";
    return info;
  }
  info.cudaAvailable = true;
#endif
  return info;
}
}  // namespace

const DeviceInfo& deviceInfo() {
  static const DeviceInfo info = probe();  // thread-safe static init
  return info;
}

std::string describeDevice(const DeviceInfo& info) {
  if (!info.cudaAvailable) return "no GPU: " + info.reason;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s (sm_%d%d, %.1f GiB)", info.name.c_str(), info.ccMajor,
                info.ccMinor, static_cast<double>(info.memoryBytes) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

Provenance engineProvenance(const std::string& modelId, const std::string& settingsJson, const std::string& device) {
  Provenance p = Provenance::capture();
  p.modelId = modelId;
  p.settingsJson = settingsJson;
  p.gpu = device.rfind("cuda", 0) == 0 ? describeDevice(deviceInfo()) : "none";
  return p;
}

}  // namespace sdw::gpu
