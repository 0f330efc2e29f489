// Opening and validating run files, the workspace listing, and the read
// API shared by RunReader and RunWriter (RunFile).

#include "core/runstore.h"

#include "core/h5_journal.h"
#include "core/runstore_internal.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <system_error>

namespace sdw::runstore {
namespace fs = std::filesystem;
using namespace detail;

// ---------------------------------------------------------------------------
// Errors

const char* toString(ErrorCode code) {
    switch (code) {
        case ErrorCode::NotFound: return "not found";
        case ErrorCode::NotHdf5: return "not an HDF5 file";
        case ErrorCode::Corrupt: return "truncated or corrupt";
        case ErrorCode::Foreign: return "foreign HDF5 file";
        case ErrorCode::NewerSchema: return "newer schema";
        case ErrorCode::Io: return "I/O error";
        case ErrorCode::Locked: return "locked";
        case ErrorCode::DiskFull: return "disk full";
        case ErrorCode::Exists: return "already exists";
        case ErrorCode::Missing: return "missing";
        case ErrorCode::TypeMismatch: return "type mismatch";
        case ErrorCode::InvalidArgument: return "invalid argument";
    }
    return "unknown";
}

RunStoreError::RunStoreError(ErrorCode code, fs::path file, std::string object, const std::string& message)
    : std::runtime_error(message), code_(code), file_(std::move(file)), object_(std::move(object)) {}

namespace {

bool looksLikeLocked(std::string detail) {
    std::transform(detail.begin(), detail.end(), detail.begin(), [](unsigned char c) { return std::tolower(c); });
    return detail.find("unable to lock file") != std::string::npos ||
           detail.find("unable to lock the file") != std::string::npos;
}

htri_t isHdf5(const fs::path& p) {
#if H5_VERSION_GE(1, 12, 0)
    return H5Fis_accessible(p.c_str(), H5P_DEFAULT);
#else
    return H5Fis_hdf5(p.c_str());
#endif
}

// The superblock's fixed fields, checked before libhdf5 reads the file: a
// superblock declaring address or length sizes other than 4 or 8 bytes (every
// run file has 8) made libhdf5 allocate gigabytes for a 41-byte file. Returns
// an empty string when the file may be opened, else what is wrong.
std::string superblockProblem(const fs::path& p, std::uintmax_t size) {
    static constexpr unsigned char kSignature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    std::ifstream f(p, std::ios::binary);
    // The superblock sits at 0, 512, 1024, 2048, ... (after a user block).
    for (std::uintmax_t at = 0; at + 8 <= size; at = at == 0 ? 512 : at * 2) {
        unsigned char b[16] = {};
        f.seekg(static_cast<std::streamoff>(at));
        f.read(reinterpret_cast<char*>(b), sizeof b);
        const auto got = static_cast<std::size_t>(f.gcount());
        f.clear();
        if (got < 8 || std::memcmp(b, kSignature, 8) != 0) continue;
        if (got < 16) return "truncated superblock";
        const unsigned version = b[8];
        if (version > 3) return "superblock version " + std::to_string(version);
        // Versions 0 and 1: sizes of offsets and lengths at bytes 13 and 14; 2 and 3: at 9 and 10.
        const unsigned offsets = version <= 1 ? b[13] : b[9], lengths = version <= 1 ? b[14] : b[10];
        if ((offsets != 4 && offsets != 8) || (lengths != 4 && lengths != 8))
            return "superblock declares " + std::to_string(offsets) + "-byte addresses and " + std::to_string(lengths) +
                   "-byte lengths (4 or 8 expected)";
        return {};
    }
    return {};  // no signature: isHdf5 says so
}

}  // namespace

// ---- opening and validation ----

H5Handle detail::fileAccessPlist(bool writable) {
  H5Handle fapl = h5Plist(H5Pcreate(H5P_FILE_ACCESS));
  // The 1.8 format: checksummed metadata (truncation and damage are
  // detected), readable by every h5py, and no "file open for write" flag
  // that a crashed writer would leave set (1.10 format only).
  if (fapl) H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_V18);
  // Checkpoints through a journal (core/h5_journal.h); every open replays
  // one that a kill left behind. Read-only opens need the driver for that.
  if (fapl) useJournalDriver(fapl.get());
  if (fapl && writable) {
    // Evictions off: the metadata cache keeps every changed header, heap
    // and index until H5Fflush (a checkpoint) or close, rather than writing
    // them out mid-interval (which the journal would then hold anyway). The
    // cache grows as needed instead (a run's metadata is a few MB).
    H5AC_cache_config_t cfg;
    cfg.version = H5AC__CURR_CACHE_CONFIG_VERSION;
    if (H5Pget_mdc_config(fapl.get(), &cfg) >= 0) {
      cfg.incr_mode = H5C_incr__off;
      cfg.flash_incr_mode = H5C_flash_incr__off;
      cfg.decr_mode = H5C_decr__off;
      cfg.evictions_enabled = false;
      H5Pset_mdc_config(fapl.get(), &cfg);
    }
  }
  return fapl;
}

