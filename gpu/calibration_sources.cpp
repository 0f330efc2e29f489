// Calibration sources: corpus and prompt readers, seeded corpus windows.

#include "gpu/calibration_sources.h"
#include "core/json_limits.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <random>
#include <stdexcept>

namespace sdw::gpu {

namespace fs = std::filesystem;

namespace {

std::ifstream openText(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw std::invalid_argument("cannot read " + file.string());
  return in;
}

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

std::vector<std::string> readCorpus(const fs::path& file) {
  auto in = openText(file);
  std::vector<std::string> docs;
  std::string line;
  std::size_t lineNo = 0;
  if (endsWith(file.string(), ".jsonl")) {
    while (std::getline(in, line)) {
      ++lineNo;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      try {
        const auto j = parseJsonBounded(line, file.string());
        docs.push_back(j.at("text").get<std::string>());
      } catch (const std::exception& e) {
        throw std::invalid_argument(file.string() + ":" + std::to_string(lineNo) + ": expected a JSON object with a \"text\" string (" + e.what() + ")");
      }
    }
  } else {
    std::string doc;
    bool open = false;
    const auto close = [&] {
      if (open && !doc.empty()) docs.push_back(std::move(doc));
      doc.clear();
    };
    while (std::getline(in, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.rfind("# doc ", 0) == 0) {
        close();
        open = true;
        continue;
      }
      if (line.empty()) continue;
      open = true;
      if (!doc.empty()) doc += '\n';
      doc += line;
    }
    close();
  }
  if (docs.empty()) throw std::invalid_argument(file.string() + ": no text in the corpus");
  return docs;
}

std::vector<Prompt> readPromptSubset(const fs::path& file, int maxPrompts, const std::string& who) {
  std::vector<Prompt> prompts = readPrompts(file);
  if (maxPrompts > 0 && static_cast<int>(prompts.size()) > maxPrompts)
    prompts.resize(static_cast<std::size_t>(maxPrompts));
  if (prompts.empty()) throw std::invalid_argument(who + ": no prompts in " + file.string());
  return prompts;
}

std::vector<Prompt> readPrompts(const fs::path& file) {
  auto in = openText(file);
  std::vector<Prompt> out;
  std::string line;
  std::size_t lineNo = 0;
  while (std::getline(in, line)) {
    ++lineNo;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      const auto j = parseJsonBounded(line, file.string());
      Prompt p;
      p.prompt = j.at("prompt").get<std::string>();
      p.id = j.contains("id") ? j.at("id").get<std::string>() : "line-" + std::to_string(lineNo);
      out.push_back(std::move(p));
    } catch (const std::exception& e) {
      throw std::invalid_argument(file.string() + ":" + std::to_string(lineNo) +
                                  ": expected a JSON object with a \"prompt\" string (" + e.what() + ")");
    }
  }
  if (out.empty()) throw std::invalid_argument(file.string() + ": no prompts");
  return out;
}

CorpusWindows::CorpusWindows(std::vector<std::string> documents, const Tokenizer& tokenizer, int window, std::uint64_t seed)
    : docs_(std::move(documents)), tok_(tokenizer), window_(window), seed_(seed) {}

const std::vector<std::int32_t>& CorpusWindows::tokens(std::size_t doc) {
  auto it = cache_.find(doc);
  if (it == cache_.end()) it = cache_.emplace(doc, tok_.encode(docs_[doc], /*addSpecialTokens=*/false)).first;
  return it->second;
}

CorpusWindows::Window CorpusWindows::draw(std::int64_t index) {
  std::mt19937_64 rng(splitmix64(seed_ ^ splitmix64(static_cast<std::uint64_t>(index))));
  const auto W = static_cast<std::size_t>(window_);
  std::uniform_int_distribution<std::size_t> pick(0, docs_.size() - 1);
  std::size_t doc = pick(rng);
  for (int tries = 0; tokens(doc).size() < W; ++tries) {
    if (tries < 64) {
      doc = pick(rng);
      continue;
    }
    // Few long documents: take the next one that is long enough.
    std::size_t scanned = 0;
    while (tokens(doc).size() < W && ++scanned <= docs_.size()) doc = (doc + 1) % docs_.size();
    if (tokens(doc).size() < W)
      throw std::invalid_argument("no document of the corpus has " + std::to_string(window_) +
                                  " tokens; use a shorter window");
  }
  const auto& ids = tokens(doc);
  std::uniform_int_distribution<std::size_t> startDist(0, ids.size() - W);
  Window w;
  w.document = static_cast<std::int64_t>(doc);
  w.start = static_cast<std::int64_t>(startDist(rng));
  w.ids.assign(ids.begin() + w.start, ids.begin() + w.start + static_cast<std::ptrdiff_t>(W));
  return w;
}

}  // namespace sdw::gpu
