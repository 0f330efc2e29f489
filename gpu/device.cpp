#include "gpu/device.h"
#include "core/paths.h"

#include <torch/types.h>
#include <torch/version.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#ifdef SDW_TORCH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace sdw::gpu {

namespace {

#ifndef SDW_CUDA_SETTING
#define SDW_CUDA_SETTING "AUTO"
#endif

// A GPU the NVIDIA driver lists, seen without CUDA: what a CPU-only build can
// still tell its user ("there is a GPU; this build cannot use it").
std::string driverGpu() {
  std::ifstream version("/proc/driver/nvidia/version");
  if (!version) return {};
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec)) {
    std::ifstream info(e.path() / "information");
    for (std::string line; std::getline(info, line);)
      if (line.rfind("Model:", 0) == 0) {
        const auto b = line.find_first_not_of(" \t", 6);
        return b == std::string::npos ? std::string("an NVIDIA GPU") : line.substr(b);
      }
    return "an NVIDIA GPU";
  }
  return {};
}

// Why the kernels were not built, from the configure-time setting.
std::string noKernelsReason() {
  if (std::string(SDW_CUDA_SETTING) == "OFF")
    return "CUDA is turned off in this build (SDW_CUDA=OFF, e.g. by the ci preset)";
  return "this build has no CUDA kernels (nvcc was not found at configure time)";
}

DeviceInfo probe() {
  DeviceInfo info;
  info.torchVersion = TORCH_VERSION;
#ifdef SDW_HAVE_CUDA_KERNELS
  info.kernelsBuilt = true;
#endif
#ifdef SDW_TORCH_CUDA
  info.torchHasCuda = true;
#endif
  if (!info.torchHasCuda || !info.kernelsBuilt) {
    // Name every missing piece, the LibTorch first: without a CUDA LibTorch
    // nothing else helps.
    std::string why;
    if (!info.torchHasCuda) why = "the LibTorch in this build is CPU-only (" + info.torchVersion + ")";
    if (!info.kernelsBuilt) why += (why.empty() ? "" : "; ") + noKernelsReason();
    if (const std::string gpu = driverGpu(); !gpu.empty())
      why += "; the driver lists " + gpu + ": build with a CUDA LibTorch (tools/quickstart.sh finds one)";
    info.reason = why;
    return info;
  }
#ifdef SDW_TORCH_CUDA
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    if (err == cudaErrorInsufficientDriver)
      info.reason = "the NVIDIA driver is missing or older than this CUDA runtime needs";
    else if (err == cudaErrorNoDevice)
      info.reason = "no CUDA device found (the driver lists none)";
    else
      info.reason = std::string("CUDA cannot start: ") + cudaGetErrorString(err);
    return info;
  }
  info.deviceCount = count;
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
  p.modelId = recordedPath(modelId);
  p.settingsJson = settingsJson;
  p.gpu = device.rfind("cuda", 0) == 0 ? describeDevice(deviceInfo()) : "none";
  return p;
}

}  // namespace sdw::gpu
