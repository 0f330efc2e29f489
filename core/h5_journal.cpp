// The journaling file driver for run files (see h5_journal.h).

#include "core/h5_journal.h"

#include "core/sha256.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace sdw::runstore::detail {

fs::path journalPathFor(const fs::path& file) {
  const std::string name = file.filename().string();
  return file.parent_path() / ((name.starts_with('.') ? name : "." + name) + ".journal");
}

namespace {

std::atomic<JournalCrashPoint> gCrashPoint{JournalCrashPoint::None};
// Raw data rewritten in place is held in memory up to this much per commit;
// beyond it, it goes straight to the file (the values may then mix two
// checkpoints after a kill, the file still opens).
std::atomic<std::size_t> gHeldRawBudget{std::size_t{256} << 20};

void crashIf(JournalCrashPoint at) {
  if (gCrashPoint.load() == at) ::_exit(86);
}

}  // namespace

void setJournalCrashPointForTest(JournalCrashPoint point) { gCrashPoint.store(point); }

void setJournalRawBudgetForTest(std::size_t bytes) { gHeldRawBudget.store(bytes); }

}  // namespace sdw::runstore::detail

#if H5_VERSION_GE(1, 13, 0)

namespace sdw::runstore::detail {
bool useJournalDriver(hid_t) { return false; }
bool journalDriverAvailable() { return false; }
void journalFileRenamed(hid_t, const fs::path&) {}
}  // namespace sdw::runstore::detail

#else

namespace sdw::runstore::detail {
namespace {

constexpr char kMagic[8] = {'S', 'D', 'W', 'J', 'R', 'N', 'L', '1'};
constexpr char kEndMagic[8] = {'S', 'D', 'W', 'J', 'E', 'N', 'D', '1'};
constexpr std::uint64_t kNoShrink = std::numeric_limits<std::uint64_t>::max();

// Pushes an HDF5 error in the style of the sec2 driver ("errno = N, error
// message = '...'"), which the run store's messages parse.
void pushError(const char* func, hid_t minor, const std::string& what, int err = 0) {
  std::string msg = what;
  if (err != 0) msg += ", errno = " + std::to_string(err) + ", error message = '" + std::strerror(err) + "'";
  H5Epush2(H5E_DEFAULT, __FILE__, func, __LINE__, H5E_ERR_CLS, H5E_VFL, minor, "%s", msg.c_str());
}

constexpr std::size_t kDigest = 32;            // SHA-256 of everything before it
constexpr std::size_t kTrailer = kDigest + 8;  // digest, end magic
constexpr std::size_t kHeader = 24;            // magic, record count, shrink

Sha256::Digest digestOf(const unsigned char* p, std::size_t n) {
  Sha256 h;
  h.update(std::as_bytes(std::span(p, n)));
  return h.finish();
}

void putU64(std::vector<unsigned char>& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<unsigned char>(v >> (8 * i)));
}

std::uint64_t getU64(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// 0 or errno.
int writeAll(int fd, const unsigned char* p, std::size_t n, off_t at) {
  while (n > 0) {
    const ssize_t w = ::pwrite(fd, p, n, at);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (w == 0) return EIO;
    p += w;
    n -= static_cast<std::size_t>(w);
    at += w;
  }
  return 0;
}

// Reads up to n bytes at `at` into p, stopping at the end of the file; 0 or
// errno. `got`: the bytes read.
int readAll(int fd, unsigned char* p, std::size_t n, off_t at, std::size_t& got) {
  got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd, p + got, n - got, at + static_cast<off_t>(got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return errno;
    if (r == 0) break;
    got += static_cast<std::size_t>(r);
  }
  return 0;
}

int fsyncDir(const fs::path& file) {
  const fs::path dir = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  const int d = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d < 0) return errno;
  const int rc = ::fsync(d) == 0 ? 0 : errno;
  ::close(d);
  return rc == EINVAL ? 0 : rc;  // some filesystems do not sync folders
}

// A journal's records, parsed and checked. Empty optional: not a valid journal.
struct Journal {
  struct Record {
    std::uint64_t addr, offset, size;  // offset into bytes
  };
  std::vector<unsigned char> bytes;
  std::vector<Record> records;
  std::uint64_t shrinkTo = kNoShrink;
};

std::optional<Journal> readJournal(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  Journal j;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<std::size_t>(st.st_size) < kHeader + kTrailer) {
    ::close(fd);
    return std::nullopt;
  }
  j.bytes.resize(static_cast<std::size_t>(st.st_size));
  std::size_t got = 0;
  const int err = readAll(fd, j.bytes.data(), j.bytes.size(), 0, got);
  ::close(fd);
  const std::size_t n = j.bytes.size();
  if (err != 0 || got != n) return std::nullopt;
  const unsigned char* b = j.bytes.data();
  const std::size_t body = n - kTrailer;
  if (std::memcmp(b, kMagic, 8) != 0 || std::memcmp(b + n - 8, kEndMagic, 8) != 0) return std::nullopt;
  const Sha256::Digest want = digestOf(b, body);
  if (std::memcmp(b + body, want.data(), kDigest) != 0) return std::nullopt;
  const std::uint64_t count = getU64(b + 8);
  j.shrinkTo = getU64(b + 16);
  std::size_t at = kHeader;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (at + 16 > body) return std::nullopt;
    const std::uint64_t addr = getU64(b + at), size = getU64(b + at + 8);
    at += 16;
    if (size > body - at) return std::nullopt;
    j.records.push_back({addr, at, size});
    at += size;
  }
  if (at != body) return std::nullopt;
  return j;
}

