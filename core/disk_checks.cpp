#include "core/disk_checks.h"

#include "core/format.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

#if defined(__unix__)
#include <sys/statvfs.h>
#include <unistd.h>
#endif

namespace sdw {

namespace fs = std::filesystem;

void checkCanWrite(const fs::path& target, std::uint64_t needBytes) {
  std::error_code ec;
  fs::path dir = fs::absolute(target, ec).lexically_normal();
  if (ec) dir = target;
  // The nearest folder that exists: what gets created below it inherits its filesystem.
  while (!dir.empty() && !fs::is_directory(dir, ec)) {
    const fs::path parent = dir.parent_path();
    if (parent == dir) break;
    dir = parent;
  }
  if (dir.empty()) dir = fs::current_path(ec);
#if defined(__unix__)
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) == 0 && (st.f_flag & ST_RDONLY))
    throw std::runtime_error("cannot write to " + target.string() + ": read-only file system (" + dir.string() + ")");
  if (::access(dir.c_str(), W_OK) != 0) {
    const int err = errno;
    if (err == EROFS)
      throw std::runtime_error("cannot write to " + target.string() + ": read-only file system (" + dir.string() + ")");
    if (err == EACCES || err == EPERM)
      throw std::runtime_error("cannot write to " + target.string() + ": permission denied (" + dir.string() + ")");
  }
#endif
  const auto space = fs::space(dir, ec);
  if (!ec && space.available < needBytes)
    throw std::runtime_error("not enough disk space for " + target.string() + ": it needs about " +
                             humanBytes(needBytes) + ", " + humanBytes(space.available) + " free on " + dir.string());
}

std::string writeFailure(const fs::path& file, int err) {
  // Some writers report a short write on a full disk as EIO (libstdc++'s
  // copy_file): the free space says which it was.
  bool full = err == ENOSPC || err == EDQUOT;
  if (!full && err != EROFS) {
    std::error_code ec;
    fs::path dir = file.parent_path();
    while (!dir.empty() && !fs::is_directory(dir, ec) && dir.parent_path() != dir) dir = dir.parent_path();
    const auto space = fs::space(dir.empty() ? fs::path(".") : dir, ec);
    full = !ec && space.available < (std::uint64_t(64) << 10);
  }
  if (full) return file.string() + ": disk full (no space left on device)";
  if (err == EROFS) return file.string() + ": read-only file system";
  if (err == 0) return file.string() + ": write failed";
  return file.string() + ": write failed: " + std::strerror(err);
}

void failWrite(std::ofstream& out, const fs::path& tmp) {
  const int err = errno;
  out.close();
  std::error_code ec;
  fs::remove(tmp, ec);  // nothing half-written stays behind
  throw std::runtime_error(writeFailure(tmp, err));
}

}  // namespace sdw
