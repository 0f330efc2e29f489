#pragma once
// The pre-tokenizer split patterns of tokenizer.json files (GPT-2, Llama-3,
// Qwen, Gemma, ...) on Oniguruma, the engine the reference `tokenizers`
// library runs them on, with the same syntax (ONIG_SYNTAX_ONIGURUMA, the
// library's default, which the Rust wrapper uses): \p{L}, (?i:...),
// lookaround, lazy and possessive quantifiers, all of it. Leftmost-first,
// UTF-8, Oniguruma's Unicode tables.
//
// Text need not be valid UTF-8: each byte that is not part of a valid
// sequence stands for one character outside every property (it matches `.`,
// \S, [^\s\p{L}] and the like, nothing else), as Oniguruma would see a
// private-use character.
//
// Limits, so that a hostile pattern fails cleanly (RegexError naming the
// pattern) instead of running for ever or exhausting the stack:
//  - a pattern has at most 16384 bytes and nests at most 128 parse levels
//    (Oniguruma's parse depth limit, set process-wide: a group takes two
//    levels, a class or a quantifier one; 63 nested groups compile);
//  - one findAll() over n bytes may backtrack kRetryBudgetBase +
//    kRetryBudgetPerByte * n times (a "retry" is Oniguruma's count: one
//    return to a saved backtracking point). Oniguruma only says whether a
//    search stayed within the retry limit it was given, not how many it took,
//    so each search is first given kFirstRetryLimit, then twice as many as
//    long as it runs out (within one match and over the search's start
//    positions), and the budget is charged with every limit given. The real
//    patterns need a few retries per piece and never a second try except on
//    long runs of white space; (a|a)*$ or (a+)+b need 2^n and stop within
//    tens of milliseconds;
//  - one findAll() over n > 256 bytes may take kCpuSecondsBase +
//    kCpuSecondsPerByte * n seconds of the calling thread's CPU time (checked
//    every 8 searches and at every retry limit reached). The retry count
//    misses one kind of slowness: a pattern that fails at position after
//    position, each time after scanning the rest of the text forwards without
//    backtracking (a*b on "aaa...acb": n^2 steps and few retries). On texts
//    of 256 bytes or fewer the retry budget bounds that too (each retry or
//    failed position scans at most the text: some 10^8 steps). The real
//    patterns run at tens of MB/s, thousands of times faster than the limit.
// Compiled once; findAll may be called from several threads at once.

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct re_pattern_buffer;  // Oniguruma's regex_t

namespace sdw {

class RegexError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Regex {
 public:
  // Throws RegexError: "regex PATTERN: " and Oniguruma's message, or the limit.
  explicit Regex(std::string_view pattern);
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;
  ~Regex();

  const std::string& pattern() const { return pattern_; }

  // Matches as [begin, end) byte ranges of `text`, leftmost-first, scanning
  // left to right without overlap; after an empty match the search goes on
  // one character further. Throws RegexError when the retry budget runs out.
  std::vector<std::pair<std::size_t, std::size_t>> findAll(std::string_view text) const;
  // The same, also saying how much of the retry budget it was charged.
  std::vector<std::pair<std::size_t, std::size_t>> findAll(std::string_view text, std::size_t& retriesCharged) const;

  // Splits `text` into pieces the way a Split pre-tokenizer with behaviour
  // "Isolated" does: every non-empty match and every gap between matches.
  std::vector<std::string_view> splitIsolated(std::string_view text) const;

  static constexpr std::size_t kMaxPatternBytes = 16384;
  static constexpr unsigned kMaxParseDepth = 128;
  static constexpr std::size_t kRetryBudgetBase = 100'000;
  static constexpr std::size_t kRetryBudgetPerByte = 1'000;
  static constexpr std::size_t kFirstRetryLimit = 128;
  static constexpr double kCpuSecondsBase = 0.5;
  static constexpr double kCpuSecondsPerByte = 2e-6;
  static constexpr std::size_t kCpuCheckMinBytes = 256;
  static constexpr std::size_t kSearchesPerCpuCheck = 8;

 private:
  struct Free {
    void operator()(re_pattern_buffer* r) const;
  };
  std::string pattern_;
  std::unique_ptr<re_pattern_buffer, Free> regex_;
  // findAll on valid UTF-8.
  std::vector<std::pair<std::size_t, std::size_t>> findAllValid(std::string_view text, std::size_t& charged) const;
  [[noreturn]] void fail(const std::string& what) const;
};

}  // namespace sdw
