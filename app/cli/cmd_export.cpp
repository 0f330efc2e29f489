// sdw-cli export: a pruned checkpoint in another tool chain's format. One
// format so far: compressed-tensors (llm-compressor), core/compressed_tensors.h.

#include "app/cli/cli_util.h"
#include "app/cli/command.h"
#include "core/compressed_tensors.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>

namespace sdw::cli {
namespace {

int runExport(const Args& a) {
  const std::string format = a.positional.at(0);
  if (format != "compressed-tensors") throw UsageError("unknown format '" + format + "' (supported: compressed-tensors)");
  if (!a.has("model")) throw UsageError("--model DIR is required");
  if (!a.has("out")) throw UsageError("--out DIR is required");
  const std::filesystem::path model = a.get("model"), out = a.get("out");
  const std::string fmt = a.get("format", "sparse-bitmask");
  ct::Format f;
  if (fmt == "sparse-bitmask") f = ct::Format::SparseBitmask;
  else if (fmt == "sparse-24-bitmask") f = ct::Format::Sparse24Bitmask;
  else throw UsageError("--format expects sparse-bitmask or sparse-24-bitmask, got '" + fmt + "'");
  if (std::filesystem::exists(out)) {
    if (!a.has("force")) throw std::runtime_error(out.string() + " exists (--force replaces it)");
    std::filesystem::remove_all(out);
  }
  const std::string structure =
      a.get("structure", f == ct::Format::Sparse24Bitmask ? std::string("2:4") : std::string("unstructured"));
  const ct::ExportResult r = ct::exportCompressedTensors(model, out, f, structure);
  if (a.has("json")) {
    const nlohmann::json j = {{"out", r.outDir.string()},
                              {"format", ct::formatName(r.format)},
                              {"modules", r.compressedModules},
                              {"dense_bytes", r.denseBytes},
                              {"compressed_bytes", r.compressedBytes},
                              {"global_sparsity", r.globalSparsity}};
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("%s: %s, %d projections compressed, %.2f MB -> %.2f MB, %.1f%% zeros\n", r.outDir.string().c_str(),
              ct::formatName(r.format).c_str(), r.compressedModules, static_cast<double>(r.denseBytes) / 1e6,
              static_cast<double>(r.compressedBytes) / 1e6, 100.0 * r.globalSparsity);
  return 0;
}

const Register reg{Command{
    "export",
    "write a pruned checkpoint in the compressed-tensors sparse format (llm-compressor)",
    "export compressed-tensors --model DIR --out DIR [--format sparse-bitmask|sparse-24-bitmask] [--structure S] "
    "[--force] [--json]",
    "Reads a pruned Hugging Face checkpoint (dense with zeros, as `sdw-cli prune` writes it) and\n"
    "writes a compressed-tensors checkpoint: every attention and MLP projection weight as\n"
    "P.shape / P.compressed / P.bitmask (/ P.row_offsets for sparse-bitmask), everything else\n"
    "copied, and config.json's quantization_config with its sparsity_config, as the\n"
    "llm-compressor tool chain writes them (docs/sparse-format.md). sparse-24-bitmask needs\n"
    "2:4 weights. The workbench reads such checkpoints back (`generate --linear sparse`\n"
    "takes their projections packed). Written as DIR.partial and renamed.",
    {{"model", "DIR", "the pruned checkpoint", ""},
     {"out", "DIR", "the folder to create", ""},
     {"format", "FORMAT", "sparse-bitmask or sparse-24-bitmask", "sparse-bitmask"},
     {"structure", "S", "the sparsity_structure recorded (2:4, 4:8, unstructured...)", ""},
     {"force", "", "replace DIR when it exists", ""},
     {"json", "", "machine-readable summary", ""}},
    1,
    1,
    runExport}};

}  // namespace
}  // namespace sdw::cli