// Writes a committed journal into the file; 0 or errno.
int applyJournal(int fd, const Journal& j) {
  for (const Journal::Record& r : j.records) {
    if (const int err = writeAll(fd, j.bytes.data() + r.offset, r.size, static_cast<off_t>(r.addr))) return err;
  }
  if (j.shrinkTo != kNoShrink && ::ftruncate(fd, static_cast<off_t>(j.shrinkTo)) != 0) return errno;
  return ::fsync(fd) == 0 ? 0 : errno;
}

struct JournalFile {
  H5FD_t pub;  // first: HDF5 sees a JournalFile* as an H5FD_t*
  int fd = -1;
  bool writable = false;
  dev_t dev = 0;
  ino_t ino = 0;
  fs::path path;
  haddr_t eoa = 0;
  haddr_t eofOnDisk = 0;
  // The end of the file as the last commit's metadata knows it: raw data
  // written below it overwrites what that checkpoint may still point at.
  haddr_t committedEoa = 0;
  std::size_t heldRaw = 0;          // raw bytes held since the last commit
  std::optional<haddr_t> shrinkTo;  // a truncation held back until the commit
  // Metadata written since the last commit: disjoint extents by address.
  std::map<haddr_t, std::vector<unsigned char> > pending;
};

JournalFile* cast(H5FD_t* f) { return reinterpret_cast<JournalFile*>(f); }
const JournalFile* cast(const H5FD_t* f) { return reinterpret_cast<const JournalFile*>(f); }

haddr_t pendingEnd(const JournalFile& f) {
  if (f.pending.empty()) return 0;
  const auto last = std::prev(f.pending.end());
  return last->first + last->second.size();
}

// The extents overlapping [addr, end): first and one past the last.
auto overlapping(std::map<haddr_t, std::vector<unsigned char> >& m, haddr_t addr, haddr_t end) {
  auto first = m.lower_bound(addr);
  if (first != m.begin()) {
    auto prev = std::prev(first);
    if (prev->first + prev->second.size() > addr) first = prev;
  }
  auto last = m.lower_bound(end);
  return std::pair{first, last};
}

void holdMetadata(JournalFile& f, haddr_t addr, std::size_t size, const unsigned char* data) {
  const haddr_t end = addr + size;
  auto [first, last] = overlapping(f.pending, addr, end);
  if (first == last) {
    f.pending.emplace(addr, std::vector<unsigned char>(data, data + size));
    return;
  }
  const haddr_t lo = std::min(addr, first->first);
  const auto lastIncl = std::prev(last);
  const haddr_t hi = std::max(end, lastIncl->first + lastIncl->second.size());
  std::vector<unsigned char> merged(hi - lo);
  for (auto it = first; it != last; ++it)
    std::memcpy(merged.data() + (it->first - lo), it->second.data(), it->second.size());
  std::memcpy(merged.data() + (addr - lo), data, size);
  f.pending.erase(first, last);
  f.pending.emplace(lo, std::move(merged));
}

// Calls fn(held bytes, bytes of [addr, addr + size), length) for each part of
// [addr, addr + size) that a held block covers.
template <class Fn>
void forEachHeldPart(JournalFile& f, haddr_t addr, std::size_t size, Fn fn) {
  const haddr_t end = addr + size;
  auto [first, last] = overlapping(f.pending, addr, end);
  for (auto it = first; it != last; ++it) {
    const haddr_t s = std::max(addr, it->first), e = std::min(end, it->first + it->second.size());
    fn(it->second.data() + (s - it->first), s - addr, e - s);
  }
}

