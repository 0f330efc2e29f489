#pragma once
// The decoding protocol: how every job that decodes chooses its tokens (AR
// calibration and its held-out decode-time reference, evaluation, activation
// drift, the guided story), defined once so that all of them agree unless a
// user asks otherwise.
//
// The default follows the paper's method: the dense model samples from its
// own, untempered, untruncated distribution (temperature 1, top-k off, top-p
// 1). A checkpoint's generation_config.json is not used: its values are the
// checkpoint authors' deployment choice, they differ from model to model, and
// one fixed protocol keeps runs of different models, and calibration against
// evaluation, comparable. generationConfigNote() says when a checkpoint asks
// for something else, so that the difference is visible rather than applied.
//
//   sdw::Decoding d = sdw::defaultDecoding();
//   d.describe();                 // "sampled, T=1.0, top-k off, top-p 1.0"
//   sdw::Decoding{0, 0, 1}.describe();  // "greedy"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace sdw {

struct Decoding {
  double temperature = 1.0;  // <= 0: greedy (argmax, the first index on ties)
  int topK = 0;              // 0: off
  double topP = 1.0;         // 1: off

  bool greedy() const { return temperature <= 0.0; }
  // "greedy", or "sampled, T=0.7, top-k 40, top-p 0.95" (top-k "off" at 0).
  std::string describe() const;
};

// The protocol every decoding job starts from (see the header comment).
inline constexpr Decoding kDefaultDecoding{1.0, 0, 1.0};
inline Decoding defaultDecoding() { return kDefaultDecoding; }
// Greedy: the argmax at every step (top-k and top-p unused).
inline constexpr Decoding kGreedyDecoding{0.0, 0, 1.0};

// Whether two settings choose tokens the same way: greedy equals greedy
// whatever its top-k / top-p say (they are not used), a top-k of 0 and a
// top-p of 1 mean "off".
bool sameDecoding(const Decoding& a, const Decoding& b);

// Throws std::invalid_argument naming `where`, the field, the value and the
// accepted range (temperature >= 0, top-k >= 0, top-p in (0, 1]).
void validateDecoding(const Decoding& d, const std::string& where);

// {"temperature": 1.0, "top_k": 0, "top_p": 1.0}: the keys the run files'
// settings_json use.
std::string decodingToJson(const Decoding& d);
// Keys that are missing take `fallback`'s values (older runs lack some).
// Throws std::invalid_argument on text that is not a JSON object or a value
// of the wrong type.
Decoding decodingFromJson(const std::string& json, const Decoding& fallback = kDefaultDecoding);

// Why the workbench decodes the way it does, in one sentence (help texts).
const char* decodingProtocolReason();

// What a checkpoint's generation_config.json asks for, read with Hugging
// Face's defaults for the fields it leaves out (do_sample false, temperature
// 1, top_k 50, top_p 1).
struct GenerationConfigDecoding {
  bool present = false;          // the file exists and parses
  std::filesystem::path file;
  std::optional<bool> doSample;  // as written
  Decoding requested;            // what transformers' generate() would do with it
};
GenerationConfigDecoding readGenerationConfig(const std::filesystem::path& modelDir);

// One line when `modelDir`'s generation_config.json asks for another
// decoding than `used`, e.g. ".../generation_config.json asks for greedy
// decoding (do_sample false); this run decodes sampled, T=1.0, top-k off,
// top-p 1.0, the workbench's default protocol ...". "" when it agrees or
// there is no such file.
std::string generationConfigNote(const std::filesystem::path& modelDir, const Decoding& used);

// The ids that end a generation: the tokenizer's own stop ids and the eos ids
// of config.json and generation_config.json, sorted and without repeats.
std::vector<std::int32_t> mergeStopIds(std::vector<std::int32_t> tokenizerStops,
                                       std::span<const std::int32_t> configEos,
                                       std::span<const std::int32_t> generationEos);

}  // namespace sdw
