// HDF5 side of the run store: element types and their HDF5 counterparts,
// object lookup, and reading shapes, strings and attributes.

#include "core/runstore_internal.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <system_error>

namespace sdw::runstore {
namespace fs = std::filesystem;

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

namespace detail {

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

bool endsWith(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// HDF5's sec2 driver reports the errno text of a failed write.
bool looksLikeDiskFull(const std::string& detail) {
    return detail.find("No space left") != std::string::npos ||
           detail.find("errno = 28") != std::string::npos ||
           detail.find("Disk quota exceeded") != std::string::npos;
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

namespace {

bool isFloat(ElementType t) { return t == ElementType::Float32 || t == ElementType::Float64; }
bool isSigned(ElementType t) { return t != ElementType::UInt32 && t != ElementType::UInt8; }

// Frees what H5Dread/H5Aread allocated for variable-length strings.

// Frees what H5Dread/H5Aread allocated for variable-length strings.
void reclaimVlen(hid_t memType, hid_t space, void* buf) {
#if H5_VERSION_GE(1, 12, 0)
    H5Treclaim(memType, space, H5P_DEFAULT, buf);
#else
    H5Dvlen_reclaim(memType, space, H5P_DEFAULT, buf);
#endif
}

}  // namespace

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

// ---------------------------------------------------------------------------
// RunFileState

RunFileState::~RunFileState() {
    if (!file) return;
    Hdf5Lock lock;
    file.reset();
}

void RunFileState::failH5(ErrorCode code, std::string_view object, const std::string& message) const {
    const std::string detail = hdf5ErrorDetail();
    if (looksLikeDiskFull(detail) || (code == ErrorCode::Io && volumeNearlyFull())) {
        code = ErrorCode::DiskFull;
        fail(code, object, withDetail("disk full: " + message, detail));
    }
    fail(code, object, withDetail(message, detail));
}

bool RunFileState::volumeNearlyFull() const {
    std::error_code ec;
    const fs::space_info info = fs::space(path.has_parent_path() ? path.parent_path() : fs::path("."), ec);
    return !ec && info.available < (std::uint64_t{1} << 20);
}

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
                                 std::vector<hsize_t>* maxDims) {
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

namespace {

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

}  // namespace

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

template std::int64_t readNumericAttr<std::int64_t>(const RunFileState&, const std::string&, std::string_view,
                                                    hid_t, bool);
template double readNumericAttr<double>(const RunFileState&, const std::string&, std::string_view, hid_t, bool);

}  // namespace detail
}  // namespace sdw::runstore
