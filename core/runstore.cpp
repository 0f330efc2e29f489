#include "core/runstore.h"

#include "core/version.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <system_error>

#if defined(__linux__)
#include <fcntl.h>  // AT_FDCWD
#endif

namespace sdw::runstore {
namespace fs = std::filesystem;

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

const char* toString(ElementType type) {
    switch (type) {
        case ElementType::Float32: return "float32";
        case ElementType::Float64: return "float64";
        case ElementType::Int64: return "int64";
        case ElementType::Int32: return "int32";
        case ElementType::UInt32: return "uint32";
        case ElementType::UInt8: return "uint8";
    }
    return "unknown";
}

RunStoreError::RunStoreError(ErrorCode code, fs::path file, std::string object, const std::string& message)
    : std::runtime_error(message), code_(code), file_(std::move(file)), object_(std::move(object)) {}

namespace {

constexpr int kMaxRank = 8;
constexpr std::uint64_t kAutoChunkBytes = std::uint64_t{128} << 10;

// Root attributes owned by the schema; generic attribute writers refuse them.
constexpr std::string_view kReservedRootAttrs[] = {"sdw_format", "sdw_schema_version", "run_kind",
                                                   "run_id", "status", "checkpoint"};

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

std::string humanBytes(std::uint64_t bytes) {
    static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = static_cast<double>(bytes);
    int unit = 0;
    while (v >= 1024.0 && unit < 6) {
        v /= 1024.0;
        ++unit;
    }
    char buf[32];
    if (unit == 0) {
        std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
    } else {
        std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[unit]);
    }
    return buf;
}

bool endsWith(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// HDF5's sec2 driver reports the errno text of a failed write.
bool looksLikeDiskFull(const std::string& detail) {
    return detail.find("No space left") != std::string::npos ||
           detail.find("errno = 28") != std::string::npos ||
           detail.find("Disk quota exceeded") != std::string::npos;
}

bool looksLikeLocked(std::string detail) {
    std::transform(detail.begin(), detail.end(), detail.begin(), [](unsigned char c) { return std::tolower(c); });
    return detail.find("unable to lock file") != std::string::npos ||
           detail.find("unable to lock the file") != std::string::npos;
}

std::string withDetail(std::string message, const std::string& detail) {
    if (!detail.empty()) message += " (HDF5: " + detail + ")";
    return message;
}

// The object path as shown in messages and passed to HDF5: always absolute.
std::string normalizeObjectPath(std::string_view p) {
    std::string out;
    if (p.empty() || p.front() != '/') out.push_back('/');
    out.append(p);
    while (out.size() > 1 && out.back() == '/') out.pop_back();
    return out;
}

hid_t nativeType(ElementType type) {
    switch (type) {
        case ElementType::Float32: return H5T_NATIVE_FLOAT;
        case ElementType::Float64: return H5T_NATIVE_DOUBLE;
        case ElementType::Int64: return H5T_NATIVE_INT64;
        case ElementType::Int32: return H5T_NATIVE_INT32;
        case ElementType::UInt32: return H5T_NATIVE_UINT32;
        case ElementType::UInt8: return H5T_NATIVE_UINT8;
    }
    return H5T_NATIVE_UINT8;
}

std::size_t elementSize(ElementType type) {
    switch (type) {
        case ElementType::Float32: return 4;
        case ElementType::Float64: return 8;
        case ElementType::Int64: return 8;
        case ElementType::Int32: return 4;
        case ElementType::UInt32: return 4;
        case ElementType::UInt8: return 1;
    }
    return 1;
}

bool isFloat(ElementType t) { return t == ElementType::Float32 || t == ElementType::Float64; }
bool isSigned(ElementType t) { return t != ElementType::UInt32 && t != ElementType::UInt8; }

// "float32", "uint8", "string", ... for messages.
std::string describeType(hid_t type) {
    const H5T_class_t cls = H5Tget_class(type);
    const std::size_t size = H5Tget_size(type);
    switch (cls) {
        case H5T_INTEGER:
            return std::string(H5Tget_sign(type) == H5T_SGN_NONE ? "uint" : "int") + std::to_string(size * 8);
        case H5T_FLOAT: return "float" + std::to_string(size * 8);
        case H5T_STRING: return "string";
        case H5T_COMPOUND: return "compound";
        case H5T_ENUM: return "enum";
        case H5T_ARRAY: return "array";
        case H5T_VLEN: return "vlen";
        case H5T_OPAQUE: return "opaque";
        default: return "unsupported type";
    }
}

// Whether a stored type converts to `want` without losing values.
bool widensLosslessly(hid_t stored, ElementType want) {
    const H5T_class_t cls = H5Tget_class(stored);
    const std::size_t size = H5Tget_size(stored);
    if (isFloat(want)) return cls == H5T_FLOAT && size <= elementSize(want);
    if (cls != H5T_INTEGER) return false;
    const bool storedSigned = H5Tget_sign(stored) != H5T_SGN_NONE;
    if (storedSigned) return isSigned(want) && size <= elementSize(want);
    return isSigned(want) ? size < elementSize(want) : size <= elementSize(want);
}

bool sameElementType(hid_t stored, ElementType want) {
    const H5T_class_t cls = H5Tget_class(stored);
    if (cls != (isFloat(want) ? H5T_FLOAT : H5T_INTEGER)) return false;
    if (H5Tget_size(stored) != elementSize(want)) return false;
    return isFloat(want) || ((H5Tget_sign(stored) != H5T_SGN_NONE) == isSigned(want));
}

// Product of dims, or nullopt on overflow.
std::optional<std::uint64_t> product(const std::vector<hsize_t>& dims) {
    std::uint64_t n = 1;
    for (hsize_t d : dims) {
        if (d != 0 && n > std::numeric_limits<std::uint64_t>::max() / d) return std::nullopt;
        n *= d;
    }
    return n;
}

std::string shapeString(const std::vector<hsize_t>& dims) {
    std::string s = "{";
    for (std::size_t i = 0; i < dims.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(dims[i]);
    }
    return s + "}";
}

// Frees what H5Dread/H5Aread allocated for variable-length strings.
void reclaimVlen(hid_t memType, hid_t space, void* buf) {
#if H5_VERSION_GE(1, 12, 0)
    H5Treclaim(memType, space, H5P_DEFAULT, buf);
#else
    H5Dvlen_reclaim(memType, space, H5P_DEFAULT, buf);
#endif
}

htri_t isHdf5(const fs::path& p) {
#if H5_VERSION_GE(1, 12, 0)
    return H5Fis_accessible(p.c_str(), H5P_DEFAULT);
#else
    return H5Fis_hdf5(p.c_str());
#endif
}

}  // namespace

// ---------------------------------------------------------------------------
// State shared by reader and writer

namespace detail {

struct RunFileState {
    fs::path path;       // on disk now
    fs::path finalPath;  // writers: the committed name
    H5Handle file;
    bool writable = false;
    bool overwrite = false;
    std::int64_t checkpoint = 0;
    std::chrono::seconds autoInterval{0};
    std::chrono::steady_clock::time_point lastCheckpoint = std::chrono::steady_clock::now();
    std::uint64_t minFree = kDefaultMinFreeSpace;

