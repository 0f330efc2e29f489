#include "core/split_regex.h"

#include "core/unicode.h"

#include <oniguruma.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <mutex>
#include <optional>

namespace sdw {

namespace {

// Text as messages show it: one line (control bytes as \xHH), at most `max`
// bytes, cut between code points.
std::string printable(std::string_view p, std::size_t max = 200) {
  std::string out;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const auto c = static_cast<unsigned char>(p[i]);
    if (out.size() >= max && (c & 0xC0) != 0x80) {
      out += "...";
      break;
    }
    if (c < 0x20 || c == 0x7F) {
      static const char* kHex = "0123456789ABCDEF";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

std::string onigMessage(int code, OnigErrorInfo* info = nullptr) {
  OnigUChar buf[ONIG_MAX_ERROR_MESSAGE_LEN];
  const int n = info ? onig_error_code_to_str(buf, code, info) : onig_error_code_to_str(buf, code);
  return printable(std::string_view(reinterpret_cast<const char*>(buf), static_cast<std::size_t>(std::max(n, 0))));
}

// Oniguruma's global set-up, once per process, before the first pattern.
void initOniguruma() {
  static std::once_flag once;
  std::call_once(once, [] {
    OnigEncoding encodings[] = {ONIG_ENCODING_UTF8};
    onig_initialize(encodings, 1);
    onig_set_parse_depth_limit(Regex::kMaxParseDepth);
  });
}

// onig_new is serialised, as the reference's wrapper does.
std::mutex& compileMutex() {
  static std::mutex m;
  return m;
}

struct RegionFree {
  void operator()(OnigRegion* r) const { onig_region_free(r, 1); }
};
struct MatchParamFree {
  void operator()(OnigMatchParam* p) const { onig_free_match_param(p); }
};

// Where an invalid byte b goes for matching: U+10FE00 + b, a private-use
// character (general category Co: no letter, number, mark or space).
constexpr char32_t kInvalidByteStandIn = 0x10FE00;

// CPU time of the calling thread (other threads' work does not count).
double threadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Whether the calling thread has used more than `limit` seconds of CPU time
// since construction. Reading that clock is a system call; the steady clock
// is not, and a thread's CPU time grows no faster than it, so the CPU clock
// is read only once the steady clock says the limit could have been reached.
class CpuBudget {
 public:
  explicit CpuBudget(double limit)
      : limit_(limit), start_(threadCpuSeconds()), next_(Clock::now() + toDuration(limit)) {}
  bool exceeded() {
    const auto now = Clock::now();
    if (now < next_) return false;
    const double used = threadCpuSeconds() - start_;
    if (used > limit_) return true;
    next_ = now + toDuration(limit_ - used);
    return false;
  }

 private:
  using Clock = std::chrono::steady_clock;
  static Clock::duration toDuration(double seconds) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  }
  double limit_;
  double start_;
  Clock::time_point next_;
};

std::size_t utf8Length(unsigned char lead) { return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4; }

}  // namespace

void Regex::Free::operator()(re_pattern_buffer* r) const { onig_free(r); }

Regex::Regex(std::string_view pattern) : pattern_(pattern) {
  if (pattern.size() > kMaxPatternBytes) fail("pattern longer than " + std::to_string(kMaxPatternBytes) + " bytes");
  if (!unicode::isValidUtf8(pattern)) fail("pattern is not valid UTF-8");
  initOniguruma();
  OnigRegex reg = nullptr;
  OnigErrorInfo info{};
  const auto* p = reinterpret_cast<const OnigUChar*>(pattern_.data());
  int r;
  {
    std::lock_guard lock(compileMutex());
    r = onig_new(&reg, p, p + pattern_.size(), ONIG_OPTION_NONE, ONIG_ENCODING_UTF8, ONIG_SYNTAX_ONIGURUMA, &info);
  }
  if (r != ONIG_NORMAL) {
    if (reg) onig_free(reg);
    if (r == ONIGERR_PARSE_DEPTH_LIMIT_OVER)
      fail("groups, classes or quantifiers nested too deep (over Oniguruma's parse depth limit of " +
           std::to_string(kMaxParseDepth) + "; a group takes two levels)");
    fail(onigMessage(r, &info));
  }
  regex_.reset(reg);
}

Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;
Regex::~Regex() = default;

void Regex::fail(const std::string& what) const { throw RegexError("regex " + printable(pattern_) + ": " + what); }

std::vector<std::pair<std::size_t, std::size_t>> Regex::findAllValid(std::string_view text,
                                                                     std::size_t& charged) const {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  const std::unique_ptr<OnigRegion, RegionFree> region(onig_region_new());
  const std::unique_ptr<OnigMatchParam, MatchParamFree> param(onig_new_match_param());
  if (!region || !param) throw std::bad_alloc();
  const auto* str = reinterpret_cast<const OnigUChar*>(text.data());
  const auto* end = str + text.size();
  const std::size_t budget = kRetryBudgetBase + kRetryBudgetPerByte * text.size();
  const double cpuLimit = kCpuSecondsBase + kCpuSecondsPerByte * static_cast<double>(text.size());
  std::optional<CpuBudget> cpu;
  if (text.size() > kCpuCheckMinBytes) cpu.emplace(cpuLimit);
  std::size_t searches = 0;
  charged = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t limit = kFirstRetryLimit;
    int r;
    for (;;) {
      limit = std::min(limit, budget - charged);
      if (limit == 0)  // 0 would mean no limit to Oniguruma
        fail("matching a " + std::to_string(text.size()) + "-byte text took more than " + std::to_string(budget) +
             " backtracking retries (catastrophic backtracking)");
      onig_set_retry_limit_in_match_of_match_param(param.get(), limit);
      onig_set_retry_limit_in_search_of_match_param(param.get(), limit);
      r = onig_search_with_param(regex_.get(), str, end, str + pos, end, region.get(), ONIG_OPTION_NONE, param.get());
      charged += limit;
      const bool overLimit = r == ONIGERR_RETRY_LIMIT_IN_MATCH_OVER || r == ONIGERR_RETRY_LIMIT_IN_SEARCH_OVER;
      if (cpu && (overLimit || ++searches % kSearchesPerCpuCheck == 0) && cpu->exceeded())
        fail("matching a " + std::to_string(text.size()) + "-byte text took more than " +
             std::to_string(static_cast<long>(cpuLimit * 1000)) +
             " ms of CPU time (the pattern scans the rest of the text from one position after another)");
      if (!overLimit) break;
      limit *= 2;
    }
    if (r == ONIG_MISMATCH) break;
    if (r < 0) fail(onigMessage(r));
    const auto b = static_cast<std::size_t>(region->beg[0]), e = static_cast<std::size_t>(region->end[0]);
    if (e > b) {
      out.emplace_back(b, e);
      pos = e;
    } else {  // an empty match splits nothing: go on one character further
      if (e >= text.size()) break;
      pos = e + utf8Length(static_cast<unsigned char>(text[e]));
    }
  }
  return out;
}

std::vector<std::pair<std::size_t, std::size_t>> Regex::findAll(std::string_view text, std::size_t& charged) const {
  if (unicode::isValidUtf8(text)) return findAllValid(text, charged);
  // Each invalid byte becomes its stand-in character; offsets map back.
  const auto d = unicode::decodeUtf8(text);
  std::string clean;
  std::vector<std::size_t> original;  // clean offset -> text offset
  clean.reserve(text.size() + 8);
  original.reserve(text.size() + 9);
  for (std::size_t k = 0; k < d.codePoints.size(); ++k) {
    const std::size_t from = d.offsets[k], to = d.offsets[k + 1];
    if (d.codePoints[k] >= unicode::kInvalidByteBase) {
      unicode::appendUtf8(clean, kInvalidByteStandIn + (d.codePoints[k] - unicode::kInvalidByteBase));
      original.resize(clean.size(), from);
    } else {
      clean.append(text.substr(from, to - from));
      for (std::size_t i = from; i < to; ++i) original.push_back(i);
    }
  }
  original.push_back(text.size());
  auto matches = findAllValid(clean, charged);
  for (auto& [b, e] : matches) {
    b = original[b];
    e = original[e];
  }
  return matches;
}

std::vector<std::pair<std::size_t, std::size_t>> Regex::findAll(std::string_view text) const {
  std::size_t charged = 0;
  return findAll(text, charged);
}

std::vector<std::string_view> Regex::splitIsolated(std::string_view text) const {
  std::vector<std::string_view> pieces;
  std::size_t last = 0;
  for (const auto& [b, e] : findAll(text)) {
    if (b > last) pieces.push_back(text.substr(last, b - last));
    pieces.push_back(text.substr(b, e - b));
    last = e;
  }
  if (last < text.size()) pieces.push_back(text.substr(last));
  return pieces;
}

}  // namespace sdw
