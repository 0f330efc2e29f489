#pragma once
// A small backtracking regex engine over Unicode code points, for the
// pre-tokenizer split patterns of tokenizer.json files (GPT-2, Llama-3,
// Qwen2 and similar). std::regex has no \p{L}, so this is what they run on.
//
// Semantics follow Oniguruma / fancy-regex (what the reference tokenizers
// use): leftmost alternative wins, greedy quantifiers backtrack.
// Supported: literals and escapes (\r \n \t \f \v \0 \xHH \x{H..} \uHHHH,
// escaped punctuation), `.`, `^`, `$`, classes `[...]` with negation, ranges
// and escapes inside, \s \S \d \D \w \W, \p{..} \P{..} \pL for L Lu Ll Lt
// Lm Lo M N Nd White_Space, groups `(...)` `(?:...)` `(?i:...)` `(?i)`,
// lookahead `(?=...)` `(?!...)`, quantifiers ? * + {n} {n,} {n,m} and their
// lazy forms. Case-insensitivity uses simple case folding for ASCII (plus
// U+017F and U+212A). Anything else is rejected with RegexError.
// Limits, so that a hostile pattern fails cleanly (RegexError) instead of
// overflowing the stack or running for ever:
//  - a pattern has at most 16384 code points and nests groups and stacked
//    quantifiers at most 64 deep;
//  - a quantified group (not a single character or class) may repeat at
//    most 1000 times in one match, and matching nests at most 10000
//    backtracking points;
//  - one findAll() over n code points may take kStepBudgetBase +
//    kStepBudgetPerCodePoint * n steps (a step: one node visited or one
//    character scanned). The real patterns (GPT-2, Llama-3, Qwen2) take a
//    few steps per code point on any text; (a|a)*$ or (.*)*x take 2^n and
//    stop within a few milliseconds on short texts and well under a second
//    on texts of thousands of characters.

#include "core/unicode.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sdw {

class RegexError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class RegexLite {
public:
    // Throws RegexError naming the position and the construct not supported.
    explicit RegexLite(std::string_view pattern);

    const std::string& pattern() const { return pattern_; }

    // Matches as [begin, end) byte ranges of `text`, leftmost-first, scanning
    // left to right without overlap; an empty match advances one code point.
    std::vector<std::pair<std::size_t, std::size_t>> findAll(std::string_view text) const;

    // Splits `text` into pieces the way a Split pre-tokenizer with behaviour
    // "Isolated" does: every match and every gap between matches is a piece.
    std::vector<std::string_view> splitIsolated(std::string_view text) const;

    // Matches as code point index ranges over already decoded text.
    std::vector<std::pair<std::size_t, std::size_t>> findAll(std::u32string_view cps) const;
    // The same, also saying how many steps of the budget it took.
    std::vector<std::pair<std::size_t, std::size_t>> findAll(std::u32string_view cps, std::size_t& steps) const;

    static constexpr std::size_t kStepBudgetBase = 100'000;
    static constexpr std::size_t kStepBudgetPerCodePoint = 1'000;

    // Compiled program: a graph of nodes, each naming its successor.
    struct CharClass {
        std::vector<std::pair<char32_t, char32_t>> ranges;            // inclusive
        std::vector<std::pair<unicode::Property, bool>> properties;  // (property, negated)
        bool negated = false;
        bool caseInsensitive = false;
        std::array<std::uint64_t, 2> ascii{};  // precomputed answer for code points < 128
    };
    enum class NodeKind { Accept, Char, Any, Class, LineStart, LineEnd, TextStart, TextEnd, Alt, RepeatAtom, Repeat, RepeatTail, Look };
    struct Node {
        NodeKind kind = NodeKind::Accept;
        int next = -1;
        char32_t cp = 0;               // Char
        bool caseInsensitive = false;  // Char
        int cls = -1;                  // Class
        std::vector<int> branches;     // Alt
        int child = -1;                // Repeat: body; Look: sub-program; RepeatAtom: the atom node
        int min = 0, max = -1;         // Repeat*: max -1 = unbounded
        bool greedy = true;
        bool negative = false;         // Look
    };

private:
    std::string pattern_;
    std::vector<Node> nodes_;
    std::vector<CharClass> classes_;
    int start_ = -1;
    friend class RegexCompiler;
    friend class RegexMatcher;
};

}  // namespace sdw
