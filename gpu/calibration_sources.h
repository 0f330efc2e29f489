#pragma once
// Calibration sources, torch-free: a fixed-text corpus read into documents
// and cut into seeded random token windows, and a prompt set.

#include "core/tokenizer.h"

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace sdw::gpu {

// One document per entry. `.txt`: blocks separated by "# doc <id> <category>"
// header lines (the headers are not text; text before the first header is a
// document of its own); lines of a block are joined with "\n". `.jsonl`: one
// JSON object per line, its "text" field. Throws std::invalid_argument naming
// the file and line.
std::vector<std::string> readCorpus(const std::filesystem::path& file);

struct Prompt {
  std::string id;
  std::string prompt;
};
// `.jsonl`, one {"id": ..., "prompt": ...} per line ("id" defaults to the
// line number). Empty lines are skipped; an empty prompt is allowed (with a
// bos token it is a 1-token prompt).
std::vector<Prompt> readPrompts(const std::filesystem::path& file);
// The first `maxPrompts` prompts of `file` (all when <= 0); throws
// std::invalid_argument ("<who>: no prompts in <file>") when there are none.
std::vector<Prompt> readPromptSubset(const std::filesystem::path& file, int maxPrompts, const std::string& who);

// Window w (w = 0, 1, ...) is a function of (seed, w) alone: a document drawn
// uniformly, redrawn while it is shorter than the window, then a uniform
// start inside it. Documents are tokenized (without special tokens) when
// first drawn.
class CorpusWindows {
 public:
  CorpusWindows(std::vector<std::string> documents, const Tokenizer& tokenizer, int window, std::uint64_t seed);

  struct Window {
    std::vector<std::int32_t> ids;  // [window]
    std::int64_t document = 0;
    std::int64_t start = 0;
  };
  Window draw(std::int64_t index);
  std::size_t documents() const { return docs_.size(); }

 private:
  const std::vector<std::int32_t>& tokens(std::size_t doc);
  std::vector<std::string> docs_;
  const Tokenizer& tok_;
  int window_;
  std::uint64_t seed_;
  std::map<std::size_t, std::vector<std::int32_t>> cache_;
};

}  // namespace sdw::gpu
