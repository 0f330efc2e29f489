// RunWriter: creating and resuming run files, datasets (chunking, deflate),
// appends that roll back when their rows do not reach the disk, the free
// space reserve, checkpoints, commit and discard.

#include "core/h5_journal.h"
#include "core/runstore_internal.h"

#include "core/format.h"
#include "core/json_limits.h"
#include "core/version.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <system_error>

#if defined(__linux__)
#include <fcntl.h>  // AT_FDCWD
#endif

namespace sdw::runstore {
namespace fs = std::filesystem;
using namespace detail;

namespace {

constexpr int kMaxRank = 8;
constexpr std::uint64_t kAutoChunkBytes = std::uint64_t{128} << 10;

// Root attributes owned by the schema; generic attribute writers refuse them.
constexpr std::string_view kReservedRootAttrs[] = {"sdw_format", "sdw_schema_version", "run_kind",
                                                   "run_id", "status", "checkpoint"};

H5Handle scalarSpace() { return h5Space(H5Screate(H5S_SCALAR)); }

void requireWritable(const RunFileState& st) {
    if (!st.writable) st.fail(ErrorCode::InvalidArgument, {}, quoted(st.path) + " is open read-only");
}

H5Handle intermediateGroupsLcpl() {
    H5Handle lcpl = h5Plist(H5Pcreate(H5P_LINK_CREATE));
    if (lcpl) H5Pset_create_intermediate_group(lcpl.get(), 1);
    return lcpl;
}

void requireAbsentDataset(const RunFileState& st, const std::string& objPath) {
    if (objPath == "/") st.fail(ErrorCode::InvalidArgument, objPath, "the root group cannot be a dataset");
    if (kindOf(st, objPath) != ObjectKind::None) {
        st.fail(ErrorCode::Exists, objPath, st.where(objPath) + " already exists");
    }
    // A parent that exists but is a dataset would make HDF5 fail obscurely.
    const std::string parent = objPath.substr(0, std::max<std::size_t>(1, objPath.rfind('/')));
    for (std::string p = parent; p.size() > 1; p = p.substr(0, std::max<std::size_t>(1, p.rfind('/')))) {
        const ObjectKind k = kindOf(st, p);
        if (k == ObjectKind::Group) break;
        if (k != ObjectKind::None) st.fail(ErrorCode::Exists, objPath, st.where(p) + " is not a group");
    }
}

// Dataset creation properties; chunked when extendible or compressed.
H5Handle datasetCreationPlist(const RunFileState& st, const std::string& objPath,
                              const std::vector<hsize_t>& shape, std::size_t elemBytes,
                              const DatasetOptions& options) {
    H5Handle dcpl = h5Plist(H5Pcreate(H5P_DATASET_CREATE));
    if (!dcpl) st.failH5(ErrorCode::Io, objPath, "cannot create dataset properties");
    const bool chunked = options.extendible || options.deflate > 0 || !options.chunk.empty();
    // An empty fixed-size dataset cannot be chunked (chunks may not exceed
    // fixed dimensions) and has nothing to compress.
    if (!chunked || (!options.extendible && product(shape).value_or(0) == 0)) return dcpl;

    std::vector<hsize_t> chunk = options.chunk;
    if (chunk.empty()) {
        // Whole rows, about kAutoChunkBytes per chunk. Fixed dimensions may
        // not be smaller than the chunk, hence the clamps.
        std::uint64_t rowBytes = elemBytes;
        chunk.assign(shape.size(), 1);
        for (std::size_t i = 1; i < shape.size(); ++i) {
            chunk[i] = std::max<hsize_t>(1, shape[i]);
            rowBytes *= chunk[i];
        }
        hsize_t rows = std::max<hsize_t>(1, kAutoChunkBytes / std::max<std::uint64_t>(1, rowBytes));
        if (!options.extendible) rows = std::min(rows, std::max<hsize_t>(1, shape[0]));
        chunk[0] = rows;
    }
    if (chunk.size() != shape.size()) {
        st.fail(ErrorCode::InvalidArgument, objPath,
                "chunk " + shapeString(chunk) + " does not match the rank of shape " + shapeString(shape));
    }
    for (std::size_t i = 0; i < shape.size(); ++i) {
        const bool fixedDim = i > 0 || !options.extendible;
        if (chunk[i] == 0 || (fixedDim && chunk[i] > shape[i])) {
            st.fail(ErrorCode::InvalidArgument, objPath,
                    "chunk " + shapeString(chunk) + " does not fit shape " + shapeString(shape) +
                        " (fixed dimensions must be >= 1 and >= the chunk)");
        }
    }
    if (H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()) < 0) {
        st.failH5(ErrorCode::InvalidArgument, objPath, "invalid chunk " + shapeString(chunk));
    }
    if (options.deflate > 0) {
        if (options.deflate > 9) st.fail(ErrorCode::InvalidArgument, objPath, "deflate level must be 0-9");
        if (H5Zfilter_avail(H5Z_FILTER_DEFLATE) <= 0) {
            st.fail(ErrorCode::InvalidArgument, objPath, "this HDF5 library has no deflate filter");
        }
        if (H5Pset_deflate(dcpl.get(), static_cast<unsigned>(options.deflate)) < 0) {
            st.failH5(ErrorCode::InvalidArgument, objPath, "cannot enable deflate");
        }
    }
    return dcpl;
}

// Extends an extendible dataset by `newRows` rows and returns the file
// selection covering them plus the matching memory space.
struct AppendTarget {
    H5Handle fileSpace;
    H5Handle memSpace;
    hsize_t oldRows = 0;
    hsize_t totalRows = 0;
};

// Shape of an extendible dataset; throws unless `count` elements make whole rows.
std::vector<hsize_t> appendableDims(const RunFileState& st, hid_t ds, const std::string& objPath,
                                    std::size_t count) {
    std::vector<hsize_t> maxDims;
    std::vector<hsize_t> dims = datasetDims(st, ds, objPath, &maxDims);
    if (dims.empty() || maxDims[0] != H5S_UNLIMITED) {
        st.fail(ErrorCode::InvalidArgument, objPath,
                st.where(objPath) + " is not extendible (create it with DatasetOptions::appendable())");
    }
    const std::vector<hsize_t> rowDims(dims.begin() + 1, dims.end());
    const std::uint64_t rowElems = product(rowDims).value_or(0);
    if (rowElems == 0 || count % rowElems != 0) {
        st.fail(ErrorCode::InvalidArgument, objPath,
                "cannot append " + std::to_string(count) + " elements to " + st.where(objPath) +
                    " with rows of " + std::to_string(rowElems) + " elements");
    }
    return dims;
}

// Closes an appended-to dataset. When the write or the close (which writes
// cached chunks) failed, shrinks the dataset back to its old row count so
// readers do not see rows that never reached the disk, then throws.
void finishAppend(const RunFileState& st, H5Handle& ds, const std::string& objPath, const AppendTarget& t,
                  bool written) {
    if (written && ds.reset()) return;
    std::string detail = hdf5ErrorDetail();
    ds.reset();
    H5Handle again = h5Dataset(H5Dopen2(st.file.get(), objPath.c_str(), H5P_DEFAULT));
    if (again) {
        std::vector<hsize_t> dims = datasetDims(st, again.get(), objPath);
        dims[0] = t.oldRows;
        H5Dset_extent(again.get(), dims.data());  // best effort; the error below stands either way
        again.reset();
    }
    H5Eclear2(H5E_DEFAULT);
    ErrorCode code = ErrorCode::Io;
    std::string message = "cannot append to " + st.where(objPath);
    if (looksLikeDiskFull(detail) || st.volumeNearlyFull()) {
        code = ErrorCode::DiskFull;
        message = "disk full: " + message;
    }
    st.fail(code, objPath, withDetail(message, detail));
}

AppendTarget extendRows(const RunFileState& st, hid_t ds, const std::string& objPath, std::size_t count) {
    const std::vector<hsize_t> dims = appendableDims(st, ds, objPath, count);
    const std::vector<hsize_t> rowDims(dims.begin() + 1, dims.end());
    const hsize_t oldRows = dims[0];
    const hsize_t newRows = count / product(rowDims).value_or(1);

    std::vector<hsize_t> extent = dims;
    extent[0] = oldRows + newRows;
    if (H5Dset_extent(ds, extent.data()) < 0) {
        st.failH5(ErrorCode::Io, objPath, "cannot extend " + st.where(objPath));
    }
    AppendTarget t;
    t.oldRows = oldRows;
    t.totalRows = extent[0];
    t.fileSpace = h5Space(H5Dget_space(ds));
    std::vector<hsize_t> start(dims.size(), 0), block = dims;
    start[0] = oldRows;
    block[0] = newRows;
    if (!t.fileSpace ||
        H5Sselect_hyperslab(t.fileSpace.get(), H5S_SELECT_SET, start.data(), nullptr, block.data(), nullptr) < 0) {
        st.failH5(ErrorCode::Io, objPath, "cannot select rows of " + st.where(objPath));
    }
    t.memSpace = h5Space(H5Screate_simple(static_cast<int>(block.size()), block.data(), nullptr));
    if (!t.memSpace) st.failH5(ErrorCode::Io, objPath, "cannot create a memory space");
    return t;
}

void writeAttribute(const RunFileState& st, const std::string& objPath, std::string_view name, hid_t fileType,
                    hid_t memType, const void* value) {
    requireWritable(st);
    const std::string n(name);
    if (n.empty()) st.fail(ErrorCode::InvalidArgument, objPath, "empty attribute name");
    H5Handle obj = openObject(st, objPath);
    const htri_t has = H5Aexists(obj.get(), n.c_str());
    if (has < 0) st.failH5(ErrorCode::Io, objPath, "cannot read attributes of " + st.where(objPath));
    // Recreated rather than overwritten so the type may change.
    if (has > 0 && H5Adelete(obj.get(), n.c_str()) < 0) {
        st.failH5(ErrorCode::Io, objPath, "cannot replace attribute '" + n + "' on " + st.where(objPath));
    }
    H5Handle space = scalarSpace();
    H5Handle attr = h5Attr(H5Acreate2(obj.get(), n.c_str(), fileType, space.get(), H5P_DEFAULT, H5P_DEFAULT));
    if (!attr || H5Awrite(attr.get(), memType, value) < 0) {
        st.failH5(ErrorCode::Io, objPath, "cannot write attribute '" + n + "' on " + st.where(objPath));
    }
}

void writeIntAttr(const RunFileState& st, const std::string& objPath, std::string_view name, std::int64_t value) {
    writeAttribute(st, objPath, name, H5T_NATIVE_INT64, H5T_NATIVE_INT64, &value);
}

void writeStringDataset(const RunFileState& st, const std::string& objPath, std::span<const std::string> values,
                        const DatasetOptions& options) {
    H5Handle type = vlenUtf8Type();
    const std::vector<hsize_t> shape{values.size()};
    std::uint64_t bytes = 0;
    std::vector<const char*> ptrs;
    ptrs.reserve(values.size());
    for (const std::string& v : values) {
        ptrs.push_back(v.c_str());
        bytes += v.size() + 16;  // global heap entry overhead, roughly
    }
    checkFreeSpace(st, bytes, objPath);
    H5Handle ds = createDataset(st, objPath, type.get(), shape, sizeof(char*), options);
    if (!values.empty() && H5Dwrite(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()) < 0) {
        st.failH5(ErrorCode::Io, objPath, "cannot write dataset " + st.where(objPath));
    }
    closeWritten(st, ds, objPath);
}

void flushFile(const RunFileState& st) {
    if (H5Fflush(st.file.get(), H5F_SCOPE_GLOBAL) < 0) {
        st.failH5(ErrorCode::Io, {}, "cannot flush " + quoted(st.path));
    }
}

void checkpointLocked(RunFileState& st) {
    requireWritable(st);
    writeIntAttr(st, "/", "checkpoint", st.checkpoint + 1);
    writeStringAttr(st, "/provenance", "updated_utc", utcNowIso());
    flushFile(st);
    ++st.checkpoint;
    st.lastCheckpoint = std::chrono::steady_clock::now();
}

void afterWrite(RunFileState& st) {
    if (st.autoInterval.count() > 0 &&
        std::chrono::steady_clock::now() - st.lastCheckpoint >= st.autoInterval) {
        checkpointLocked(st);
    }
}

// Renames without replacing an existing `to` unless `overwrite`.
void renameRun(const fs::path& from, const fs::path& to, bool overwrite) {
    std::error_code ec;
    if (!overwrite) {
#if defined(__linux__) && defined(RENAME_NOREPLACE)
        if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return;
        const int err = errno;
        if (err == EEXIST) {
            throw RunStoreError(ErrorCode::Exists, to, {}, "run file already exists: " + quoted(to));
        }
        // Filesystems without RENAME_NOREPLACE fall through to check-then-rename.
        if (err != EINVAL && err != ENOSYS && err != ENOTSUP) {
            throw RunStoreError(ErrorCode::Io, from, {},
                                "cannot rename " + quoted(from) + " to " + quoted(to) + ": " + std::strerror(err));
        }
#endif
        if (fs::exists(to, ec)) {
            throw RunStoreError(ErrorCode::Exists, to, {}, "run file already exists: " + quoted(to));
        }
    }
    fs::rename(from, to, ec);
    if (ec) {
        throw RunStoreError(ErrorCode::Io, from, {},
                            "cannot rename " + quoted(from) + " to " + quoted(to) + ": " + ec.message());
    }
}

bool validKind(std::string_view kind) {
    if (kind.empty() || kind.size() > 64) return false;
    return std::all_of(kind.begin(), kind.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    });
}

}  // namespace

