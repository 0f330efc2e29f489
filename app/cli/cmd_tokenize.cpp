// sdw-cli tokenize: a model's tokenizer on a text, for checking it against
// another implementation.

#include "app/cli/cli_util.h"
#include "app/cli/command.h"
#include "core/tokenizer.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <iostream>

namespace sdw::cli {
namespace {

int runTokenize(const Args& a) {
  const std::filesystem::path dir = a.get("model");
  if (dir.empty()) throw UsageError("--model DIR is required");
  if (!a.has("text")) throw UsageError("--text TEXT is required");
  const std::filesystem::path file = std::filesystem::is_directory(dir) ? dir / "tokenizer.json" : dir;
  const Tokenizer tok = Tokenizer::fromFile(file);
  const std::string text = a.get("text");
  const auto ids = tok.encode(text, !a.has("no-special"));
  nlohmann::json tokens = nlohmann::json::array();
  for (const auto id : ids) tokens.push_back(tok.tokenText(id));
  const nlohmann::json j = {{"ids", ids}, {"tokens", tokens}, {"decoded", tok.decode(ids)},
                            {"decoded_skip_special", tok.decode(ids, true)}};
  if (emitJson(a, j.dump(2))) return 0;
  for (std::size_t i = 0; i < ids.size(); ++i)
    std::cout << ids[i] << "\t" << tokens[i].get<std::string>() << "\n";
  return 0;
}

const Register reg{Command{
    "tokenize",
    "encode a text with a checkpoint's tokenizer (ids and tokens)",
    "tokenize --model DIR --text TEXT [--no-special] [--json]",
    "Encodes TEXT with DIR/tokenizer.json (or a tokenizer.json given directly), adding\n"
    "the special tokens of its post-processor (e.g. <s>) unless --no-special, and prints\n"
    "one id and token per line, or with --json the ids, tokens and decoded text.",
    {{"model", "DIR", "checkpoint folder or tokenizer.json", ""},
     {"text", "TEXT", "the text to encode", ""},
     {"no-special", "", "do not add the post-processor's special tokens", ""},
     {"json", "", "machine-readable output", ""}},
    0,
    0,
    runTokenize}};

}  // namespace
}  // namespace sdw::cli
