#include "core/provenance.h"

#include "core/sha256.h"
#include "core/version.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <system_error>

#if defined(__unix__) || defined(__APPLE__)
#include <sys/utsname.h>
#include <unistd.h>
#endif

namespace sdw {
namespace fs = std::filesystem;

std::string utcNowIso() {
    const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
#if defined(_WIN32)
    gmtime_s(&tm, &now);
#else
    gmtime_r(&now, &tm);
#endif
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

std::string hostName() {
#if defined(__unix__) || defined(__APPLE__)
    char buf[256] = {};
    if (gethostname(buf, sizeof buf - 1) == 0 && buf[0] != '\0') return buf;
#endif
    return "unknown";
}

namespace {

// PRETTY_NAME from os-release, without quotes; empty when unavailable.
std::string distributionName() {
    for (const char* file : {"/etc/os-release", "/usr/lib/os-release"}) {
        std::ifstream in(file);
        std::string line;
        while (std::getline(in, line)) {
            constexpr std::string_view kKey = "PRETTY_NAME=";
            if (line.rfind(kKey, 0) != 0) continue;
            std::string value = line.substr(kKey.size());
            if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'')) {
                value = value.substr(1, value.size() - 2);
            }
            return value;
        }
    }
    return {};
}

}  // namespace

std::string osDescription() {
    std::string out = distributionName();
#if defined(__unix__) || defined(__APPLE__)
    utsname u{};
    if (uname(&u) == 0) {
        if (!out.empty()) out += "; ";
        out += std::string(u.sysname) + " " + u.release + " " + u.machine;
    }
#endif
    return out.empty() ? std::string("unknown") : out;
}

Provenance Provenance::capture() {
    Provenance p;
    p.toolName = kToolName;
    p.toolVersion = kToolVersion;
    p.host = hostName();
    p.os = osDescription();
    p.createdUtc = utcNowIso();
    p.updatedUtc = p.createdUtc;
    return p;
}

namespace {

constexpr std::size_t kHashChunk = std::size_t{1} << 20;

// Hashes one file, reporting progress as `base + bytes of this file` out of
// `total`. nullopt when stopped.
std::optional<std::string> hashWithOffset(const fs::path& path, std::uint64_t base,
                                          std::uint64_t total, const HashProgress& progress) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        throw fs::filesystem_error("cannot open file for hashing", path,
                                   std::error_code(errno ? errno : ENOENT, std::generic_category()));
    }
    Sha256 sha;
    std::vector<char> buf(kHashChunk);
    std::uint64_t done = 0;
    if (progress && !progress(base, total)) return std::nullopt;
    while (in) {
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        const auto got = static_cast<std::size_t>(in.gcount());
        if (got == 0) break;
        sha.update(std::string_view(buf.data(), got));
        done += got;
        if (progress && !progress(base + done, total)) return std::nullopt;
    }
    if (in.bad()) {
        throw fs::filesystem_error("read error while hashing", path,
                                   std::make_error_code(std::errc::io_error));
    }
    return sha.finishHex();
}

bool isModelFileName(const std::string& name) {
    static constexpr std::string_view kExact[] = {"config.json", "generation_config.json",
                                                 "tokenizer.json", "model.safetensors.index.json"};
    if (std::find(std::begin(kExact), std::end(kExact), name) != std::end(kExact)) return true;
    constexpr std::string_view kExt = ".safetensors";
    return name.size() > kExt.size() && name.compare(name.size() - kExt.size(), kExt.size(), kExt) == 0;
}

}  // namespace

std::optional<std::string> hashFile(const fs::path& path, const HashProgress& progress) {
    const std::uint64_t total = fs::file_size(path);  // throws filesystem_error with the path
    return hashWithOffset(path, 0, total, progress);
}

std::vector<fs::path> findModelFiles(const fs::path& dir) {
    std::vector<fs::path> out;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
        if (!entry.is_regular_file()) continue;
        if (isModelFileName(entry.path().filename().string())) out.push_back(entry.path().filename());
    }
    std::sort(out.begin(), out.end());
    return out;
}

bool Provenance::addModelFiles(const fs::path& dir, const HashProgress& progress) {
    const std::vector<fs::path> names = findModelFiles(dir);
    std::vector<std::uint64_t> sizes;
    std::uint64_t total = 0;
    for (const fs::path& name : names) {
        sizes.push_back(fs::file_size(dir / name));
        total += sizes.back();
    }

    std::vector<ModelFile> hashed;
    std::uint64_t base = 0;
    for (std::size_t i = 0; i < names.size(); ++i) {
        std::optional<std::string> digest = hashWithOffset(dir / names[i], base, total, progress);
        if (!digest) return false;
        hashed.push_back({names[i].generic_string(), std::move(*digest), static_cast<std::int64_t>(sizes[i])});
        base += sizes[i];
    }

    for (ModelFile& file : hashed) {
        auto same = std::find_if(modelFiles.begin(), modelFiles.end(),
                                 [&](const ModelFile& m) { return m.path == file.path; });
        if (same != modelFiles.end()) {
            *same = std::move(file);
        } else {
            modelFiles.push_back(std::move(file));
        }
    }
    return true;
}

}  // namespace sdw