void detail::openValidated(RunFileState& st, bool writable) {
    const fs::path& p = st.path;
    std::error_code ec;
    const fs::file_status status = fs::status(p, ec);
    if (!fs::exists(status)) st.fail(ErrorCode::NotFound, {}, "run file not found: " + quoted(p));
    if (fs::is_directory(status)) st.fail(ErrorCode::NotHdf5, {}, quoted(p) + " is a directory, not an HDF5 file");
    const std::uintmax_t size = fs::file_size(p, ec);
    if (ec) st.fail(ErrorCode::Io, {}, "cannot read " + quoted(p) + ": " + ec.message());
    if (size == 0) st.fail(ErrorCode::NotHdf5, {}, quoted(p) + " is empty: not an HDF5 file");
    {
        std::ifstream probe(p, std::ios::binary);
        if (!probe) st.fail(ErrorCode::Io, {}, "cannot open " + quoted(p) + ": " + std::strerror(errno));
    }

    // Before libhdf5 reads anything.
    if (const std::string bad = superblockProblem(p, size); !bad.empty())
        st.fail(ErrorCode::Corrupt, {}, quoted(p) + ": file is truncated or corrupt (" + bad + ")");
    const htri_t hdf5 = isHdf5(p);
    if (hdf5 < 0) st.failH5(ErrorCode::Io, {}, "cannot read " + quoted(p));
    if (hdf5 == 0) st.fail(ErrorCode::NotHdf5, {}, quoted(p) + " is not an HDF5 file");

    H5Handle fapl = fileAccessPlist(writable);
    st.file = h5File(H5Fopen(p.c_str(), writable ? H5F_ACC_RDWR : H5F_ACC_RDONLY, fapl.get()));
    if (!st.file) {
        const std::string detail = hdf5ErrorDetail();
        if (looksLikeLocked(detail)) {
            // HDF5 holds an exclusive lock while a file is open for writing.
            st.fail(ErrorCode::Locked, {}, withDetail(quoted(p) + " is locked: another process is writing it", detail));
        }
        if (detail.find("Permission denied") != std::string::npos) {
            st.fail(ErrorCode::Io, {}, withDetail("permission denied opening " + quoted(p), detail));
        }
        st.fail(ErrorCode::Corrupt, {}, withDetail(quoted(p) + ": file is truncated or corrupt", detail));
    }
    st.writable = writable;

    // Anything unreadable from here on means damage, since the superblock was fine.
    const auto corrupt = [&](const std::string& what) {
        const std::string detail = hdf5ErrorDetail();
        st.file.reset();
        st.fail(ErrorCode::Corrupt, {}, withDetail(quoted(p) + ": file is truncated or corrupt (" + what + ")", detail));
    };
    const auto closeAndFail = [&](ErrorCode code, const std::string& message) {
        st.file.reset();
        st.fail(code, {}, message);
    };

    const htri_t hasMagic = H5Aexists(st.file.get(), "sdw_format");
    if (hasMagic < 0) corrupt("cannot read root attributes");
    const std::string foreign = quoted(p) + " is not a SparseDecoding Workbench run file (foreign HDF5)";
    if (hasMagic == 0) closeAndFail(ErrorCode::Foreign, foreign);
    std::string magic;
    try {
        magic = readStringAttr(st, "/", "sdw_format");
    } catch (const RunStoreError& e) {
        if (e.code() == ErrorCode::TypeMismatch) closeAndFail(ErrorCode::Foreign, foreign);
        corrupt("cannot read sdw_format");
    }
    if (magic != kFormatMagic) closeAndFail(ErrorCode::Foreign, foreign);

    std::int64_t version = 0;
    try {
        version = readNumericAttr<std::int64_t>(st, "/", "sdw_schema_version", H5T_NATIVE_INT64, false);
    } catch (const RunStoreError& e) {
        corrupt(e.code() == ErrorCode::Missing ? "no sdw_schema_version" : "cannot read sdw_schema_version");
    }
    if (version > kSchemaVersion) {
        closeAndFail(ErrorCode::NewerSchema,
                     quoted(p) + " was written by a newer version (schema " + std::to_string(version) +
                         ", this build reads up to " + std::to_string(kSchemaVersion) + ")");
    }
    if (version < 1) corrupt("invalid sdw_schema_version " + std::to_string(version));

    // Load the remaining root attributes now so that damage shows up at open
    // rather than in the middle of a later read.
    try {
        for (const char* name : {"run_kind", "run_id", "status"}) (void)readStringAttr(st, "/", name);
        st.checkpoint = readNumericAttr<std::int64_t>(st, "/", "checkpoint", H5T_NATIVE_INT64, false);
    } catch (const RunStoreError& e) {
        corrupt(e.what());
    }
}