// ---- writing helpers shared with the provenance code ----

namespace detail {

// Closes a dataset that was just written. HDF5 writes cached chunks at
// close, so this is where a full disk or an I/O error shows up.
void closeWritten(const RunFileState& st, H5Handle& ds, const std::string& objPath) {
    if (!ds.reset()) st.failH5(ErrorCode::Io, objPath, "cannot write dataset " + st.where(objPath));
}

// HDF5 1.10 does not recover from ENOSPC: a chunk that fails to reach the
// disk can be dropped without an error, and a file whose close failed can
// crash the library at exit. So data writes stop while there is still room
// for HDF5's own deferred writes (the reserve), before HDF5 sees the error.
void checkFreeSpace(const RunFileState& st, std::uint64_t bytes, std::string_view object,
                    bool keepReserve) {
    const std::uint64_t reserve = keepReserve ? st.minFree : 0;
    std::error_code ec;
    const fs::path dir = st.path.has_parent_path() ? st.path.parent_path() : fs::path(".");
    const fs::space_info info = fs::space(dir, ec);
    if (ec) return;  // unknown: let the write itself report a failure
    const std::uint64_t need = bytes > std::numeric_limits<std::uint64_t>::max() - reserve
                                   ? std::numeric_limits<std::uint64_t>::max()
                                   : bytes + reserve;
    if (info.available >= need) return;
    std::string message = "disk full: need " + humanBytes(need);
    if (reserve > 0) {
        message += " (" + humanBytes(bytes) + " data + " + humanBytes(reserve) + " kept in reserve)";
    }
    message += ", " + humanBytes(info.available) + " free on " + quoted(dir) + " while writing " + st.where(object);
    st.fail(ErrorCode::DiskFull, object, message);
}

void ensureGroup(const RunFileState& st, const std::string& groupPath) {
    const ObjectKind kind = kindOf(st, groupPath);
    if (kind == ObjectKind::Group) return;
    if (kind != ObjectKind::None) {
        st.fail(ErrorCode::Exists, groupPath, st.where(groupPath) + " exists and is not a group");
    }
    H5Handle lcpl = intermediateGroupsLcpl();
    H5Handle g = h5Group(H5Gcreate2(st.file.get(), groupPath.c_str(), lcpl.get(), H5P_DEFAULT, H5P_DEFAULT));
    if (!g) st.failH5(ErrorCode::Io, groupPath, "cannot create group " + st.where(groupPath));
}

H5Handle createDataset(const RunFileState& st, const std::string& objPath, hid_t fileType,
                       const std::vector<hsize_t>& shape, std::size_t elemBytes, const DatasetOptions& options) {
    if (shape.empty() || shape.size() > static_cast<std::size_t>(kMaxRank)) {
        st.fail(ErrorCode::InvalidArgument, objPath,
                "shape " + shapeString(shape) + " of " + st.where(objPath) + " must have rank 1 to " +
                    std::to_string(kMaxRank));
    }
    if (options.deflate < 0) st.fail(ErrorCode::InvalidArgument, objPath, "deflate level must be 0-9");
    requireAbsentDataset(st, objPath);

    std::vector<hsize_t> maxDims = shape;
    if (options.extendible) maxDims[0] = H5S_UNLIMITED;
    H5Handle space = h5Space(H5Screate_simple(static_cast<int>(shape.size()), shape.data(), maxDims.data()));
    if (!space) st.failH5(ErrorCode::InvalidArgument, objPath, "invalid shape " + shapeString(shape));
    H5Handle dcpl = datasetCreationPlist(st, objPath, shape, elemBytes, options);
    H5Handle lcpl = intermediateGroupsLcpl();
    H5Handle ds = h5Dataset(H5Dcreate2(st.file.get(), objPath.c_str(), fileType, space.get(), lcpl.get(),
                                       dcpl.get(), H5P_DEFAULT));
    if (!ds) st.failH5(ErrorCode::Io, objPath, "cannot create dataset " + st.where(objPath));
    return ds;
}

// Fixed-length rather than variable-length: the value then sits in the
// checksummed object header (or checksummed dense attribute storage), so a
// damaged file fails validation instead of crashing HDF5 inside its
// unchecksummed global heap. h5py reads these as bytes.
void writeStringAttr(const RunFileState& st, const std::string& objPath, std::string_view name,
                     std::string_view value) {
    const std::string copy(value);  // holds the one NUL byte an empty value needs
    H5Handle type = fixedUtf8Type(copy.size());
    writeAttribute(st, objPath, name, type.get(), type.get(), copy.c_str());
}

}  // namespace detail

