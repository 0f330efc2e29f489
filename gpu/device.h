#pragma once
// What compute this build and this machine offer. Plain types only.

#include "core/provenance.h"

#include <cstdint>
#include <string>

namespace sdw::gpu {

struct DeviceInfo {
  bool kernelsBuilt = false;   // this build compiled the CUDA kernels (nvcc found)
  bool torchHasCuda = false;   // the LibTorch linked in was built with CUDA
  bool cudaAvailable = false;  // ...and a device answers now
  int deviceCount = 0;
  std::string name;            // e.g. "NVIDIA H200"; empty without a device
  int ccMajor = 0, ccMinor = 0;
  std::uint64_t memoryBytes = 0;
  std::string torchVersion;
  std::string reason;          // why the GPU path is off, in one line
};

// Cheap after the first call (cached).
const DeviceInfo& deviceInfo();

// "NVIDIA H200 (sm_90, 139.8 GiB)" or "no GPU: <reason>".
std::string describeDevice(const DeviceInfo& info);

// The provenance of a run the engine computed on `device` ("cpu", "cuda",
// "cuda:N"): captured now, with the model and settings given and the GPU
// described (or "none" on the CPU). Model files are the caller's to add.
Provenance engineProvenance(const std::string& modelId, const std::string& settingsJson, const std::string& device);

// True when CUDA kernels can run here.
inline bool gpuUsable() { return deviceInfo().cudaAvailable; }

}  // namespace sdw::gpu
