// Deterministic fuzz replay (CI, built with ASan + UBSan): for every target of
// tests/fuzz/fuzz_targets.h, every file of its seed corpus
// (tests/fuzz/corpus/<target>/) and a fixed number of deterministic mutations of
// each (bit flips, interesting bytes, truncations, deletions, duplications, digit
// runs, nesting), each run through the parser. A crash or sanitizer report ends
// the process. The run fails when an input is slower than the time limit, when a
// `seed-*` file (a valid input) is refused, when a `refuse-*` file (a hostile
// input of the report: deep nesting, 2^40 layers, an empty run file) is
// accepted, or when no mutation of a target was refused (the mutator did not
// bite). `regress-*` files (catastrophic regexes) only have to finish in time.
// Prints per target: inputs, refusals, time, the slowest.
//
//   fuzz_replay CORPUS_DIR [--mutations N] [--target NAME] [--limit-seconds S]
//   fuzz_replay --write-seeds CORPUS_DIR    (re-creates the generated seeds)

#include "tests/fuzz/fuzz_targets.h"

#include "core/safetensors.h"
#include "core/sparse_file.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

namespace {

struct Rng {  // splitmix64: the same mutations on every machine
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::size_t below(std::size_t n) { return n ? static_cast<std::size_t>(next() % n) : 0; }
};

Bytes mutate(const Bytes& in, Rng& r) {
  Bytes b = in;
  const int ops = 1 + static_cast<int>(r.below(4));
  for (int k = 0; k < ops; ++k) {
    switch (r.below(8)) {
      case 0:  // bit flip
        if (!b.empty()) b[r.below(b.size())] ^= static_cast<std::uint8_t>(1u << r.below(8));
        break;
      case 1: {  // an interesting byte
        static const std::uint8_t kBytes[] = {0, 0xff, 0x7f, 0x80, '[', '{', '"', '9', '-', '\\', ':', ','};
        if (!b.empty()) b[r.below(b.size())] = kBytes[r.below(std::size(kBytes))];
        break;
      }
      case 2:  // truncation
        b.resize(r.below(b.size() + 1));
        break;
      case 3: {  // deletion
        if (b.empty()) break;
        const std::size_t at = r.below(b.size()), n = std::min(b.size() - at, 1 + r.below(64));
        b.erase(b.begin() + static_cast<std::ptrdiff_t>(at), b.begin() + static_cast<std::ptrdiff_t>(at + n));
        break;
      }
      case 4: {  // duplication of a chunk
        if (b.empty() || b.size() > (1u << 22)) break;
        const std::size_t at = r.below(b.size()), n = std::min(b.size() - at, 1 + r.below(256));
        const Bytes chunk(b.begin() + static_cast<std::ptrdiff_t>(at), b.begin() + static_cast<std::ptrdiff_t>(at + n));
        b.insert(b.begin() + static_cast<std::ptrdiff_t>(r.below(b.size())), chunk.begin(), chunk.end());
        break;
      }
      case 5: {  // a long digit run (huge numbers)
        const std::string digits(1 + r.below(30), static_cast<char>('1' + r.below(9)));
        b.insert(b.begin() + static_cast<std::ptrdiff_t>(r.below(b.size() + 1)), digits.begin(), digits.end());
        break;
      }
      case 6: {  // nesting
        const std::string open(1 + r.below(2000), r.below(2) ? '[' : '{');
        b.insert(b.begin() + static_cast<std::ptrdiff_t>(r.below(b.size() + 1)), open.begin(), open.end());
        break;
      }
      default: {  // a little-endian integer overwritten with an extreme value
        if (b.size() < 8) break;
        const std::size_t at = r.below(b.size() - 7);
        const std::uint64_t v = r.below(2) ? ~0ull : (1ull << (31 + r.below(33)));
        std::memcpy(b.data() + at, &v, 8);
      }
    }
  }
  return b;
}

Bytes readFile(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(f), {});
}

void writeFile(const fs::path& p, const std::string& s) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary | std::ios::trunc) << s;
}