// ---------------------------------------------------------------------------
// RunWriter

RunWriter RunWriter::create(const fs::path& finalPath, const Provenance& provenance, std::string kind,
                            const CreateOptions& options) {
    const fs::path partial = partialPathFor(finalPath);
    const auto refuse = [&](ErrorCode code, const std::string& message) {
        throw RunStoreError(code, finalPath, {}, message);
    };
    if (!endsWith(finalPath.filename().string(), kRunSuffix)) {
        refuse(ErrorCode::InvalidArgument, "run file name " + quoted(finalPath) + " must end in " +
                                               std::string(kRunSuffix));
    }
    if (!validKind(kind)) {
        refuse(ErrorCode::InvalidArgument,
               "run kind '" + kind + "' must be a non-empty lower-case identifier ([a-z0-9_-])");
    }
    if (!provenance.settingsJson.empty()) {
        try {
            (void)parseJsonBounded(provenance.settingsJson, "provenance settings_json");  // what readers accept
        } catch (const JsonInputError& e) {
            refuse(ErrorCode::InvalidArgument, e.overLimit() ? e.what() : "provenance settings_json is not valid JSON");
        }
    }

    std::error_code ec;
    if (fs::exists(finalPath, ec) && !options.overwrite) {
        refuse(ErrorCode::Exists, "run file already exists: " + quoted(finalPath));
    }
    if (fs::exists(partial, ec)) {
        if (!options.overwrite) {
            refuse(ErrorCode::Exists, "an unfinished run is already at " + quoted(partial) +
                                          " (resume or discard it, or create with overwrite)");
        }
        fs::remove(partial, ec);
        if (ec) refuse(ErrorCode::Io, "cannot remove stale " + quoted(partial) + ": " + ec.message());
    }
    if (finalPath.has_parent_path()) {
        fs::create_directories(finalPath.parent_path(), ec);
        if (ec) refuse(ErrorCode::Io, "cannot create folder " + quoted(finalPath.parent_path()) + ": " + ec.message());
    }

    // Fill what the caller left open so every file names its writer.
    Provenance prov = provenance;
    if (prov.toolName.empty()) prov.toolName = kToolName;
    if (prov.toolVersion.empty()) prov.toolVersion = kToolVersion;
    if (prov.host.empty()) prov.host = hostName();
    if (prov.os.empty()) prov.os = osDescription();
    if (prov.gpu.empty()) prov.gpu = "none";
    if (prov.settingsJson.empty()) prov.settingsJson = "{}";
    if (prov.createdUtc.empty()) prov.createdUtc = utcNowIso();
    prov.updatedUtc = utcNowIso();
    prov.finishedUtc.clear();

    auto st = std::make_unique<RunFileState>();
    st->path = partial;
    st->finalPath = finalPath;
    st->writable = true;
    st->overwrite = options.overwrite;

    // The file is born under a hidden name and becomes NAME.partial only once
    // its header is on disk, so a kill during creation never leaves a
    // .partial that does not open (only the hidden file, which the next
    // create of this run removes and the workspace never lists).
    const fs::path creating = creatingPathFor(finalPath);
    fs::remove(creating, ec);

    Hdf5Lock lock;
    // Room for the headers and provenance; the reserve applies to data writes,
    // so callers can lower it with setMinFreeSpace() first.
    checkFreeSpace(*st, 64 * 1024, "/", false);
    H5Handle fapl = fileAccessPlist(true);
    st->file = h5File(H5Fcreate(creating.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl.get()));
    if (!st->file) {
        // EXCL and the removal above mean any file there now is our own failed attempt.
        const std::string detail = hdf5ErrorDetail();
        fs::remove(creating, ec);
        st->fail(looksLikeDiskFull(detail) ? ErrorCode::DiskFull : ErrorCode::Io, {},
                 withDetail("cannot create " + quoted(partial), detail));
    }
    st->minFree = 0;  // the header check above covers the initial writes
    try {
        writeStringAttr(*st, "/", "sdw_format", kFormatMagic);
        writeIntAttr(*st, "/", "sdw_schema_version", kSchemaVersion);
        writeStringAttr(*st, "/", "run_kind", kind);
        writeStringAttr(*st, "/", "run_id", makeRunId());
        writeStringAttr(*st, "/", "status", kStatusIncomplete);
        writeIntAttr(*st, "/", "checkpoint", 0);
        writeProvenance(*st, prov);
        flushFile(*st);
        renameRun(creating, partial, false);
        journalFileRenamed(st->file.get(), partial);
    } catch (...) {
        // A half-initialised file is not a run: remove it.
        st->file.reset();
        fs::remove(creating, ec);
        throw;
    }
    st->minFree = kDefaultMinFreeSpace;
    st->lastCheckpoint = std::chrono::steady_clock::now();
    return RunWriter(std::move(st));
}