// Raw data written over held metadata (space freed and reused since the last
// commit): the held bytes take the new data so that the commit keeps it.
void patchHeld(JournalFile& f, haddr_t addr, std::size_t size, const unsigned char* data) {
  forEachHeldPart(f, addr, size,
                  [&](unsigned char* held, std::size_t at, std::size_t n) { std::memcpy(held, data + at, n); });
}

void committed(JournalFile& f) {
  f.eofOnDisk = std::max<haddr_t>(f.eofOnDisk, pendingEnd(f));
  if (f.shrinkTo) f.eofOnDisk = *f.shrinkTo;
  f.pending.clear();
  f.shrinkTo.reset();
  f.committedEoa = f.eoa;
  f.heldRaw = 0;
}

// Writes the held blocks into the file, applies a held shrink, syncs; 0 or errno.
int writeHeld(JournalFile& f) {
  std::size_t done = 0;
  for (const auto& [addr, bytes] : f.pending) {
    if (done++ == f.pending.size() / 2) crashIf(JournalCrashPoint::MidApply);
    if (const int err = writeAll(f.fd, bytes.data(), bytes.size(), static_cast<off_t>(addr))) return err;
  }
  if (f.shrinkTo && ::ftruncate(f.fd, static_cast<off_t>(*f.shrinkTo)) != 0) return errno;
  return ::fsync(f.fd) == 0 ? 0 : errno;
}

// Streams the held blocks to a journal file: header, (address, length,
// bytes) records, SHA-256, end magic. Small pieces are gathered, the held
// blocks themselves are written from where they lie. 0 or errno.
int writeJournal(int fd, const JournalFile& f) {
  Sha256 hash;
  std::vector<unsigned char> buf(kMagic, kMagic + 8);
  off_t at = 0;
  int err = 0;
  const auto flushBuf = [&] {
    if (err == 0 && !buf.empty()) {
      hash.update(std::as_bytes(std::span(buf)));
      err = writeAll(fd, buf.data(), buf.size(), at);
      at += static_cast<off_t>(buf.size());
    }
    buf.clear();
  };
  putU64(buf, f.pending.size());
  putU64(buf, f.shrinkTo ? *f.shrinkTo : kNoShrink);
  for (const auto& [addr, bytes] : f.pending) {
    putU64(buf, addr);
    putU64(buf, bytes.size());
    if (bytes.size() < (std::size_t{64} << 10)) {
      buf.insert(buf.end(), bytes.begin(), bytes.end());
      if (buf.size() >= (std::size_t{1} << 20)) flushBuf();
      continue;
    }
    flushBuf();
    if (err != 0) return err;
    hash.update(std::as_bytes(std::span(bytes)));
    if ((err = writeAll(fd, bytes.data(), bytes.size(), at)) != 0) return err;
    at += static_cast<off_t>(bytes.size());
  }
  flushBuf();
  if (err != 0) return err;
  const Sha256::Digest digest = hash.finish();
  buf.assign(digest.begin(), digest.end());
  buf.insert(buf.end(), kEndMagic, kEndMagic + 8);
  return writeAll(fd, buf.data(), buf.size(), at);
}

herr_t commitInPlace(JournalFile& f) {
  if (const int err = writeHeld(f)) {
    pushError("sdw_journal_commit", H5E_WRITEERROR, "cannot write " + f.path.string(), err);
    return -1;
  }
  committed(f);
  return 0;
}

