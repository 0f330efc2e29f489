// sdw-cli device: what compute this build and machine offer, with a quick
// self-check of the CUDA kernel path against the CPU path.

#include "app/cli/command.h"
#include "gpu/colstats.h"
#include "gpu/device.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <iostream>
#include <random>

namespace sdw::cli {
namespace {

int runDevice(const Args& a) {
  const auto& d = gpu::deviceInfo();
  nlohmann::json j = {{"kernels_built", d.kernelsBuilt},
                      {"torch_has_cuda", d.torchHasCuda},
                      {"cuda_available", d.cudaAvailable},
                      {"device_count", d.deviceCount},
                      {"name", d.name},
                      {"compute_capability", std::to_string(d.ccMajor) + "." + std::to_string(d.ccMinor)},
                      {"memory_bytes", d.memoryBytes},
                      {"torch_version", d.torchVersion},
                      {"summary", gpu::describeDevice(d)}};
  if (!d.cudaAvailable) j["reason"] = d.reason;

  if (a.has("self-test")) {
    // Compare the GPU kernel with the CPU path on random data.
    const std::int64_t rows = 1000, cols = 777;
    std::vector<float> x(static_cast<std::size_t>(rows * cols));
    std::mt19937 rng(7);
    std::normal_distribution<float> nd;
    for (auto& v : x) v = nd(rng);
    const auto cpu = gpu::columnSumSquares(x, rows, cols, gpu::Backend::Cpu);
    if (d.cudaAvailable) {
      const auto cuda = gpu::columnSumSquares(x, rows, cols, gpu::Backend::Cuda);
      double maxRel = 0;
      for (std::size_t c = 0; c < cpu.size(); ++c)
        maxRel = std::max(maxRel, std::abs(double(cuda[c]) - cpu[c]) / std::max(1e-6, double(cpu[c])));
      j["self_test"] = {{"kernel", "column_sum_squares"}, {"max_rel_diff", maxRel}, {"passed", maxRel < 1e-4}};
      if (!(maxRel < 1e-4)) {
        std::cout << j.dump(2) << "\n";
        std::cerr << "sdw-cli device: error: GPU self-test failed (max relative difference " << maxRel << ")\n";
        return 1;
      }
    } else {
      j["self_test"] = {{"skipped", true}, {"reason", d.reason}};
    }
  }

  if (a.has("json")) {
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << "device:        " << gpu::describeDevice(d) << "\n"
              << "CUDA kernels:  " << (d.kernelsBuilt ? "built" : "not built") << "\n"
              << "LibTorch:      " << d.torchVersion << (d.torchHasCuda ? " (CUDA)" : " (CPU only)") << "\n";
    if (j.contains("self_test")) {
      if (j["self_test"].contains("skipped")) std::cout << "self-test:     skipped (" << d.reason << ")\n";
      else std::cout << "self-test:     passed (max rel diff " << j["self_test"]["max_rel_diff"].get<double>() << ")\n";
    }
  }
  return 0;
}

const Register reg{Command{
    "device",
    "show the GPU this build can use (and why not)",
    "device [--self-test] [--json]",
    "Prints what compute this build and machine offer: whether the CUDA kernels were\n"
    "built, whether the linked LibTorch has CUDA, and the device found. With\n"
    "--self-test, runs a CUDA kernel and checks it against the CPU path.",
    {{"self-test", "", "run the kernel self-check", ""}, {"json", "", "machine-readable output", ""}},
    0,
    0,
    runDevice}};

}  // namespace
}  // namespace sdw::cli