RunWriter RunWriter::openForResume(const fs::path& path) {
    const bool givenPartial = isPartialPath(path);
    fs::path finalPath = path;
    if (givenPartial) finalPath.replace_filename(path.filename().string().substr(
                          0, path.filename().string().size() - kPartialSuffix.size()));
    const fs::path partial = partialPathFor(finalPath);

    std::error_code ec;
    const bool haveFinal = fs::exists(finalPath, ec);
    const bool havePartial = fs::exists(partial, ec);
    if (!haveFinal && !havePartial) {
        throw RunStoreError(ErrorCode::NotFound, path, {}, "run file not found: " + quoted(path));
    }
    if (!givenPartial && haveFinal && havePartial) {
        throw RunStoreError(ErrorCode::Exists, finalPath, {},
                            "both " + quoted(finalPath) + " and " + quoted(partial) + " exist; resume one explicitly");
    }

    // A kept-incomplete run goes back to .partial while it is being written,
    // so a crash now cannot leave a half-updated file under the final name.
    bool renamed = false;
    if (!havePartial) {
        {
            // Validate before renaming someone's file.
            RunSummary s = inspectRun(finalPath);
            if (s.complete()) {
                throw RunStoreError(ErrorCode::InvalidArgument, finalPath, {},
                                    quoted(finalPath) + " is complete and cannot be resumed");
            }
        }
        renameRun(finalPath, partial, false);
        renamed = true;
    }

    auto st = std::make_unique<RunFileState>();
    st->path = partial;
    st->finalPath = finalPath;
    try {
        Hdf5Lock lock;
        openValidated(*st, true);
        if (readStringAttr(*st, "/", "status") != kStatusIncomplete) {
            st->file.reset();
            st->fail(ErrorCode::InvalidArgument, {}, quoted(partial) + " is complete and cannot be resumed");
        }
        writeStringAttr(*st, "/provenance", "updated_utc", utcNowIso());
        flushFile(*st);
        st->lastCheckpoint = std::chrono::steady_clock::now();
    } catch (...) {
        {
            Hdf5Lock lock;
            st->file.reset();
        }
        if (renamed) fs::rename(partial, finalPath, ec);
        throw;
    }
    return RunWriter(std::move(st));
}

