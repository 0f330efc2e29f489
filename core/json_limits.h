#pragma once
// Bounded JSON parsing: every JSON text that comes from a file (config.json,
// tokenizer.json, a safetensors header, a run file's attributes, prompt
// lines, benchmark results) goes through parseJsonBounded, so that a hostile
// file cannot nest deep enough to overflow the stack when the value is
// copied, printed or walked, nor be large enough to exhaust memory.
//
// nlohmann's parser itself is iterative, but copying, dump() and our own
// loaders recurse once per level; the depth limit covers all of them.
// Real files nest far less: tokenizer.json 4 levels, config.json 3, run
// settings 4 (docs/run-format.md, "Hostile input").

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace sdw {

struct JsonLimits {
    std::size_t maxDepth = 64;             // nested arrays and objects
    std::size_t maxBytes = 64ull << 20;    // 64 MiB of text
};

// Limits for the files that are larger than most: tokenizer.json (Gemma 3's
// is 33 MB) and a safetensors header (the format's own reader refuses
// headers above 100 MB).
inline constexpr JsonLimits kTokenizerJsonLimits{64, 256ull << 20};
inline constexpr JsonLimits kSafetensorsHeaderLimits{64, 100'000'000};

class JsonInputError : public std::runtime_error {
public:
    enum class Reason { NotJson, TooDeep, TooLarge, Unreadable };
    JsonInputError(Reason reason, const std::string& message) : std::runtime_error(message), reason_(reason) {}
    Reason reason() const { return reason_; }
    // True for TooDeep and TooLarge: the text broke a limit (whether or not
    // it is otherwise valid JSON).
    bool overLimit() const { return reason_ == Reason::TooDeep || reason_ == Reason::TooLarge; }

private:
    Reason reason_;
};

// Parses `text`; `source` names the file (and field) in messages, which are
// one line: "<source>: JSON nested deeper than 64 levels (at byte 65)",
// "<source>: 300 MB of JSON is over the 256 MiB limit", "<source>: not valid
// JSON: ...". Throws JsonInputError.
nlohmann::json parseJsonBounded(std::string_view text, const std::string& source, const JsonLimits& limits = {});

// The whole of a file, refused before reading when it is larger than
// `maxBytes` (JsonInputError TooLarge) or cannot be read (Unreadable).
std::string readFileBounded(const std::filesystem::path& file, std::size_t maxBytes);

// readFileBounded + parseJsonBounded, the file's path as the source.
nlohmann::json readJsonFileBounded(const std::filesystem::path& file, const JsonLimits& limits = {});

}  // namespace sdw
