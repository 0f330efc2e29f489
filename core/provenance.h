#pragma once
// Where a run came from: tool, machine, model and settings. Stored in every
// run file under /provenance (see docs/run-format.md).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace sdw {

// One file of the model a run used. `path` is relative to the model
// directory, so the same checkpoint hashed on two machines compares equal.
struct ModelFile {
    std::string path;
    std::string sha256;  // lower-case hex
    std::int64_t bytes = 0;

    bool operator==(const ModelFile&) const = default;
};

// Reports hashing progress in bytes; return false to stop.
using HashProgress = std::function<bool(std::uint64_t done, std::uint64_t total)>;

struct Provenance {
    std::string toolName;
    std::string toolVersion;
    std::string host;
    std::string os;
    std::string gpu = "none";      // caller supplies, e.g. "NVIDIA H200 (sm_90, 141 GB)"
    std::string modelId;           // hub id or local directory of the model
    std::string settingsJson = "{}";
    std::string createdUtc;        // ISO-8601, e.g. "2025-01-31T12:00:00Z"
    std::string updatedUtc;
    std::string finishedUtc;       // empty until the run is committed
    std::vector<ModelFile> modelFiles;

    // Tool name/version, host name, OS and created/updated time of this
    // process; gpu, model and settings are left for the caller.
    static Provenance capture();

    // Hashes the model files found directly in `dir` (config.json,
    // generation_config.json, tokenizer.json, model.safetensors.index.json,
    // *.safetensors) and adds them, replacing entries with the same path.
    // `progress` sees the bytes of all of them together. Returns false, with
    // modelFiles unchanged, when progress asked to stop. Throws
    // std::filesystem::filesystem_error when a file cannot be read.
    bool addModelFiles(const std::filesystem::path& dir, const HashProgress& progress = {});

    bool operator==(const Provenance&) const = default;
};

// Streaming SHA-256 of a file as lower-case hex; std::nullopt when progress
// returned false. Throws std::filesystem::filesystem_error on read errors.
std::optional<std::string> hashFile(const std::filesystem::path& path,
                                    const HashProgress& progress = {});

// The names addModelFiles() would hash in `dir`, sorted.
std::vector<std::filesystem::path> findModelFiles(const std::filesystem::path& dir);

// Current time as ISO-8601 UTC with second resolution: "2025-01-31T12:00:00Z".
std::string utcNowIso();

// Host name and a one-line OS description ("Debian GNU/Linux 12 (bookworm);
// Linux 6.1.0-18-amd64 x86_64").
std::string hostName();
std::string osDescription();

}  // namespace sdw