const fs::path& RunWriter::finalPath() const {
    static const fs::path kNone;
    return state_ ? state_->finalPath : kNone;
}

void RunWriter::createGroup(std::string_view groupPath) {
    Hdf5Lock lock;
    RunFileState& st = state();
    requireWritable(st);
    ensureGroup(st, normalizeObjectPath(groupPath));
    afterWrite(st);
}

void RunWriter::writeRaw(std::string_view datasetPath, ElementType type, const void* data, std::size_t count,
                         std::vector<hsize_t> shape, const DatasetOptions& options) {
    Hdf5Lock lock;
    RunFileState& st = state();
    requireWritable(st);
    const std::string p = normalizeObjectPath(datasetPath);
    const std::optional<std::uint64_t> n = product(shape);
    if (!n || *n != count) {
        st.fail(ErrorCode::InvalidArgument, p,
                "shape " + shapeString(shape) + " does not match " + std::to_string(count) + " elements for " +
                    st.where(p));
    }
    checkFreeSpace(st, count * elementSize(type), p);
    H5Handle ds = createDataset(st, p, nativeType(type), shape, elementSize(type), options);
    if (count > 0 && H5Dwrite(ds.get(), nativeType(type), H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) {
        st.failH5(ErrorCode::Io, p, "cannot write dataset " + st.where(p));
    }
    closeWritten(st, ds, p);
    afterWrite(st);
}

hsize_t RunWriter::appendRaw(std::string_view datasetPath, ElementType type, const void* data, std::size_t count) {
    Hdf5Lock lock;
    RunFileState& st = state();
    requireWritable(st);
    const std::string p = normalizeObjectPath(datasetPath);
    H5Handle ds = openDataset(st, p);
    H5Handle ftype = h5Type(H5Dget_type(ds.get()));
    if (!ftype) st.failH5(ErrorCode::Corrupt, p, "cannot read the type of " + st.where(p));
    if (!sameElementType(ftype.get(), type)) {
        st.fail(ErrorCode::TypeMismatch, p,
                "cannot append " + std::string(toString(type)) + " to " + st.where(p) + " holding " +
                    describeType(ftype.get()));
    }
    if (count == 0) return appendableDims(st, ds.get(), p, 0).at(0);
    checkFreeSpace(st, count * elementSize(type), p);
    AppendTarget t = extendRows(st, ds.get(), p, count);
    const bool written =
        H5Dwrite(ds.get(), nativeType(type), t.memSpace.get(), t.fileSpace.get(), H5P_DEFAULT, data) >= 0;
    finishAppend(st, ds, p, t, written);
    afterWrite(st);
    return t.totalRows;
}

void RunWriter::writeStrings(std::string_view datasetPath, std::span<const std::string> values,
                             const DatasetOptions& options) {
    Hdf5Lock lock;
    RunFileState& st = state();
    requireWritable(st);
    writeStringDataset(st, normalizeObjectPath(datasetPath), values, options);
    afterWrite(st);
}

hsize_t RunWriter::appendStrings(std::string_view datasetPath, std::span<const std::string> values) {
    Hdf5Lock lock;
    RunFileState& st = state();
    requireWritable(st);
    const std::string p = normalizeObjectPath(datasetPath);
    H5Handle ds = openDataset(st, p);
    H5Handle ftype = h5Type(H5Dget_type(ds.get()));
    if (!ftype || H5Tget_class(ftype.get()) != H5T_STRING || H5Tis_variable_str(ftype.get()) <= 0) {
        st.fail(ErrorCode::TypeMismatch, p, "cannot append strings to " + st.where(p) + ": not a string dataset");
    }
    if (values.empty()) return appendableDims(st, ds.get(), p, 0).at(0);
    std::vector<const char*> ptrs;
    std::uint64_t bytes = 0;
    for (const std::string& v : values) {
        ptrs.push_back(v.c_str());
        bytes += v.size() + 16;
    }
    checkFreeSpace(st, bytes, p);
    AppendTarget t = extendRows(st, ds.get(), p, values.size());
    H5Handle memType = vlenUtf8Type();
    const bool written =
        H5Dwrite(ds.get(), memType.get(), t.memSpace.get(), t.fileSpace.get(), H5P_DEFAULT, ptrs.data()) >= 0;
    finishAppend(st, ds, p, t, written);
    afterWrite(st);
    return t.totalRows;
}

namespace {

void refuseReservedAttr(const RunFileState& st, const std::string& objPath, std::string_view name) {
    if (objPath != "/") return;
    const bool reserved = std::find(std::begin(kReservedRootAttrs), std::end(kReservedRootAttrs), name) !=
                          std::end(kReservedRootAttrs);
    if (reserved || name.substr(0, 4) == "sdw_") {
        st.fail(ErrorCode::InvalidArgument, objPath,
                "root attribute '" + std::string(name) + "' is reserved by the run format");
    }
}

}  // namespace

void RunWriter::setStringAttribute(std::string_view objectPath, std::string_view name, std::string_view value) {
    Hdf5Lock lock;
    RunFileState& st = state();
    const std::string p = normalizeObjectPath(objectPath);
    refuseReservedAttr(st, p, name);
    writeStringAttr(st, p, name, value);
    afterWrite(st);
}

void RunWriter::setIntAttribute(std::string_view objectPath, std::string_view name, std::int64_t value) {
    Hdf5Lock lock;
    RunFileState& st = state();
    const std::string p = normalizeObjectPath(objectPath);
    refuseReservedAttr(st, p, name);
    writeIntAttr(st, p, name, value);
    afterWrite(st);
}

void RunWriter::setDoubleAttribute(std::string_view objectPath, std::string_view name, double value) {
    Hdf5Lock lock;
    RunFileState& st = state();
    const std::string p = normalizeObjectPath(objectPath);
    refuseReservedAttr(st, p, name);
    writeAttribute(st, p, name, H5T_NATIVE_DOUBLE, H5T_NATIVE_DOUBLE, &value);
    afterWrite(st);
}

void RunWriter::remove(std::string_view objectPath) {
    Hdf5Lock lock;
    RunFileState& st = state();
    requireWritable(st);
    const std::string p = normalizeObjectPath(objectPath);
    if (p == "/" || p == "/provenance" || p.rfind("/provenance/", 0) == 0) {
        st.fail(ErrorCode::InvalidArgument, p, "cannot remove " + st.where(p) + ": it is part of the run format");
    }
    if (kindOf(st, p) == ObjectKind::None) st.fail(ErrorCode::Missing, p, "no object " + st.where(p));
    if (H5Ldelete(st.file.get(), p.c_str(), H5P_DEFAULT) < 0) {
        st.failH5(ErrorCode::Io, p, "cannot remove " + st.where(p));
    }
    afterWrite(st);
}

void RunWriter::checkpoint() {
    Hdf5Lock lock;
    checkpointLocked(state());
}

void RunWriter::setAutoCheckpoint(std::chrono::seconds interval) {
    Hdf5Lock lock;
    state().autoInterval = std::max(std::chrono::seconds(0), interval);
}

void RunWriter::setMinFreeSpace(std::uint64_t bytes) {
    Hdf5Lock lock;
    state().minFree = bytes;
}

namespace {

// Final flush and close; the file stays at st.path.
void closeForRename(RunFileState& st) {
    checkpointLocked(st);
    if (!st.file.reset()) st.failH5(ErrorCode::Io, {}, "cannot close " + quoted(st.path));
}

// Whether the final name may be replaced; refuses when it exists and may not.
bool checkFinalName(RunFileState& st, bool overwrite, const char* action) {
    requireWritable(st);
    const bool replace = overwrite || st.overwrite;
    std::error_code ec;
    if (!replace && fs::exists(st.finalPath, ec))
        st.fail(ErrorCode::Exists, {}, std::string("cannot ") + action + ": run file already exists: " + quoted(st.finalPath));
    return replace;
}

}  // namespace

fs::path RunWriter::commit(bool overwrite) {
    Hdf5Lock lock;
    RunFileState& st = state();
    const bool replace = checkFinalName(st, overwrite, "commit");
    writeStringAttr(st, "/", "status", kStatusComplete);
    writeStringAttr(st, "/provenance", "finished_utc", utcNowIso());
    try {
        closeForRename(st);
    } catch (const RunStoreError&) {
        // Still open (e.g. the disk filled up during the flush): do not leave
        // a file that claims to be complete when it may not be.
        if (st.file) {
            try {
                writeStringAttr(st, "/", "status", kStatusIncomplete);
                writeStringAttr(st, "/provenance", "finished_utc", "");
            } catch (const RunStoreError&) {
            }
        }
        throw;
    }
    try {
        renameRun(st.path, st.finalPath, replace);
    } catch (const RunStoreError& e) {
        throw RunStoreError(e.code(), st.path, {},
                            std::string(e.what()) + "; the completed run remains at " + quoted(st.path));
    }
    st.path = st.finalPath;
    return st.finalPath;
}

fs::path RunWriter::keepIncomplete(bool overwrite) {
    Hdf5Lock lock;
    RunFileState& st = state();
    const bool replace = checkFinalName(st, overwrite, "keep run");
    closeForRename(st);
    renameRun(st.path, st.finalPath, replace);
    st.path = st.finalPath;
    return st.finalPath;
}

void RunWriter::discard() {
    Hdf5Lock lock;
    RunFileState& st = state();
    requireWritable(st);
    st.file.reset();  // a failed final flush does not matter, the file goes
    H5Eclear2(H5E_DEFAULT);
    std::error_code ec;
    fs::remove(st.path, ec);
    if (ec) st.fail(ErrorCode::Io, {}, "cannot delete " + quoted(st.path) + ": " + ec.message());
    fs::remove(journalPathFor(st.path), ec);  // only there when the close failed after its commit point
}

}  // namespace sdw::runstore
