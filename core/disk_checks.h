#pragma once
// Before a job writes, and when a write fails: clear words for a read-only
// folder, a missing permission and a full disk, each naming the path.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <utility>

namespace sdw {

// `target` (a file or folder that may not exist yet) is about to be written
// with about `needBytes`: the nearest existing folder at or above it must be
// writable and have that much free. Throws std::runtime_error:
//   "cannot write to T: read-only file system (D)"
//   "cannot write to T: permission denied (D)"
//   "not enough disk space for T: it needs about N, F free on D"
void checkCanWrite(const std::filesystem::path& target, std::uint64_t needBytes);

// The message for a write to `file` that failed with `err` (an errno value):
// "F: disk full (no space left on device)", "F: read-only file system", or
// "F: write failed: <strerror>". A failure on a filesystem with (almost) no
// space left counts as disk full whatever its errno.
std::string writeFailure(const std::filesystem::path& file, int err);

// After a failed write to `tmp` through `out` (errno still that of the
// failure): closes it, removes `tmp` and throws writeFailure's message.
[[noreturn]] void failWrite(std::ofstream& out, const std::filesystem::path& tmp);

// Removes `path` (a file or a whole folder) when it goes out of scope, unless
// release() was called: what a failed write leaves is not kept.
class RemoveOnFailure {
 public:
  explicit RemoveOnFailure(std::filesystem::path path) : path_(std::move(path)) {}
  ~RemoveOnFailure() {
    if (armed_) {
      std::error_code ec;
      std::filesystem::remove_all(path_, ec);
    }
  }
  RemoveOnFailure(const RemoveOnFailure&) = delete;
  RemoveOnFailure& operator=(const RemoveOnFailure&) = delete;
  void release() const { armed_ = false; }

 private:
  std::filesystem::path path_;
  mutable bool armed_ = true;
};

}  // namespace sdw
