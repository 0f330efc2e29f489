// sdw-cli prune: SparseGPT, Wanda or magnitude pruning of a checkpoint's
// attention and MLP projections from a calibration run; writes the pruned
// checkpoint, the bitmask file and the pruning record; progress per layer on
// stderr, the per-module table on stdout (or JSON).

#include "app/cli/command.h"
#include "core/compressed_tensors.h"
#include "gpu/model_config.h"
#include "gpu/pruning.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>

namespace sdw::cli {
namespace {


int runPrune(const Args& a) {
  gpu::PruneSettings s;
  s.model = a.get("model");
  s.calibration = a.get("calibration");
  s.pattern = a.get("pattern");
  s.percdamp = a.getDouble("percdamp", 0.01);
  s.blocksize = static_cast<int>(a.getInt("blocksize", 128));
  s.device = a.get("device", "cpu");
  s.out = a.get("out");
  s.record = a.get("record");
  s.overwrite = a.has("overwrite");
  for (const char* req : {"model", "calibration", "method", "pattern", "out"})
    if (!a.has(req)) throw UsageError(std::string("--") + req + " is required");
  gpu::requireCheckpointFolder(s.model);  // a missing or wrong path fails as the other commands' do (exit 1)
  try {
    s.method = gpu::parsePruneMethod(a.get("method"));
    if (a.has("order")) s.order = gpu::parsePruneOrder(a.get("order"));
    if (s.method == gpu::PruneMethod::DuoGpt) {
      if (s.order == gpu::PruneOrder::Parallel && a.has("order"))
        throw std::invalid_argument("duogpt prunes in sequential order (inputs through the pruned layers)");
      s.order = gpu::PruneOrder::Sequential;
      s.activationSparsity = a.getDouble("activation-sparsity", 0.5);
      s.residualScale = a.getDouble("residual-scale", 0.25);
    } else if (a.has("activation-sparsity") || a.has("residual-scale")) {
      throw std::invalid_argument("--activation-sparsity and --residual-scale are DuoGPT's settings (--method duogpt)");
    }
    gpu::validatePruneSettings(s);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  const bool json = a.has("json");
  const std::string exportFormat = a.get("export");
  if (!exportFormat.empty() && exportFormat != "compressed-tensors")
    throw UsageError("--export expects compressed-tensors, got '" + exportFormat + "'");

  const auto r = gpu::pruneModel(
      s,
      [&](const Progress& p) {
        std::fprintf(stderr, "\r  %-60.60s %4.0f / %.0f %-8s", p.stage.c_str(), p.done, p.total, p.unit.c_str());
        return true;
      },
      [&](const gpu::ModulePruneRow& row) {
        std::fprintf(stderr, "\r  layer %d %-44s rel. error %.4f, %.2f s%s\n", row.layer, row.name.c_str(),
                     row.relOutputError, row.seconds,
                     row.dampingSteps > 0 ? " (damping raised)" : "");
      });
  std::fprintf(stderr, "\n");
  if (r.sparseFile.empty()) {
    const gpu::PruningPattern pat = gpu::parsePruningPattern(s.pattern);
    std::fprintf(stderr, "no packed file: %s\n",
                 pat.alongColumns ? "model.sdwcolumn holds col2:4 and col4:8 only; this model decodes dense"
                                  : "model.sdwsparse holds 50% N:M with M | 32 only; this model decodes dense");
  }

  // The compressed-tensors export: OUT/compressed-tensors, a checkpoint llm-compressor's tools read.
  std::optional<ct::ExportResult> exported;
  if (!exportFormat.empty()) {
    const gpu::PruningPattern pat = gpu::parsePruningPattern(s.pattern);
    const bool is24 = pat.name() == "2:4";
    const std::filesystem::path dst = s.out / "compressed-tensors";
    if (std::filesystem::exists(dst)) std::filesystem::remove_all(dst);  // pruneModel replaced the checkpoint
    // Column N:M is no structure the format names (its "N:M" are row groups): declared unstructured.
    const std::string structure = pat.unstructured || pat.alongColumns ? "unstructured" : pat.name();
    exported = ct::exportCompressedTensors(s.out, dst,
                                           is24 ? ct::Format::Sparse24Bitmask : ct::Format::SparseBitmask, structure);
  }

  // Per layer: summed output loss, mean relative output error.
  std::map<int, std::pair<double, double>> perLayer;
  std::map<int, int> perLayerCount;
  for (const auto& m : r.modules) {
    perLayer[m.layer].first += m.outputLoss;
    perLayer[m.layer].second += m.relOutputError;
    ++perLayerCount[m.layer];
  }

  if (json) {
    nlohmann::json mods = nlohmann::json::array();
    for (const auto& m : r.modules)
      mods.push_back({{"name", m.name}, {"layer", m.layer}, {"rows", m.rows}, {"cols", m.cols},
                      {"loss", m.loss}, {"output_loss", m.outputLoss}, {"rel_output_error", m.relOutputError},
                      {"sparsity", m.sparsity}, {"percdamp_used", m.percdampUsed},
                      {"damping_steps", m.dampingSteps}, {"dead_inputs", m.deadInputs},
                      {"seconds", m.seconds}, {"packed", m.packed}});
    nlohmann::json layers = nlohmann::json::array();
    for (const auto& [l, v] : perLayer)
      layers.push_back({{"layer", l}, {"output_loss", v.first},
                        {"mean_rel_output_error", v.second / perLayerCount[l]}});
    nlohmann::json j = {{"method", gpu::pruneMethodName(s.method)},
                              {"pattern", gpu::parsePruningPattern(s.pattern).name()},
                              {"order", gpu::pruneOrderName(s.order)},
                              {"percdamp", s.percdamp},
                              {"blocksize", s.blocksize},
                              {"device", s.device},
                              {"calibration_run", s.calibration.string()},
                              {"calibration_run_id", r.calibrationRunId},
                              {"checkpoint", r.checkpoint.string()},
                              {"sparse_file", r.sparseFile.string()},
                              {"record", r.record.string()},
                              {"compressed_tensors", exported ? nlohmann::json{{"dir", exported->outDir.string()},
                                                                               {"format", ct::formatName(exported->format)},
                                                                               {"modules", exported->compressedModules},
                                                                               {"dense_bytes", exported->denseBytes},
                                                                               {"compressed_bytes", exported->compressedBytes}}
                                                              : nlohmann::json()},
                              {"total_seconds", r.seconds},
                              {"recapture_seconds", r.recaptureSeconds},
                              {"layers", layers},
                              {"modules", mods}};
    if (s.method == gpu::PruneMethod::DuoGpt) {
      j["activation_sparsity"] = s.activationSparsity;
      j["residual_scale"] = s.residualScale;
    }
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("%-44s %5s %11s %11s %9s %8s %9s %7s\n", "module", "layer", "loss", "output loss", "rel.error",
              "sparsity", "percdamp", "seconds");
  for (const auto& m : r.modules)
    std::printf("%-44s %5d %11.4g %11.4g %9.5f %8.4f %9.3g %7.2f\n", m.name.c_str(), m.layer, m.loss, m.outputLoss,
                m.relOutputError, m.sparsity, m.percdampUsed, m.seconds);
  std::printf("\n%5s %13s %18s\n", "layer", "output loss", "mean rel. error");
  for (const auto& [l, v] : perLayer) std::printf("%5d %13.5g %18.5f\n", l, v.first, v.second / perLayerCount[l]);
  std::printf("\ncheckpoint:  %s\n", r.checkpoint.string().c_str());
  if (!r.sparseFile.empty())
    std::printf("%s %s\n", r.sparseFile.extension() == ".sdwcolumn" ? "column:     " : "bitmask:    ",
                r.sparseFile.string().c_str());
  if (exported)
    std::printf("export:      %s (%s, %d projections, %.1f MB -> %.1f MB)\n", exported->outDir.string().c_str(),
                ct::formatName(exported->format).c_str(), exported->compressedModules, exported->denseBytes / 1e6,
                exported->compressedBytes / 1e6);
  std::printf("record:      %s\n", r.record.string().c_str());
  std::printf("total:       %.2f s%s\n", r.seconds, s.order == gpu::PruneOrder::Sequential ? " (incl. re-capture)" : "");
  return 0;
}

const Register reg{Command{
    "prune",
    "prune a checkpoint's projections (SparseGPT, Wanda, magnitude, DuoGPT) from a calibration run",
    "prune --model DIR --calibration RUN --method sparsegpt|wanda|magnitude|duogpt --pattern "
    "2:4|4:8|8:16|16:32|col2:4|unstructured50 [--order parallel|sequential] [--activation-sparsity 0.5] "
    "[--residual-scale 0.25] "
    "[--percdamp 0.01] [--blocksize 128] "
    "[--device cpu|cuda] --out DIR [--record RUN.sdw.h5] [--export compressed-tensors] [--json]",
    "Prunes every attention and MLP projection (never embeddings or lm_head) of the checkpoint in --model "
    "with the statistics of the calibration run --calibration, and writes to --out a Hugging Face checkpoint "
    "(dense with zeros, the model's dtype, config and tokenizer copied), the packed bitmask file "
    "model.sdwsparse for 50% N:M patterns, and a run file of kind \"pruning\" (per-module losses, damping, "
    "times). Sequential order re-captures each layer's statistics from the same calibration source through "
    "the already pruned layers. DuoGPT (always sequential) solves SparseGPT's problem for a model that will "
    "decode with activation sparsity --activation-sparsity: inputs through the pruned layers sparsified, "
    "targets from the dense model (docs/pruning.md \"DuoGPT\"). General N:M patterns (N kept per M "
    "consecutive inputs of a row) are accepted; only 50% ones with M | 32 get a bitmask file. colN:M keeps N of "
    "every M consecutive rows of each input column (docs/pruning.md \"Column N:M\"); col2:4 and col4:8 get "
    "model.sdwcolumn, the spMspV kernel's column layout. See "
    "docs/pruning.md.",
    {{"model", "DIR", "Hugging Face checkpoint folder", ""},
     {"calibration", "RUN", "calibration run (.sdw.h5) of this model", ""},
     {"method", "NAME", "sparsegpt, wanda, magnitude or duogpt", ""},
     {"pattern", "P", "2:4, 4:8, 8:16, 16:32 (any N:M), col2:4 (any colN:M) or unstructured50", ""},
     {"order", "ORDER", "parallel or sequential (default: parallel; duogpt: sequential)", ""},
     {"activation-sparsity", "P", "duogpt: run-time activation sparsity p_x in [0, 1) (default: 0.5)", ""},
     {"residual-scale", "A", "duogpt: share of the dense model's output residual corrected, in [0, 1] (default: 0.25)",
      ""},
     {"percdamp", "X", "SparseGPT damping, a fraction of mean(diag H)", "0.01"},
     {"blocksize", "N", "SparseGPT columns per block", "128"},
     {"device", "DEV", "cpu, cuda or cuda:N", "cpu"},
     {"out", "DIR", "output folder", ""},
     {"record", "RUN", "pruning record (default: OUT/pruning.sdw.h5)", ""},
     {"overwrite", "", "replace an existing checkpoint and record", ""},
     {"export", "FORMAT",
      "also write OUT/compressed-tensors: the llm-compressor format (sparse-24-bitmask for 2:4, else sparse-bitmask)",
      ""},
     {"json", "", "machine-readable output", ""}},
    0,
    0,
    runPrune}};

}  // namespace
}  // namespace sdw::cli
