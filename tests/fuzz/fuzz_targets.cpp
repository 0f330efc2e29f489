// The fuzz targets (tests/fuzz/fuzz_targets.h).

#include "tests/fuzz/fuzz_targets.h"

#include "core/compressed_tensors.h"
#include "core/json_limits.h"
#include "core/runstore.h"
#include "core/safetensors.h"
#include "core/sparse_file.h"
#include "core/tokenizer.h"
#include "gpu/model_config.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace sdw::fuzz {
namespace {

namespace fs = std::filesystem;

// A private scratch folder per process (parsers that take paths read from it).
const fs::path& scratch() {
  static const fs::path dir = [] {
    const fs::path d = fs::temp_directory_path() / ("sdw-fuzz-" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

fs::path writeFile(const std::string& name, const std::uint8_t* data, std::size_t size) {
  const fs::path p = scratch() / name;
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return p;
}

std::string text(const std::uint8_t* data, std::size_t size) { return {reinterpret_cast<const char*>(data), size}; }

template <class Fn>
bool accepted(Fn fn) {
  try {
    fn();
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

bool modelConfig(const std::uint8_t* d, std::size_t n) {
  return accepted([&] {
    const gpu::ModelConfig c = gpu::parseModelConfig(text(d, n), "fuzz/config.json");
    (void)gpu::projectionModules(c, "bfloat16");  // what model-info and the memory estimate walk
    (void)gpu::architectureSummary(c);
  });
}

bool tokenizerJson(const std::uint8_t* d, std::size_t n) {
  return accepted([&] {
    const Tokenizer t = Tokenizer::fromJson(text(d, n), "fuzz/tokenizer.json");
    for (const char* s : {"Hello world", " leading  spaces\n\nand lines", "日本語 émoji 👍🏽", "<s>[INST] x [/INST]"}) {
      const auto ids = t.encode(s);
      (void)t.decode(ids);
    }
  });
}

bool safetensors(const std::uint8_t* d, std::size_t n) {
  const fs::path p = writeFile("model.safetensors", d, n);
  return accepted([&] {
    const SafetensorsFile f = SafetensorsFile::open(p);
    std::uint64_t sum = 0;
    for (const auto& [name, v] : f.tensors())
      for (const std::byte b : v.bytes.first(std::min<std::size_t>(v.bytes.size(), 64))) sum += static_cast<unsigned>(b);
    (void)sum;
  });
}

bool sparseFile(const std::uint8_t* d, std::size_t n) {
  const fs::path p = writeFile("model.sdwsparse", d, n);
  return accepted([&] {
    for (const auto& m : sparse::readSparseFile(p)) (void)sparse::unpack(m.matrix);
  });
}

bool runFile(const std::uint8_t* d, std::size_t n) {
  const fs::path p = writeFile("run.sdw.h5", d, n);
  return accepted([&] {
    const auto r = runstore::RunReader::open(p);
    (void)r.status();
    (void)r.kind();
  });
}

bool compressedTensorsConfig(const std::uint8_t* d, std::size_t n) {
  const fs::path dir = scratch() / "ct";
  fs::create_directories(dir);
  std::ofstream(dir / "config.json", std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(d),
                                                                              static_cast<std::streamsize>(n));
  return accepted([&] { (void)ct::declaredFormat(dir); });
}

bool boundedJson(const std::uint8_t* d, std::size_t n) {
  // Every JSON the workbench reads goes through this parser (prompts and corpus
  // lines, settings attributes of run files, benchmark results).
  return accepted([&] { (void)parseJsonBounded(text(d, n), "fuzz.json"); });
}

}  // namespace

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {
      {"config", modelConfig},           {"tokenizer", tokenizerJson}, {"safetensors", safetensors},
      {"sdwsparse", sparseFile},         {"runfile", runFile},         {"compressed_tensors", compressedTensorsConfig},
      {"json", boundedJson},
  };
  return all;
}

const Target* findTarget(const std::string& name) {
  for (const auto& t : targets())
    if (name == t.name) return &t;
  return nullptr;
}

}  // namespace sdw::fuzz
