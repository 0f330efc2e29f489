// sdw-cli info / runs: read run files and workspaces.

#include "app/cli/command.h"
#include "core/json_limits.h"
#include "core/run_decoding.h"
#include "core/runstore.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>

namespace sdw::cli {
namespace {

using nlohmann::json;

json provenanceJson(const Provenance& p) {
  json files = json::array();
  for (const auto& f : p.modelFiles) files.push_back({{"path", f.path}, {"sha256", f.sha256}, {"bytes", f.bytes}});
  json settings;
  try {
    settings = parseJsonBounded(p.settingsJson, "settings_json");
  } catch (const JsonInputError&) {
    settings = p.settingsJson;  // stored text that is not JSON: pass it through (the reader refused any over the limits)
  }
  return {{"tool_name", p.toolName},     {"tool_version", p.toolVersion}, {"host", p.host},
          {"os", p.os},                  {"gpu", p.gpu},                  {"model_id", p.modelId},
          {"settings", settings},        {"created_utc", p.createdUtc},   {"updated_utc", p.updatedUtc},
          {"finished_utc", p.finishedUtc}, {"model_files", files}};
}

json summaryJson(const runstore::RunSummary& s) {
  return {{"path", s.path.string()}, {"run_id", s.runId},   {"kind", s.kind},
          {"status", s.status},      {"schema_version", s.schemaVersion},
          {"checkpoint", s.checkpoint}, {"provenance", provenanceJson(s.provenance)}};
}

// The decoding a run used and the warnings it carries; nothing for a run
// that cannot be opened for reading (inspectRun has said what it can).
RecordedDecoding decodingOf(const std::string& path) {
  try {
    return recordedDecoding(runstore::RunReader::open(path));
  } catch (const std::exception&) {
    return {};
  }
}

int runInfo(const Args& a) {
  const runstore::RunSummary s = runstore::inspectRun(a.positional.at(0));
  const RecordedDecoding decoding = decodingOf(a.positional.at(0));
  if (a.has("json")) {
    json j = summaryJson(s);
    if (!decoding.decoding.empty()) j["decoding"] = decoding.decoding;
    if (!decoding.warnings.empty()) j["warnings"] = decoding.warnings;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  const Provenance& p = s.provenance;
  std::cout << "run file:      " << s.path.string() << "\n"
            << "kind:          " << s.kind << "\n"
            << "status:        " << s.status << "\n"
            << "run id:        " << s.runId << "\n"
            << "schema:        " << s.schemaVersion << "\n"
            << "checkpoints:   " << s.checkpoint << "\n"
            << "tool:          " << p.toolName << " " << p.toolVersion << "\n"
            << "host:          " << p.host << "\n"
            << "os:            " << p.os << "\n"
            << "gpu:           " << p.gpu << "\n"
            << "model:         " << p.modelId << "\n"
            << "created (UTC): " << p.createdUtc << "\n"
            << "updated (UTC): " << p.updatedUtc << "\n"
            << "finished (UTC):" << (p.finishedUtc.empty() ? " (not finished)" : " " + p.finishedUtc) << "\n";
  if (!p.modelFiles.empty()) {
    std::cout << "model files:\n";
    for (const auto& f : p.modelFiles)
      std::cout << "  " << f.path << "  " << f.bytes << " B  sha256 " << f.sha256 << "\n";
  }
  std::cout << "settings:      " << p.settingsJson << "\n";
  if (!decoding.decoding.empty()) std::cout << "decoding:      " << decoding.decoding << "\n";
  for (const auto& w : decoding.warnings) std::cout << "warning:       " << w << "\n";
  return 0;
}

int runRuns(const Args& a) {
  const auto entries = runstore::listWorkspace(a.positional.at(0));
  int bad = 0;
  for (const auto& e : entries) bad += e.summary ? 0 : 1;
  if (a.has("json")) {
    json arr = json::array();
    for (const auto& e : entries) {
      json j = {{"path", e.path.string()}, {"partial", e.partial}};
      if (e.summary) j["summary"] = summaryJson(*e.summary);
      else j["error"] = e.error;
      arr.push_back(j);
    }
    std::cout << json{{"workspace", a.positional.at(0)}, {"runs", arr}}.dump(2) << "\n";
  } else if (entries.empty()) {
    std::cout << "no run files (*.sdw.h5) in " << a.positional.at(0) << "\n";
  } else {
    std::printf("%-40s %-12s %-11s %-22s %s\n", "RUN FILE", "KIND", "STATUS", "CREATED (UTC)", "MODEL");
    for (const auto& e : entries) {
      const std::string name = e.path.filename().string();
      if (e.summary) {
        const auto& s = *e.summary;
        std::printf("%-40s %-12s %-11s %-22s %s\n", name.c_str(), s.kind.c_str(),
                    e.partial ? "partial" : s.status.c_str(), s.provenance.createdUtc.c_str(),
                    s.provenance.modelId.c_str());
      } else {
        std::printf("%-40s %-12s %-11s %s\n", name.c_str(), "?", "invalid", e.error.c_str());
      }
    }
  }
  // Listing succeeded; unreadable files are reported, with exit 1 when asked.
  return (bad > 0 && a.has("strict")) ? 1 : 0;
}

const Register regInfo{Command{
    "info",
    "print a run file's provenance",
    "info RUNFILE [--json]",
    "Validates a run file (*.sdw.h5) and prints its provenance: tool, host, GPU,\n"
    "model and file hashes, settings and timestamps. A foreign, corrupt, truncated\n"
    "or newer-schema file is an error (exit 1) with the reason.",
    {{"json", "", "machine-readable output", ""}},
    1,
    1,
    runInfo}};

const Register regRuns{Command{
    "runs",
    "list the run files in a workspace folder",
    "runs WORKSPACE [--json] [--strict]",
    "Lists the run files (*.sdw.h5, and *.sdw.h5.partial of runs still being\n"
    "written or interrupted) in WORKSPACE with kind, status, date and model.\n"
    "Unreadable files are listed with the reason.",
    {{"json", "", "machine-readable output", ""},
     {"strict", "", "exit 1 when any file in the workspace is unreadable", ""}},
    1,
    1,
    runRuns}};

}  // namespace
}  // namespace sdw::cli
