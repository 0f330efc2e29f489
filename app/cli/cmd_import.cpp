// sdw-cli import: bring a checkpoint of another format into the Hugging Face
// layout the workbench reads. One format so far: llama2.c.

#include "app/cli/cli_util.h"
#include "app/cli/command.h"
#include "core/llama2c.h"

#include <nlohmann/json.hpp>

#include <iostream>
#include <unistd.h>

namespace sdw::cli {
namespace {

int runImport(const Args& a) {
  const std::string format = a.positional.at(0);
  if (format != "llama2c") throw UsageError("unknown format '" + format + "' (supported: llama2c)");
  if (a.positional.size() != 3) throw UsageError("import llama2c needs CHECKPOINT.bin and TOKENIZER.bin");
  if (!a.has("out")) throw UsageError("--out DIR is required");
  Llama2cImport r;
  r.checkpoint = a.positional[1];
  r.tokenizer = a.positional[2];
  r.outDir = a.get("out");
  r.overwrite = a.has("force");
  r.command = "sdw-cli import llama2c " + r.checkpoint.filename().string() + " " + r.tokenizer.filename().string() +
              " --out " + r.outDir.filename().string();
  Llama2cImportResult res;
  try {
    res = importLlama2c(r, ttyProgress(isatty(STDERR_FILENO) != 0));
  } catch (const Llama2cError& e) {
    std::cerr << "sdw-cli import: error: " << e.what() << "\n";
    return 1;
  }
  const auto& c = res.config;
  const nlohmann::json j = {{"out", res.outDir.string()},
                            {"format_version", c.version},
                            {"hidden_size", c.dim},
                            {"intermediate_size", c.hiddenDim},
                            {"layers", c.nLayers},
                            {"heads", c.nHeads},
                            {"kv_heads", c.nKvHeads},
                            {"vocab_size", c.vocabSize},
                            {"context", c.seqLen},
                            {"tied_classifier", c.sharedClassifier},
                            {"parameters", res.parameters},
                            {"merges", res.merges}};
  if (a.has("json")) {  // (--out names the folder here, not a JSON file)
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "imported " << r.checkpoint.string() << " -> " << res.outDir.string() << "\n"
            << "  " << c.nLayers << " layers, hidden " << c.dim << ", " << c.nHeads << " heads (" << c.nKvHeads
            << " kv), vocabulary " << c.vocabSize << " (" << res.merges << " merges), context " << c.seqLen << ", "
            << res.parameters << " parameters (float32)\n"
            << "  try: sdw-cli generate --model " << res.outDir.string() << " --prompt \"Once upon a time\"\n";
  return 0;
}

const Register reg{Command{
    "import",
    "convert a llama2.c checkpoint into a Hugging Face folder (safetensors, config, tokenizer.json)",
    "import llama2c CHECKPOINT.bin TOKENIZER.bin --out DIR [--force] [--json]",
    "Reads a llama2.c checkpoint (float32, format version 0 or 1, e.g. stories260K.bin) and\n"
    "its tokenizer (tokenizer.bin, tok512.bin) and writes a Hugging Face Llama folder:\n"
    "model.safetensors (query/key rows permuted to Hugging Face's rotary layout),\n"
    "config.json, generation_config.json, tokenizer.json (SentencePiece-style BPE with\n"
    "byte fallback), tokenizer_config.json and IMPORT.md with the sources' SHA-256.\n"
    "The folder is written as DIR.partial and renamed when complete.",
    {{"out", "DIR", "the folder to create", ""},
     {"force", "", "replace DIR when it exists", ""},
     {"json", "", "machine-readable summary", ""}},
    1,
    3,
    runImport}};

}  // namespace
}  // namespace sdw::cli