// Writes the held metadata through the journal (steps 1-4 of the header).
herr_t commit(JournalFile& f) {
  static const char* const func = "sdw_journal_commit";
  if (!f.writable || (f.pending.empty() && !f.shrinkTo)) return 0;
  // The raw data already written must be on disk before the metadata that
  // points at it can be (a power cut; a kill alone loses nothing written).
  if (::fdatasync(f.fd) != 0) {
    pushError(func, H5E_WRITEERROR, "cannot sync " + f.path.string(), errno);
    return -1;
  }
  const fs::path journal = journalPathFor(f.path);
  fs::path tmp = journal;
  tmp += ".tmp";
  const int jfd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int err = jfd < 0 ? errno : writeJournal(jfd, f);
  if (jfd >= 0) {
    if (err == 0 && ::fsync(jfd) != 0) err = errno;
    ::close(jfd);
  }
  if (err != 0) {
    ::unlink(tmp.c_str());
    // No room for the journal: write in place, unjournaled, as HDF5's default
    // driver would, so that the run can still be kept (a kill during this
    // one flush could tear it).
    if (err == ENOSPC || err == EDQUOT) return commitInPlace(f);
    pushError(func, H5E_WRITEERROR, "cannot write the journal " + tmp.string(), err);
    return -1;
  }
  crashIf(JournalCrashPoint::BeforeRename);
  if (::rename(tmp.c_str(), journal.c_str()) != 0) {
    err = errno;
    ::unlink(tmp.c_str());
    pushError(func, H5E_WRITEERROR, "cannot commit the journal " + journal.string(), err);
    return -1;
  }
  if ((err = fsyncDir(journal)) != 0) {
    pushError(func, H5E_WRITEERROR, "cannot sync the folder of " + journal.string(), err);
    return -1;
  }
  crashIf(JournalCrashPoint::AfterRename);

  // Committed: from here on a failure leaves the journal for the next open.
  if ((err = writeHeld(f)) != 0) {
    pushError(func, H5E_WRITEERROR, "cannot write " + f.path.string() + " from its journal", err);
    return -1;
  }
  // ENOENT: a reader without file locking replayed it meanwhile (same bytes).
  if ((::unlink(journal.c_str()) != 0 && errno != ENOENT) || fsyncDir(journal) != 0) {
    pushError(func, H5E_WRITEERROR, "cannot remove the journal " + journal.string(), errno);
    return -1;
  }
  committed(f);
  return 0;
}

// Before HDF5 reads a file: replays a committed journal left by a kill,
// deletes an uncommitted one. Skipped while another process holds the
// file's lock (a writer that will finish its own commit). 0 or errno.
int recover(const fs::path& path) {
  const fs::path journal = journalPathFor(path);
  fs::path tmp = journal;
  tmp += ".tmp";
  std::error_code ec;
  const bool haveJournal = fs::exists(journal, ec), haveTmp = fs::exists(tmp, ec);
  if (!haveJournal && !haveTmp) return 0;
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  // Only a committed journal needs the file writable: an uncommitted one
  // changes nothing (its owner deletes it, or the next writable open).
  if (fd < 0) return errno == ENOENT || !haveJournal ? 0 : errno;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return 0;  // a live writer
  }
  int err = 0;
  if (haveJournal) {
    if (std::optional<Journal> j = readJournal(journal)) {
      err = applyJournal(fd, *j);
      if (err == 0 && ::unlink(journal.c_str()) == 0) err = fsyncDir(journal);
    } else {
      err = EBADMSG;  // a committed journal that does not check: the disk was damaged
    }
  }
  if (haveTmp) ::unlink(tmp.c_str());
  ::close(fd);  // releases the lock
  return err;
}

H5FD_t* jOpen(const char* name, unsigned flags, hid_t /*fapl*/, haddr_t maxaddr) {
  static const char* const func = "sdw_journal_open";
  if (maxaddr == 0 || maxaddr == HADDR_UNDEF || maxaddr > static_cast<haddr_t>(std::numeric_limits<off_t>::max())) {
    pushError(func, H5E_BADVALUE, "bad maximum address");
    return nullptr;
  }
  const fs::path path(name);
  const bool creating = (flags & (H5F_ACC_TRUNC | H5F_ACC_EXCL | H5F_ACC_CREAT)) != 0;
  if (creating) {
    // A new file under this name: any journal left here belongs to an older one.
    fs::path journal = journalPathFor(path);
    ::unlink(journal.c_str());
    journal += ".tmp";
    ::unlink(journal.c_str());
  } else if (const int err = recover(path)) {
    pushError(func, H5E_CANTOPENFILE, "cannot replay the journal of " + path.string(), err);
    return nullptr;
  }
  int oflags = O_CLOEXEC | ((flags & H5F_ACC_RDWR) ? O_RDWR : O_RDONLY);
  if (flags & H5F_ACC_TRUNC) oflags |= O_TRUNC;
  if (flags & H5F_ACC_CREAT) oflags |= O_CREAT;
  if (flags & H5F_ACC_EXCL) oflags |= O_EXCL;
  const int fd = ::open(name, oflags, 0666);
  if (fd < 0) {
    pushError(func, H5E_CANTOPENFILE, std::string("unable to open file: name = '") + name + "'", errno);
    return nullptr;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    pushError(func, H5E_CANTOPENFILE, "unable to fstat file", err);
    return nullptr;
  }
  auto* f = new JournalFile();
  std::memset(&f->pub, 0, sizeof f->pub);
  f->fd = fd;
  f->writable = (flags & H5F_ACC_RDWR) != 0;
  f->dev = st.st_dev;
  f->ino = st.st_ino;
  f->path = path;
  f->eofOnDisk = static_cast<haddr_t>(st.st_size);
  f->committedEoa = f->eofOnDisk;
  return &f->pub;
}