// ---------------------------------------------------------------------------
// Free functions

fs::path partialPathFor(const fs::path& finalPath) {
    fs::path p = finalPath;
    p += std::string(kPartialSuffix);
    return p;
}

fs::path creatingPathFor(const fs::path& finalPath) {
    fs::path p = finalPath.parent_path() / ("." + finalPath.filename().string());
    p += std::string(kCreatingSuffix);
    return p;
}

bool isPartialPath(const fs::path& path) { return endsWith(path.filename().string(), kPartialSuffix); }

std::string makeRunId() {
    const std::string stamp = utcNowIso();  // 2025-01-31T12:00:00Z
    std::string compact;
    for (char c : stamp) {
        if (c != '-' && c != ':') compact.push_back(c);
    }
    std::random_device rd;
    std::mt19937_64 gen((std::uint64_t(rd()) << 32) ^ rd() ^
                        std::uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()));
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08x", static_cast<unsigned>(gen() & 0xffffffffu));
    return compact + "-" + hex;
}

RunSummary inspectRun(const fs::path& path) { return RunReader::open(path).summary(); }

std::vector<WorkspaceEntry> listWorkspace(const fs::path& dir) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
        throw RunStoreError(ErrorCode::NotFound, dir, {}, "workspace folder not found: " + quoted(dir));
    }
    std::vector<WorkspaceEntry> entries;
    const std::string partialRun = std::string(kRunSuffix) + std::string(kPartialSuffix);
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        const bool partial = endsWith(name, partialRun);
        if (!partial && !endsWith(name, kRunSuffix)) continue;
        std::error_code typeEc;
        if (!it->is_regular_file(typeEc)) continue;
        WorkspaceEntry e;
        e.path = it->path();
        e.partial = partial;
        entries.push_back(std::move(e));
    }
    if (ec) throw RunStoreError(ErrorCode::Io, dir, {}, "cannot list " + quoted(dir) + ": " + ec.message());

    std::sort(entries.begin(), entries.end(), [](const WorkspaceEntry& a, const WorkspaceEntry& b) {
        return a.path.filename() < b.path.filename();
    });
    for (WorkspaceEntry& e : entries) {
        try {
            e.summary = inspectRun(e.path);
        } catch (const RunStoreError& err) {
            e.error = err.what();
            e.errorCode = err.code();
        } catch (const std::exception& err) {
            e.error = err.what();
            e.errorCode = ErrorCode::Io;
        }
    }
    return entries;
}

// ---------------------------------------------------------------------------
// RunFile

RunFile::RunFile() = default;
RunFile::RunFile(std::unique_ptr<RunFileState> state) : state_(std::move(state)) {}
RunFile::RunFile(RunFile&&) noexcept = default;
RunFile& RunFile::operator=(RunFile&&) noexcept = default;
RunFile::~RunFile() = default;

RunFileState& RunFile::state() const {
    if (!state_ || !state_->file) {
        throw RunStoreError(ErrorCode::InvalidArgument, state_ ? state_->path : fs::path(), {},
                            "run file " + (state_ ? quoted(state_->path) + " " : std::string()) + "is closed");
    }
    return *state_;
}

