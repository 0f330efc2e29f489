#pragma once
// Helpers shared by the run readers (and writers) of gpu/ (pruning_run.cpp,
// evaluation_run.cpp, drift_run.cpp): checking a run, optional
// attributes and string tables, and the recorded settings. Internal to
// gpu/*.cpp.

#include "core/decoding.h"
#include "core/runstore.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace sdw::gpu::runread {

// Throws std::runtime_error "<file name><why>".
[[noreturn]] inline void fail(const std::filesystem::path& file, const std::string& why) {
  throw std::runtime_error(file.filename().string() + why);
}

// What every reader checks once the run_kind is right (each reader words a
// wrong kind as its panel always has): the status when `requireComplete`,
// and the group `group`.
inline void requireRun(const runstore::RunReader& r, const std::filesystem::path& file, const std::string& group,
                       bool requireComplete) {
  if (requireComplete && r.status() != runstore::kStatusComplete) fail(file, " is incomplete");
  if (r.objectKind(group) != runstore::ObjectKind::Group) fail(file, ": no " + group + " group");
}

// A table read whole must have `want` entries.
inline void requireSize(const std::filesystem::path& file, const std::string& dataset, std::size_t got,
                        std::size_t want) {
  if (got != want)
    fail(file, ": " + dataset + " has " + std::to_string(got) + " entries, expected " + std::to_string(want));
}

// Attributes of `group`; `fallback` when absent (older runs lack some).
inline std::string stringAttr(const runstore::RunReader& r, const std::string& group, const char* name,
                              const std::string& fallback = {}) {
  return r.hasAttribute(group, name) ? r.readStringAttribute(group, name) : fallback;
}
inline double doubleAttr(const runstore::RunReader& r, const std::string& group, const char* name,
                         double fallback = 0.0) {
  return r.hasAttribute(group, name) ? r.readDoubleAttribute(group, name) : fallback;
}
inline std::int64_t intAttr(const runstore::RunReader& r, const std::string& group, const char* name,
                            std::int64_t fallback = 0) {
  return r.hasAttribute(group, name) ? r.readIntAttribute(group, name) : fallback;
}

// A string table, empty when the run has none.
inline std::vector<std::string> stringsIfAny(const runstore::RunReader& r, const std::string& dataset) {
  return r.exists(dataset) ? r.readStrings(dataset) : std::vector<std::string>{};
}

// /provenance@settings_json as an object (empty when it is not one).
inline nlohmann::json recordedSettings(const runstore::RunReader& r) {
  nlohmann::json j = nlohmann::json::parse(r.provenance().settingsJson, nullptr, false);
  return j.is_object() ? j : nlohmann::json::object();
}
// One of its values; `fallback` when absent or of another type.
template <typename T>
T setting(const nlohmann::json& settings, const char* key, const T& fallback) {
  try {
    return settings.value(key, fallback);
  } catch (const nlohmann::json::exception&) {
    return fallback;
  }
}

// The decoding of a run that decodes (evaluation, drift): its numbers and its
// words, written and read back the same way. `fallback` for runs written
// before the decoding was recorded.
inline void writeDecoding(runstore::RunWriter& w, const std::string& group, const Decoding& d) {
  w.setDoubleAttribute(group, "temperature", d.temperature);
  w.setIntAttribute(group, "top_k", d.topK);
  w.setDoubleAttribute(group, "top_p", d.topP);
  w.setStringAttribute(group, "decoding", d.describe());
}
inline Decoding readDecoding(const runstore::RunReader& r, const std::string& group, const Decoding& fallback) {
  return Decoding{doubleAttr(r, group, "temperature", fallback.temperature),
                  static_cast<int>(intAttr(r, group, "top_k", fallback.topK)),
                  doubleAttr(r, group, "top_p", fallback.topP)};
}

}  // namespace sdw::gpu::runread