    RunFileState() = default;
    RunFileState(const RunFileState&) = delete;
    RunFileState& operator=(const RunFileState&) = delete;
    ~RunFileState() {
        if (!file) return;
        Hdf5Lock lock;
        file.reset();
    }

    [[noreturn]] void fail(ErrorCode code, std::string_view object, const std::string& message) const {
        throw RunStoreError(code, path, std::string(object), message);
    }

    // For a failed HDF5 call: appends HDF5's reason, and turns an out of
    // space condition into DiskFull whatever `code` says.
    [[noreturn]] void failH5(ErrorCode code, std::string_view object, const std::string& message) const {
        const std::string detail = hdf5ErrorDetail();
        if (looksLikeDiskFull(detail) || (code == ErrorCode::Io && volumeNearlyFull())) {
            code = ErrorCode::DiskFull;
            fail(code, object, withDetail("disk full: " + message, detail));
        }
        fail(code, object, withDetail(message, detail));
    }

    // HDF5 does not always keep the errno of a failed write on its error
    // stack (chunk flushes drop it), so a write failure on a volume with
    // almost nothing left is taken to be the full disk.
    bool volumeNearlyFull() const {
        std::error_code ec;
        const fs::space_info info = fs::space(path.has_parent_path() ? path.parent_path() : fs::path("."), ec);
        return !ec && info.available < (std::uint64_t{1} << 20);
    }