const fs::path& RunFile::path() const {
    static const fs::path kNone;
    return state_ ? state_->path : kNone;
}

bool RunFile::isOpen() const {
    Hdf5Lock lock;
    return state_ && state_->file;
}

std::string RunFile::runId() const { return readStringAttribute("/", "run_id"); }
std::string RunFile::kind() const { return readStringAttribute("/", "run_kind"); }
std::string RunFile::status() const { return readStringAttribute("/", "status"); }
int RunFile::schemaVersion() const { return static_cast<int>(readIntAttribute("/", "sdw_schema_version")); }

std::int64_t RunFile::checkpointCount() const {
    Hdf5Lock lock;
    return state().checkpoint;
}

Provenance RunFile::provenance() const {
    Hdf5Lock lock;
    return readProvenance(state());
}

RunSummary RunFile::summary() const {
    Hdf5Lock lock;
    const RunFileState& st = state();
    RunSummary s;
    s.path = st.path;
    s.runId = readStringAttr(st, "/", "run_id");
    s.kind = readStringAttr(st, "/", "run_kind");
    s.status = readStringAttr(st, "/", "status");
    s.schemaVersion = static_cast<int>(
        readNumericAttr<std::int64_t>(st, "/", "sdw_schema_version", H5T_NATIVE_INT64, false));
    s.checkpoint = st.checkpoint;
    s.provenance = readProvenance(st);
    return s;
}

ObjectKind RunFile::objectKind(std::string_view objectPath) const {
    Hdf5Lock lock;
    return kindOf(state(), normalizeObjectPath(objectPath));
}

namespace {

herr_t collectLinkName(hid_t, const char* name, const H5L_info_t*, void* data) {
    static_cast<std::vector<std::string>*>(data)->emplace_back(name);
    return 0;
}

herr_t collectAttrName(hid_t, const char* name, const H5A_info_t*, void* data) {
    static_cast<std::vector<std::string>*>(data)->emplace_back(name);
    return 0;
}

}  // namespace

std::vector<std::string> RunFile::listGroup(std::string_view groupPath) const {
    Hdf5Lock lock;
    const RunFileState& st = state();
    const std::string p = normalizeObjectPath(groupPath);
    const ObjectKind kind = kindOf(st, p);
    if (kind == ObjectKind::None) st.fail(ErrorCode::Missing, p, "no group " + st.where(p));
    if (kind != ObjectKind::Group) st.fail(ErrorCode::InvalidArgument, p, st.where(p) + " is not a group");
    H5Handle group = h5Group(H5Gopen2(st.file.get(), p.c_str(), H5P_DEFAULT));
    std::vector<std::string> names;
    hsize_t idx = 0;
    if (!group || H5Literate(group.get(), H5_INDEX_NAME, H5_ITER_INC, &idx, &collectLinkName, &names) < 0) {
        st.failH5(ErrorCode::Corrupt, p, "cannot list group " + st.where(p));
    }
    std::sort(names.begin(), names.end());
    return names;
}

std::vector<hsize_t> RunFile::shape(std::string_view datasetPath) const {
    Hdf5Lock lock;
    const RunFileState& st = state();
    const std::string p = normalizeObjectPath(datasetPath);
    H5Handle ds = openDataset(st, p);
    return datasetDims(st, ds.get(), p);
}