herr_t jClose(H5FD_t* file) {
  JournalFile* f = cast(file);
  herr_t rc = commit(*f);
  if (::close(f->fd) != 0 && rc == 0) {
    pushError("sdw_journal_close", H5E_CANTCLOSEFILE, "unable to close file", errno);
    rc = -1;
  }
  delete f;
  return rc;
}

int jCmp(const H5FD_t* a, const H5FD_t* b) {
  const JournalFile *x = cast(a), *y = cast(b);
  if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
  if (x->ino != y->ino) return x->ino < y->ino ? -1 : 1;
  return 0;
}

herr_t jQuery(const H5FD_t*, unsigned long* flags) {
  if (flags) {
    *flags = H5FD_FEAT_AGGREGATE_METADATA | H5FD_FEAT_ACCUMULATE_METADATA | H5FD_FEAT_DATA_SIEVE |
             H5FD_FEAT_AGGREGATE_SMALLDATA | H5FD_FEAT_DEFAULT_VFD_COMPATIBLE;
  }
  return 0;
}

haddr_t jGetEoa(const H5FD_t* file, H5FD_mem_t) { return cast(file)->eoa; }

herr_t jSetEoa(H5FD_t* file, H5FD_mem_t, haddr_t addr) {
  cast(file)->eoa = addr;
  return 0;
}

haddr_t jGetEof(const H5FD_t* file, H5FD_mem_t) {
  const JournalFile* f = cast(file);
  const haddr_t onDisk = f->shrinkTo ? *f->shrinkTo : f->eofOnDisk;
  return std::max(onDisk, pendingEnd(*f));
}

herr_t jGetHandle(H5FD_t* file, hid_t, void** handle) {
  if (!handle) return -1;
  *handle = cast(file);  // journalFileRenamed() needs the driver's own record
  return 0;
}

herr_t jRead(H5FD_t* file, H5FD_mem_t, hid_t, haddr_t addr, size_t size, void* buf) {
  JournalFile* f = cast(file);
  auto* out = static_cast<unsigned char*>(buf);
  if (addr == HADDR_UNDEF || addr + size > f->pub.maxaddr) {
    pushError("sdw_journal_read", H5E_READERROR, "address overflow, addr = " + std::to_string(addr));
    return -1;
  }
  std::size_t done = 0;
  if (const int err = readAll(f->fd, out, size, static_cast<off_t>(addr), done)) {
    pushError("sdw_journal_read", H5E_READERROR, "file read failed, addr = " + std::to_string(addr), err);
    return -1;
  }
  if (done < size) std::memset(out + done, 0, size - done);  // past the end of the file: zeros
  // What is held and not yet in the file reads as written.
  forEachHeldPart(*f, addr, size,
                  [&](const unsigned char* held, std::size_t at, std::size_t n) { std::memcpy(out + at, held, n); });
  return 0;
}

herr_t jWrite(H5FD_t* file, H5FD_mem_t type, hid_t, haddr_t addr, size_t size, const void* buf) {
  JournalFile* f = cast(file);
  const auto* data = static_cast<const unsigned char*>(buf);
  if (!f->writable) {
    pushError("sdw_journal_write", H5E_WRITEERROR, "file is read-only");
    return -1;
  }
  if (addr == HADDR_UNDEF || addr + size > f->pub.maxaddr) {
    pushError("sdw_journal_write", H5E_WRITEERROR, "address overflow, addr = " + std::to_string(addr));
    return -1;
  }
  if (type != H5FD_MEM_DRAW) {
    holdMetadata(*f, addr, size, data);
    return 0;
  }
  // Raw data rewritten in place (a dataset written again, or space freed and
  // reused since the last commit) is held too, up to a budget, so that a
  // kill cannot mix two checkpoints' values; new space is written at once.
  std::size_t held = 0;
  if (addr < f->committedEoa) {
    const std::size_t below = static_cast<std::size_t>(std::min<haddr_t>(addr + size, f->committedEoa) - addr);
    if (f->heldRaw + below <= gHeldRawBudget.load()) {
      holdMetadata(*f, addr, below, data);
      f->heldRaw += below;
      held = below;
    }
  }
  if (held == size) return 0;
  const haddr_t at = addr + held;
  const std::size_t rest = size - held;
  if (const int err = writeAll(f->fd, data + held, rest, static_cast<off_t>(at))) {
    pushError("sdw_journal_write", H5E_WRITEERROR, "file write failed, addr = " + std::to_string(at), err);
    return -1;
  }
  patchHeld(*f, at, rest, data + held);
  f->eofOnDisk = std::max<haddr_t>(f->eofOnDisk, at + rest);
  if (f->shrinkTo && *f->shrinkTo < at + rest) f->shrinkTo = at + rest;
  return 0;
}

