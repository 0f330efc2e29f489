#pragma once
// Internals of the run store, shared by its implementation files:
//   runstore.cpp             opening and validation, the workspace listing, RunFile/RunReader
//   runstore_h5.cpp          HDF5 type helpers, object lookup, reading strings and attributes
//   runstore_writer.cpp      RunWriter: datasets, appends with their rollback, checkpoints, commit
//   runstore_provenance.cpp  the /provenance group
// Not for use outside core/runstore*.cpp. Every helper that takes a
// RunFileState expects Hdf5Lock to be held.

#include "core/runstore.h"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sdw::runstore::detail {

// ---- messages (runstore_h5.cpp) ----

std::string quoted(const std::filesystem::path& p);
bool endsWith(std::string_view s, std::string_view suffix);
// HDF5's sec2 driver reports the errno text of a failed write.
bool looksLikeDiskFull(const std::string& detail);
std::string withDetail(std::string message, const std::string& detail);
// The object path as shown in messages and passed to HDF5: always absolute.
std::string normalizeObjectPath(std::string_view p);

// ---- element types (runstore_h5.cpp) ----

hid_t nativeType(ElementType type);
std::size_t elementSize(ElementType type);
// "float32", "uint8", "string", ... for messages.
std::string describeType(hid_t type);
// Whether a stored type converts to `want` without losing values.
bool widensLosslessly(hid_t stored, ElementType want);
bool sameElementType(hid_t stored, ElementType want);
// Product of dims, or nullopt on overflow.
std::optional<std::uint64_t> product(const std::vector<hsize_t>& dims);
std::string shapeString(const std::vector<hsize_t>& dims);

// ---------------------------------------------------------------------------
// State shared by reader and writer

struct RunFileState {
    std::filesystem::path path;       // on disk now
    std::filesystem::path finalPath;  // writers: the committed name
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
    ~RunFileState();

    [[noreturn]] void fail(ErrorCode code, std::string_view object, const std::string& message) const {
        throw RunStoreError(code, path, std::string(object), message);
    }

    // For a failed HDF5 call: appends HDF5's reason, and turns an out of
    // space condition into DiskFull whatever `code` says.
    [[noreturn]] void failH5(ErrorCode code, std::string_view object, const std::string& message) const;

    // HDF5 does not always keep the errno of a failed write on its error
    // stack (chunk flushes drop it), so a write failure on a volume with
    // almost nothing left is taken to be the full disk.
    bool volumeNearlyFull() const;

    std::string where(std::string_view object) const {
        return "'" + std::string(object) + "' in " + quoted(path);
    }
};

// ---- object lookup and reading (runstore_h5.cpp) ----

ObjectKind kindOf(const RunFileState& st, const std::string& objPath);
H5Handle openObject(const RunFileState& st, const std::string& objPath);
H5Handle openDataset(const RunFileState& st, const std::string& objPath);
std::vector<hsize_t> datasetDims(const RunFileState& st, hid_t ds, const std::string& objPath,
                                 std::vector<hsize_t>* maxDims = nullptr);
// Reads every element of a string attribute or dataset, `id` being either.
std::vector<std::string> readStringValues(const RunFileState& st, hid_t id, bool isAttr,
                                          const std::string& what);
std::string readStringAttr(const RunFileState& st, const std::string& objPath, std::string_view name);
// Reads a one-element numeric attribute converted to `memType`
// (instantiated for std::int64_t and double).
template <typename T>
T readNumericAttr(const RunFileState& st, const std::string& objPath, std::string_view name, hid_t memType,
                  bool allowFloat);
extern template std::int64_t readNumericAttr<std::int64_t>(const RunFileState&, const std::string&,
                                                           std::string_view, hid_t, bool);
extern template double readNumericAttr<double>(const RunFileState&, const std::string&, std::string_view,
                                               hid_t, bool);

// ---- writing (runstore_writer.cpp) ----

// Closes a dataset that was just written. HDF5 writes cached chunks at
// close, so this is where a full disk or an I/O error shows up.
void closeWritten(const RunFileState& st, H5Handle& ds, const std::string& objPath);
// Fails with DiskFull unless `bytes` (plus the writer's reserve when
// `keepReserve`) fit on the volume.
void checkFreeSpace(const RunFileState& st, std::uint64_t bytes, std::string_view object,
                    bool keepReserve = true);
void ensureGroup(const RunFileState& st, const std::string& groupPath);
H5Handle createDataset(const RunFileState& st, const std::string& objPath, hid_t fileType,
                       const std::vector<hsize_t>& shape, std::size_t elemBytes, const DatasetOptions& options);
void writeStringAttr(const RunFileState& st, const std::string& objPath, std::string_view name,
                     std::string_view value);

// ---- opening (runstore.cpp) ----

H5Handle fileAccessPlist(bool writable = false);  // writable: no metadata written between flushes
// Opens `st.path` and checks that it is one of our run files of a schema this
// build understands. Leaves st.file open and st.checkpoint loaded.
void openValidated(RunFileState& st, bool writable);

// ---- provenance (runstore_provenance.cpp) ----

void writeProvenance(const RunFileState& st, Provenance p);
Provenance readProvenance(const RunFileState& st);

}  // namespace sdw::runstore::detail