void RunFile::readRaw(std::string_view datasetPath, ElementType type,
                      std::optional<std::pair<hsize_t, hsize_t>> rows, std::vector<hsize_t>& shape,
                      const Allocate& allocate) const {
    Hdf5Lock lock;
    const RunFileState& st = state();
    const std::string p = normalizeObjectPath(datasetPath);
    H5Handle ds = openDataset(st, p);
    H5Handle ftype = h5Type(H5Dget_type(ds.get()));
    if (!ftype) st.failH5(ErrorCode::Corrupt, p, "cannot read the type of " + st.where(p));
    if (!widensLosslessly(ftype.get(), type)) {
        st.fail(ErrorCode::TypeMismatch, p,
                st.where(p) + " holds " + describeType(ftype.get()) + ", cannot read it as " + toString(type));
    }
    std::vector<hsize_t> dims = datasetDims(st, ds.get(), p);

    H5Handle fileSpace, memSpace;
    if (rows) {
        const auto [first, count] = *rows;
        if (dims.empty() || first > dims[0] || count > dims[0] - first) {
            st.fail(ErrorCode::InvalidArgument, p,
                    "rows [" + std::to_string(first) + ", " + std::to_string(first + count) + ") are outside " +
                        st.where(p) + " of shape " + shapeString(dims));
        }
        std::vector<hsize_t> start(dims.size(), 0);
        start[0] = first;
        dims[0] = count;
        fileSpace = h5Space(H5Dget_space(ds.get()));
        if (!fileSpace || H5Sselect_hyperslab(fileSpace.get(), H5S_SELECT_SET, start.data(), nullptr, dims.data(),
                                              nullptr) < 0) {
            st.failH5(ErrorCode::Corrupt, p, "cannot select rows of " + st.where(p));
        }
        memSpace = h5Space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr));
    }
    const std::optional<std::uint64_t> n = product(dims);
    if (!n || *n > std::numeric_limits<std::size_t>::max() / elementSize(type)) {
        st.fail(ErrorCode::Corrupt, p, st.where(p) + " claims an impossible shape " + shapeString(dims));
    }
    shape = dims;
    void* buf = allocate(static_cast<std::size_t>(*n));
    if (*n == 0) return;
    const hid_t ms = rows ? memSpace.get() : H5S_ALL;
    const hid_t fsp = rows ? fileSpace.get() : H5S_ALL;
    if (H5Dread(ds.get(), nativeType(type), ms, fsp, H5P_DEFAULT, buf) < 0) {
        st.failH5(ErrorCode::Corrupt, p, "cannot read dataset " + st.where(p) + ": file is truncated or corrupt");
    }
}

std::vector<std::string> RunFile::readStrings(std::string_view datasetPath) const {
    Hdf5Lock lock;
    const RunFileState& st = state();
    const std::string p = normalizeObjectPath(datasetPath);
    H5Handle ds = openDataset(st, p);
    return readStringValues(st, ds.get(), false, p);
}

bool RunFile::hasAttribute(std::string_view objectPath, std::string_view name) const {
    Hdf5Lock lock;
    const RunFileState& st = state();
    const std::string p = normalizeObjectPath(objectPath);
    if (kindOf(st, p) == ObjectKind::None) return false;
    H5Handle obj = openObject(st, p);
    const htri_t has = H5Aexists(obj.get(), std::string(name).c_str());
    if (has < 0) st.failH5(ErrorCode::Corrupt, p, "cannot read attributes of " + st.where(p));
    return has > 0;
}

std::vector<std::string> RunFile::attributeNames(std::string_view objectPath) const {
    Hdf5Lock lock;
    const RunFileState& st = state();
    const std::string p = normalizeObjectPath(objectPath);
    H5Handle obj = openObject(st, p);
    std::vector<std::string> names;
    hsize_t idx = 0;
    if (H5Aiterate2(obj.get(), H5_INDEX_NAME, H5_ITER_INC, &idx, &collectAttrName, &names) < 0) {
        st.failH5(ErrorCode::Corrupt, p, "cannot list attributes of " + st.where(p));
    }
    std::sort(names.begin(), names.end());
    return names;
}

std::string RunFile::readStringAttribute(std::string_view objectPath, std::string_view name) const {
    Hdf5Lock lock;
    return readStringAttr(state(), normalizeObjectPath(objectPath), name);
}

std::int64_t RunFile::readIntAttribute(std::string_view objectPath, std::string_view name) const {
    Hdf5Lock lock;
    return readNumericAttr<std::int64_t>(state(), normalizeObjectPath(objectPath), name, H5T_NATIVE_INT64, false);
}

double RunFile::readDoubleAttribute(std::string_view objectPath, std::string_view name) const {
    Hdf5Lock lock;
    return readNumericAttr<double>(state(), normalizeObjectPath(objectPath), name, H5T_NATIVE_DOUBLE, true);
}

// ---------------------------------------------------------------------------
// RunReader

RunReader RunReader::open(const fs::path& path) {
    auto st = std::make_unique<RunFileState>();
    st->path = path;
    st->finalPath = path;
    Hdf5Lock lock;
    openValidated(*st, false);
    return RunReader(std::move(st));
}

}  // namespace sdw::runstore