// The seeds that are built rather than copied, and the issue's regression inputs.
void writeSeeds(const fs::path& corpus) {
  using namespace sdw;
  // A small valid safetensors file and a small valid bitmask file.
  std::vector<std::byte> a(4 * 32 * 2), b(16 * 4);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = std::byte(static_cast<unsigned char>(i * 7));
  fs::create_directories(corpus / "safetensors");
  writeSafetensors(corpus / "safetensors" / "seed-small.safetensors",
                   {{"model.layers.0.self_attn.q_proj.weight", "BF16", {4, 32}, a}, {"model.norm.weight", "F32", {16}, b}},
                   {{"format", "pt"}});
  std::vector<float> w(8 * 64);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = (i % 4 < 2) ? 0.5f + static_cast<float>(i % 7) : 0.0f;
  fs::create_directories(corpus / "sdwsparse");
  sparse::writeSparseFile(corpus / "sdwsparse" / "seed-small.sdwsparse",
                          {{"model.layers.0.mlp.up_proj", sparse::packDense(w, 8, 64, {2, 4}, sparse::DType::BF16)}});
  // Regression inputs (the hostile-input report): deep nesting, huge layer counts,
  // catastrophic pre-tokenizer regexes, nested normalizers.
  writeFile(corpus / "config" / "refuse-deep-array.json",
            R"({"architectures":["LlamaForCausalLM"],"vocab_size":)" + std::string(50000, '[') + "1" +
                std::string(50000, ']') + "}");
  writeFile(corpus / "config" / "refuse-2pow40-layers.json",
            R"({"architectures":["LlamaForCausalLM"],"vocab_size":32,"hidden_size":8,"intermediate_size":16,)"
            R"("num_hidden_layers":1099511627776,"num_attention_heads":2})");
  writeFile(corpus / "tokenizer" / "refuse-deep-normalizer.json",
            R"({"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"normalizer":)" + std::string(30000, '{') +
                std::string(30000, '}') + "}");
  for (const char* re : {"(a|a)*$", "(?:a*)*b", "(.*)*x"}) {
    std::string name = std::string("regress-regex-") + std::to_string(std::hash<std::string>{}(re) % 100000) + ".json";
    writeFile(corpus / "tokenizer" / name,
              std::string(R"({"model":{"type":"BPE","vocab":{"a":0,"b":1},"merges":[]},"pre_tokenizer":{"type":"Split",)") +
                  R"("pattern":{"Regex":")" + re + R"("},"behavior":"Isolated","invert":false}})");
  }
  writeFile(corpus / "json" / "refuse-deep-object.json", std::string(60000, '{'));
  writeFile(corpus / "runfile" / "refuse-empty.sdw.h5", "");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::string(argv[1]) == "--write-seeds") {
    writeSeeds(argv[2]);
    return 0;
  }
  if (argc < 2) {
    std::fprintf(stderr, "usage: fuzz_replay CORPUS_DIR [--mutations N] [--target NAME] [--limit-seconds S]\n");
    return 2;
  }
  const fs::path corpus = argv[1];
  int mutations = 200;
  double limit = 5.0;
  std::string only;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--mutations") mutations = std::atoi(argv[i + 1]);
    else if (k == "--target") only = argv[i + 1];
    else if (k == "--limit-seconds") limit = std::atof(argv[i + 1]);
  }
  int failures = 0;
  long total = 0;
  for (const auto& t : sdw::fuzz::targets()) {
    if (!only.empty() && only != t.name) continue;
    const fs::path dir = corpus / t.name;
    if (!fs::is_directory(dir)) {
      std::printf("%-20s no corpus at %s\n", t.name, dir.c_str());
      ++failures;
      continue;
    }
    std::vector<fs::path> seeds;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file()) seeds.push_back(e.path());
    std::sort(seeds.begin(), seeds.end());
    long inputs = 0, refusedMutations = 0;
    double slowest = 0, all = 0;
    std::string slowestName;
    Rng rng{0x5D3Bull};
    for (const auto& s : seeds) {
      const Bytes seed = readFile(s);
      // Big seeds get fewer mutations (each parse reads the whole input).
      const int n = seed.size() > (1u << 20) ? mutations / 10 : mutations;
      for (int m = -1; m < n; ++m) {
        const Bytes in = m < 0 ? seed : mutate(seed, rng);
        const auto t0 = std::chrono::steady_clock::now();
        const bool ok = t.run(in.data(), in.size());
        const std::string file = s.filename().string();
        if (m < 0 && file.rfind("seed-", 0) == 0 && !ok) {
          std::printf("%-20s REFUSED a valid seed: %s\n", t.name, file.c_str());
          ++failures;
        }
        if (m < 0 && file.rfind("refuse-", 0) == 0 && ok) {
          std::printf("%-20s ACCEPTED a hostile input: %s\n", t.name, file.c_str());
          ++failures;
        }
        if (m >= 0 && !ok) ++refusedMutations;
        const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        all += sec;
        ++inputs;
        if (sec > slowest) {
          slowest = sec;
          slowestName = s.filename().string() + (m < 0 ? "" : " mutation " + std::to_string(m));
        }
        if (sec > limit) {
          std::printf("%-20s SLOW: %s took %.2f s (limit %.1f s)\n", t.name, slowestName.c_str(), sec, limit);
          ++failures;
        }
      }
    }
    total += inputs;
    if (refusedMutations == 0) {
      std::printf("%-20s no mutation was refused: the mutator did not reach the parser's checks\n", t.name);
      ++failures;
    }
    std::printf("%-20s %zu seeds, %ld inputs, %ld mutations refused, %.1f s, slowest %.3f s (%s)\n", t.name,
                seeds.size(), inputs, refusedMutations, all, slowest, slowestName.c_str());
  }
  std::printf("fuzz replay: %ld inputs, %d failures, no crash\n", total, failures);
  if (total == 0) return 1;
  return failures == 0 ? 0 : 1;
}