    std::string where(std::string_view object) const {
        return "'" + std::string(object) + "' in " + quoted(path);
    }
};

}  // namespace detail

using detail::RunFileState;

namespace {

// ---- low-level helpers; all expect Hdf5Lock to be held ----

ObjectKind kindOf(const RunFileState& st, const std::string& objPath) {
    if (objPath == "/") return ObjectKind::Group;
    // H5Lexists fails rather than answering "no" when a parent is missing, so
    // walk the path one component at a time.
    std::size_t pos = 0;
    while (pos != std::string::npos) {
        pos = objPath.find('/', pos + 1);
        const std::string prefix = objPath.substr(0, pos);
        const htri_t link = H5Lexists(st.file.get(), prefix.c_str(), H5P_DEFAULT);
        if (link < 0) st.failH5(ErrorCode::Corrupt, objPath, "cannot look up " + st.where(prefix));
        if (link == 0) return ObjectKind::None;
        if (pos != std::string::npos) {
            // "/ds/x" below a dataset: nothing can be there.
            H5Handle parent = h5Object(H5Oopen(st.file.get(), prefix.c_str(), H5P_DEFAULT));
            if (!parent) {
                H5Eclear2(H5E_DEFAULT);
                return ObjectKind::None;  // dangling link
            }
            if (H5Iget_type(parent.get()) != H5I_GROUP) return ObjectKind::None;
        }
    }
    const htri_t resolves = H5Oexists_by_name(st.file.get(), objPath.c_str(), H5P_DEFAULT);
    if (resolves <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return ObjectKind::None;  // dangling soft link
    }
    H5Handle obj = h5Object(H5Oopen(st.file.get(), objPath.c_str(), H5P_DEFAULT));
    if (!obj) st.failH5(ErrorCode::Corrupt, objPath, "cannot open " + st.where(objPath));
    switch (H5Iget_type(obj.get())) {
        case H5I_GROUP: return ObjectKind::Group;
        case H5I_DATASET: return ObjectKind::Dataset;
        default: return ObjectKind::Other;
    }
}

H5Handle openObject(const RunFileState& st, const std::string& objPath) {
    if (kindOf(st, objPath) == ObjectKind::None) {
        st.fail(ErrorCode::Missing, objPath, "no object " + st.where(objPath));
    }
    H5Handle obj = h5Object(H5Oopen(st.file.get(), objPath.c_str(), H5P_DEFAULT));
    if (!obj) st.failH5(ErrorCode::Corrupt, objPath, "cannot open " + st.where(objPath));
    return obj;
}

H5Handle openDataset(const RunFileState& st, const std::string& objPath) {
    const ObjectKind kind = kindOf(st, objPath);
    if (kind == ObjectKind::None) st.fail(ErrorCode::Missing, objPath, "no dataset " + st.where(objPath));
    if (kind != ObjectKind::Dataset) {
        st.fail(ErrorCode::InvalidArgument, objPath, st.where(objPath) + " is not a dataset");
    }
    H5Handle ds = h5Dataset(H5Dopen2(st.file.get(), objPath.c_str(), H5P_DEFAULT));
    if (!ds) st.failH5(ErrorCode::Corrupt, objPath, "cannot open dataset " + st.where(objPath));
    return ds;
}

std::vector<hsize_t> datasetDims(const RunFileState& st, hid_t ds, const std::string& objPath,
                                 std::vector<hsize_t>* maxDims = nullptr) {
    H5Handle space = h5Space(H5Dget_space(ds));
    const int rank = space ? H5Sget_simple_extent_ndims(space.get()) : -1;
    if (rank < 0 || rank > H5S_MAX_RANK) {
        st.failH5(ErrorCode::Corrupt, objPath, "cannot read the shape of " + st.where(objPath));
    }
    std::vector<hsize_t> dims(static_cast<std::size_t>(rank)), maxd(static_cast<std::size_t>(rank));
    if (rank > 0 && H5Sget_simple_extent_dims(space.get(), dims.data(), maxd.data()) < 0) {
        st.failH5(ErrorCode::Corrupt, objPath, "cannot read the shape of " + st.where(objPath));
    }
    if (maxDims) *maxDims = std::move(maxd);
    return dims;
}

H5Handle scalarSpace() { return h5Space(H5Screate(H5S_SCALAR)); }

// Reads every element of a string attribute or dataset, `id` being either.
std::vector<std::string> readStringValues(const RunFileState& st, hid_t id, bool isAttr,
                                          const std::string& what) {
    H5Handle ftype = h5Type(isAttr ? H5Aget_type(id) : H5Dget_type(id));
    H5Handle space = h5Space(isAttr ? H5Aget_space(id) : H5Dget_space(id));
    if (!ftype || !space) st.failH5(ErrorCode::Corrupt, what, "cannot read " + st.where(what));
    if (H5Tget_class(ftype.get()) != H5T_STRING) {
        st.fail(ErrorCode::TypeMismatch, what,
                st.where(what) + " holds " + describeType(ftype.get()) + ", not strings");
    }
    const hssize_t npoints = H5Sget_simple_extent_npoints(space.get());
    if (npoints < 0) st.failH5(ErrorCode::Corrupt, what, "cannot read " + st.where(what));
    const auto n = static_cast<std::size_t>(npoints);
    std::vector<std::string> out;
    out.reserve(n);
    if (n == 0) return out;

    const auto readInto = [&](hid_t memType, void* buf) {
        const herr_t rc = isAttr ? H5Aread(id, memType, buf)
                                 : H5Dread(id, memType, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
        if (rc < 0) st.failH5(ErrorCode::Corrupt, what, "cannot read " + st.where(what));
    };

    const htri_t variable = H5Tis_variable_str(ftype.get());
    if (variable < 0) st.failH5(ErrorCode::Corrupt, what, "cannot read " + st.where(what));
    if (variable > 0) {
        H5Handle memType = vlenUtf8Type();
        H5Tset_cset(memType.get(), H5Tget_cset(ftype.get()));
        std::vector<char*> ptrs(n, nullptr);
        readInto(memType.get(), ptrs.data());
        for (char* p : ptrs) out.emplace_back(p ? p : "");
        reclaimVlen(memType.get(), space.get(), ptrs.data());
    } else {
        const std::size_t size = H5Tget_size(ftype.get());
        H5Handle memType = h5Type(H5Tcopy(ftype.get()));
        std::vector<char> buf(n * size + 1, '\0');
        readInto(memType.get(), buf.data());
        const bool spacePadded = H5Tget_strpad(ftype.get()) == H5T_STR_SPACEPAD;
        for (std::size_t i = 0; i < n; ++i) {
            const char* begin = buf.data() + i * size;
            std::size_t len = ::strnlen(begin, size);
            if (spacePadded) {
                while (len > 0 && begin[len - 1] == ' ') --len;
            }
            out.emplace_back(begin, len);
        }
    }
    return out;
}

H5Handle openAttribute(const RunFileState& st, const std::string& objPath, std::string_view name,
                       H5Handle& obj) {
    obj = openObject(st, objPath);
    const std::string n(name);
    const htri_t has = H5Aexists(obj.get(), n.c_str());
    if (has < 0) st.failH5(ErrorCode::Corrupt, objPath, "cannot read attributes of " + st.where(objPath));
    if (has == 0) {
        st.fail(ErrorCode::Missing, objPath, "no attribute '" + n + "' on " + st.where(objPath));
    }
    H5Handle attr = h5Attr(H5Aopen(obj.get(), n.c_str(), H5P_DEFAULT));
    if (!attr) st.failH5(ErrorCode::Corrupt, objPath, "cannot open attribute '" + n + "' on " + st.where(objPath));
    return attr;
}

std::string readStringAttr(const RunFileState& st, const std::string& objPath, std::string_view name) {
    H5Handle obj;
    H5Handle attr = openAttribute(st, objPath, name, obj);
    const std::string what = objPath + (objPath == "/" ? "" : "/") + "@" + std::string(name);
    std::vector<std::string> values = readStringValues(st, attr.get(), true, what);
    if (values.size() != 1) {
        st.fail(ErrorCode::TypeMismatch, objPath,
                "attribute '" + std::string(name) + "' on " + st.where(objPath) + " is not a single string");
    }
    return std::move(values.front());
}

// Reads a one-element numeric attribute converted to `memType`.
template <typename T>
T readNumericAttr(const RunFileState& st, const std::string& objPath, std::string_view name, hid_t memType,
                  bool allowFloat) {
    H5Handle obj;
    H5Handle attr = openAttribute(st, objPath, name, obj);
    H5Handle ftype = h5Type(H5Aget_type(attr.get()));
    H5Handle space = h5Space(H5Aget_space(attr.get()));
    if (!ftype || !space) st.failH5(ErrorCode::Corrupt, objPath, "cannot read attribute '" + std::string(name) + "'");
    const H5T_class_t cls = H5Tget_class(ftype.get());
    const bool ok = cls == H5T_INTEGER || (allowFloat && cls == H5T_FLOAT);
    if (!ok || H5Sget_simple_extent_npoints(space.get()) != 1) {
        st.fail(ErrorCode::TypeMismatch, objPath,
                "attribute '" + std::string(name) + "' on " + st.where(objPath) + " holds " +
                    describeType(ftype.get()) + ", not a single " + (allowFloat ? "number" : "integer"));
    }
    T value{};
    if (H5Aread(attr.get(), memType, &value) < 0) {
        st.failH5(ErrorCode::Corrupt, objPath, "cannot read attribute '" + std::string(name) + "' on " + st.where(objPath));
    }
    return value;
}

// ---- writing helpers ----

void requireWritable(const RunFileState& st) {
    if (!st.writable) st.fail(ErrorCode::InvalidArgument, {}, quoted(st.path) + " is open read-only");
}

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
                    bool keepReserve = true) {
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

H5Handle intermediateGroupsLcpl() {
    H5Handle lcpl = h5Plist(H5Pcreate(H5P_LINK_CREATE));
    if (lcpl) H5Pset_create_intermediate_group(lcpl.get(), 1);
    return lcpl;
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

// A 1-D fixed-length string dataset as wide as its longest value; used for
// tables that inspectRun() reads, for the same reason as writeStringAttr().
void writeFixedStringDataset(const RunFileState& st, const std::string& objPath,
                             const std::vector<std::string>& values) {
    std::size_t width = 1;
    for (const std::string& v : values) width = std::max(width, v.size());
    std::vector<char> buf(values.size() * width, '\0');  // [n][width], null-padded
    for (std::size_t i = 0; i < values.size(); ++i) std::copy(values[i].begin(), values[i].end(), buf.begin() + std::ptrdiff_t(i * width));
    checkFreeSpace(st, buf.size(), objPath);
    H5Handle type = fixedUtf8Type(width);
    H5Handle ds = createDataset(st, objPath, type.get(), {values.size()}, width, {});
    if (!values.empty() && H5Dwrite(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()) < 0) {
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

// ---- provenance ----

constexpr const char* kProvenanceAttrs[] = {"tool_name", "tool_version", "host", "os", "gpu", "model_id",
                                            "settings_json", "created_utc", "updated_utc", "finished_utc"};

std::string* provenanceField(Provenance& p, std::string_view name) {
    if (name == "tool_name") return &p.toolName;
    if (name == "tool_version") return &p.toolVersion;
    if (name == "host") return &p.host;
    if (name == "os") return &p.os;
    if (name == "gpu") return &p.gpu;
    if (name == "model_id") return &p.modelId;
    if (name == "settings_json") return &p.settingsJson;
    if (name == "created_utc") return &p.createdUtc;
    if (name == "updated_utc") return &p.updatedUtc;
    if (name == "finished_utc") return &p.finishedUtc;
    return nullptr;
}

void writeProvenance(const RunFileState& st, Provenance p) {
    ensureGroup(st, "/provenance");
    for (const char* name : kProvenanceAttrs) writeStringAttr(st, "/provenance", name, *provenanceField(p, name));

    std::vector<std::string> paths, hashes;
    std::vector<std::int64_t> bytes;
    for (const ModelFile& f : p.modelFiles) {
        paths.push_back(f.path);
        hashes.push_back(f.sha256);
        bytes.push_back(f.bytes);
    }
    writeFixedStringDataset(st, "/provenance/model_files/path", paths);
    writeFixedStringDataset(st, "/provenance/model_files/sha256", hashes);
    H5Handle ds = createDataset(st, "/provenance/model_files/bytes", H5T_NATIVE_INT64, {bytes.size()},
                                sizeof(std::int64_t), {});
    if (!bytes.empty() &&
        H5Dwrite(ds.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data()) < 0) {
        st.failH5(ErrorCode::Io, "/provenance/model_files/bytes", "cannot write provenance to " + quoted(st.path));
    }
    closeWritten(st, ds, "/provenance/model_files/bytes");
}

Provenance readProvenance(const RunFileState& st) {
    if (kindOf(st, "/provenance") != ObjectKind::Group) {
        st.fail(ErrorCode::Corrupt, "/provenance", "run file " + quoted(st.path) + " has no /provenance group");
    }
    Provenance p;
    p.gpu.clear();
    p.settingsJson.clear();
    H5Handle group = openObject(st, "/provenance");
    for (const char* name : kProvenanceAttrs) {
        // Tolerate a missing attribute: an empty field is more useful to a
        // reader than refusing the whole run.
        const htri_t has = H5Aexists(group.get(), name);
        if (has < 0) st.failH5(ErrorCode::Corrupt, "/provenance", "cannot read provenance of " + quoted(st.path));
        if (has > 0) *provenanceField(p, name) = readStringAttr(st, "/provenance", name);
    }

    if (kindOf(st, "/provenance/model_files") == ObjectKind::None) return p;
    H5Handle pathDs = openDataset(st, "/provenance/model_files/path");
    H5Handle hashDs = openDataset(st, "/provenance/model_files/sha256");
    H5Handle bytesDs = openDataset(st, "/provenance/model_files/bytes");
    const std::vector<std::string> paths =
        readStringValues(st, pathDs.get(), false, "/provenance/model_files/path");
    const std::vector<std::string> hashes =
        readStringValues(st, hashDs.get(), false, "/provenance/model_files/sha256");
    std::vector<hsize_t> dims = datasetDims(st, bytesDs.get(), "/provenance/model_files/bytes");
    if (dims.size() != 1 || dims[0] != paths.size() || hashes.size() != paths.size()) {
        st.fail(ErrorCode::Corrupt, "/provenance/model_files",
                "model file table in " + quoted(st.path) + " has columns of different lengths");
    }
    std::vector<std::int64_t> bytes(paths.size());
    if (!bytes.empty() &&
        H5Dread(bytesDs.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data()) < 0) {
        st.failH5(ErrorCode::Corrupt, "/provenance/model_files/bytes", "cannot read " +
                                                                            st.where("/provenance/model_files/bytes"));
    }
    for (std::size_t i = 0; i < paths.size(); ++i) p.modelFiles.push_back({paths[i], hashes[i], bytes[i]});
    return p;
}

// ---- opening and validation ----

H5Handle fileAccessPlist() {
    H5Handle fapl = h5Plist(H5Pcreate(H5P_FILE_ACCESS));
    // The 1.8 format: checksummed metadata (truncation and damage are
    // detected), readable by every h5py, and no "file open for write" flag
    // that a crashed writer would leave set (1.10 format only).
    if (fapl) H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_V18);
    return fapl;
}

// Opens `path` and checks that it is one of our run files of a schema this
// build understands. Leaves st.file open and st.checkpoint loaded.
void openValidated(RunFileState& st, bool writable) {
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

    const htri_t hdf5 = isHdf5(p);
    if (hdf5 < 0) st.failH5(ErrorCode::Io, {}, "cannot read " + quoted(p));
    if (hdf5 == 0) st.fail(ErrorCode::NotHdf5, {}, quoted(p) + " is not an HDF5 file");

    H5Handle fapl = fileAccessPlist();
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

// ---------------------------------------------------------------------------
// Free functions

fs::path partialPathFor(const fs::path& finalPath) {
    fs::path p = finalPath;
    p += std::string(kPartialSuffix);
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
    if (!provenance.settingsJson.empty() && !nlohmann::json::accept(provenance.settingsJson)) {
        refuse(ErrorCode::InvalidArgument, "provenance settings_json is not valid JSON");
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

    Hdf5Lock lock;
    // Room for the headers and provenance; the reserve applies to data writes,
    // so callers can lower it with setMinFreeSpace() first.
    checkFreeSpace(*st, 64 * 1024, "/", false);
    H5Handle fapl = fileAccessPlist();
    st->file = h5File(H5Fcreate(partial.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl.get()));
    if (!st->file) {
        // EXCL and the check above mean any file there now is our own failed attempt.
        const std::string detail = hdf5ErrorDetail();
        fs::remove(partial, ec);
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
    } catch (...) {
        // A half-initialised file is not a run: remove it.
        st->file.reset();
        fs::remove(partial, ec);
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

}  // namespace

fs::path RunWriter::commit(bool overwrite) {
    Hdf5Lock lock;
    RunFileState& st = state();
    requireWritable(st);
    const bool replace = overwrite || st.overwrite;
    std::error_code ec;
    if (!replace && fs::exists(st.finalPath, ec)) {
        st.fail(ErrorCode::Exists, {}, "cannot commit: run file already exists: " + quoted(st.finalPath));
    }
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
    requireWritable(st);
    const bool replace = overwrite || st.overwrite;
    std::error_code ec;
    if (!replace && fs::exists(st.finalPath, ec)) {
        st.fail(ErrorCode::Exists, {}, "cannot keep run: file already exists: " + quoted(st.finalPath));
    }
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
}

}  // namespace sdw::runstore
