// sdw-cli tokenize: a model's tokenizer on a text, for checking it against
// another implementation.

#include "app/cli/cli_util.h"
#include "app/cli/command.h"
#include "core/json_limits.h"
#include "core/tokenizer.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <iostream>

namespace sdw::cli {
namespace {

int runTokenize(const Args& a) {
  const std::filesystem::path dir = a.get("model");
  if (dir.empty()) throw UsageError("--model DIR is required");
  const std::string textsFile = a.get("texts");
  if (!a.has("text") && textsFile.empty()) throw UsageError("--text TEXT or --texts FILE is required");
  const std::filesystem::path file = std::filesystem::is_directory(dir) ? dir / "tokenizer.json" : dir;
  const Tokenizer tok = Tokenizer::fromFile(file);
  if (!textsFile.empty()) {
    // Many texts with one load of the tokenizer: a JSON array of strings in, one
    // {"ids", "decoded"} object per text out (JSON array).
    const nlohmann::json texts = readJsonFileBounded(textsFile);
    if (!texts.is_array()) throw std::runtime_error(textsFile + ": expected a JSON array of strings");
    nlohmann::json out = nlohmann::json::array();
    for (std::size_t i = 0; i < texts.size(); ++i) {
      if (!texts[i].is_string())
        throw std::runtime_error(textsFile + ": entry " + std::to_string(i) + " is not a string");
      const auto ids = tok.encode(texts[i].get<std::string>(), !a.has("no-special"));
      out.push_back({{"ids", ids}, {"decoded", tok.decode(ids)}});
    }
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }
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
    "tokenize --model DIR (--text TEXT | --texts FILE) [--no-special] [--json]",
    "Encodes TEXT with DIR/tokenizer.json (or a tokenizer.json given directly), adding\n"
    "the special tokens of its post-processor (e.g. <s>) unless --no-special, and prints\n"
    "one id and token per line, or with --json the ids, tokens and decoded text.",
    {{"model", "DIR", "checkpoint folder or tokenizer.json", ""},
     {"text", "TEXT", "the text to encode", ""},
     {"texts", "FILE", "a JSON array of texts: prints a JSON array of {ids, decoded}, one per text", ""},
     {"no-special", "", "do not add the post-processor's special tokens", ""},
     {"json", "", "machine-readable output", ""}},
    0,
    0,
    runTokenize}};

}  // namespace
}  // namespace sdw::cli