herr_t jFlush(H5FD_t* file, hid_t, hbool_t) { return commit(*cast(file)); }

// HDF5 truncates the file to its allocated end at each flush. Growing is done
// now; shrinking waits for the commit, since the space cut off may still hold
// what the last checkpoint's metadata points at (a dataset replaced since).
herr_t jTruncate(H5FD_t* file, hid_t, hbool_t) {
  JournalFile* f = cast(file);
  if (!f->writable) return 0;
  const haddr_t eof = jGetEof(file, H5FD_MEM_DEFAULT);
  if (f->eoa == eof) return 0;
  if (f->eoa > f->eofOnDisk) {
    if (::ftruncate(f->fd, static_cast<off_t>(f->eoa)) != 0) {
      pushError("sdw_journal_truncate", H5E_WRITEERROR, "unable to extend file", errno);
      return -1;
    }
    f->eofOnDisk = f->eoa;
    f->shrinkTo.reset();
    return 0;
  }
  f->shrinkTo = f->eoa;
  return 0;
}

herr_t jLock(H5FD_t* file, hbool_t rw) {
  const int op = (rw ? LOCK_EX : LOCK_SH) | LOCK_NB;
  if (::flock(cast(file)->fd, op) != 0) {
    if (errno == ENOSYS) return 0;  // a filesystem without locks, as the default driver allows
    pushError("sdw_journal_lock", H5E_CANTLOCKFILE, "unable to lock file", errno);
    return -1;
  }
  return 0;
}

herr_t jUnlock(H5FD_t* file) {
  if (::flock(cast(file)->fd, LOCK_UN) != 0 && errno != ENOSYS) {
    pushError("sdw_journal_unlock", H5E_CANTUNLOCKFILE, "unable to unlock file", errno);
    return -1;
  }
  return 0;
}

H5FD_class_t makeClass() {
  H5FD_class_t c;
  std::memset(&c, 0, sizeof c);
  c.name = "sdw_journal";
  c.maxaddr = static_cast<haddr_t>(std::numeric_limits<off_t>::max());
  c.fc_degree = H5F_CLOSE_WEAK;
  c.open = jOpen;
  c.close = jClose;
  c.cmp = jCmp;
  c.query = jQuery;
  c.get_eoa = jGetEoa;
  c.set_eoa = jSetEoa;
  c.get_eof = jGetEof;
  c.get_handle = jGetHandle;
  c.read = jRead;
  c.write = jWrite;
  c.flush = jFlush;
  c.truncate = jTruncate;
  c.lock = jLock;
  c.unlock = jUnlock;
  const H5FD_mem_t map[H5FD_MEM_NTYPES] = H5FD_FLMAP_DICHOTOMY;
  std::memcpy(c.fl_map, map, sizeof map);
  return c;
}

const H5FD_class_t kClass = makeClass();

}  // namespace

bool journalDriverAvailable() { return true; }

bool useJournalDriver(hid_t fapl) {
  // Registered once per process (callers hold Hdf5Lock; the id lives as long as the library).
  static const hid_t id = H5FDregister(&kClass);
  return id >= 0 && H5Pset_driver(fapl, id, nullptr) >= 0;
}

void journalFileRenamed(hid_t file, const fs::path& newPath) {
  void* handle = nullptr;
  if (H5Fget_vfd_handle(file, H5P_FILE_ACCESS_DEFAULT, &handle) < 0 || !handle) return;
  H5FD_t* fd = static_cast<H5FD_t*>(handle);
  if (fd->cls != nullptr && fd->cls->open != jOpen) return;
  static_cast<JournalFile*>(handle)->path = newPath;
}

}  // namespace sdw::runstore::detail

#endif
