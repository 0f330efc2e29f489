#pragma once
// HDF5 run store, schema v1: one `*.sdw.h5` file per run in a workspace
// folder. The file layout, write protocol and validation rules are described
// in docs/run-format.md; this header is the C++ side of that contract.
//
// Threading: HDF5 is not thread-safe. Every call below takes the process-wide
// hdf5Mutex() (core/h5file.h), so different runs may be used from different
// threads, but each RunWriter/RunReader object must be used from one thread at
// a time. Code outside this module that calls HDF5 directly must hold
// Hdf5Lock as well.

#include "core/h5file.h"
#include "core/provenance.h"

#include <chrono>
#include <concepts>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace sdw::runstore {

inline constexpr int kSchemaVersion = 1;
inline constexpr std::string_view kFormatMagic = "sdw-run";   // root attribute sdw_format
inline constexpr std::string_view kRunSuffix = ".sdw.h5";
inline constexpr std::string_view kPartialSuffix = ".partial";
// A run file being created: ".NAME.sdw.h5.creating" next to NAME.sdw.h5,
// renamed to NAME.sdw.h5.partial once its header is written.
inline constexpr std::string_view kCreatingSuffix = ".creating";
inline constexpr std::string_view kStatusIncomplete = "incomplete";
inline constexpr std::string_view kStatusComplete = "complete";
// Free space RunWriter keeps on the volume by default (see setMinFreeSpace).
inline constexpr std::uint64_t kDefaultMinFreeSpace = std::uint64_t{64} << 20;

// Top-level groups that later schema additions own; writers of other data
// should not use these names for anything else.
inline constexpr std::string_view kReservedGroups[] = {"/provenance", "/calibration", "/analysis",
                                                      "/pruning", "/bench"};

// ---------------------------------------------------------------------------
// Errors

enum class ErrorCode {
    NotFound,         // the file (or workspace folder) does not exist
    NotHdf5,          // empty, random bytes, or some other format
    Corrupt,          // HDF5 signature present but the file cannot be read: truncated or damaged
    Foreign,          // valid HDF5 without our sdw_format magic
    NewerSchema,      // sdw_schema_version > kSchemaVersion
    Io,               // OS-level failure: permissions, rename failed, read/write error
    Locked,           // another process has the file open for writing (e.g. a run in progress)
    DiskFull,         // not enough free space for a write
    Exists,           // refusing to overwrite a run file or dataset
    Missing,          // the object (group, dataset, attribute) is not in the file
    TypeMismatch,     // stored element type cannot be read losslessly as the requested one
    InvalidArgument,  // caller error: bad shape, bad name, writer already closed
};

const char* toString(ErrorCode code);

class RunStoreError : public std::runtime_error {
public:
    RunStoreError(ErrorCode code, std::filesystem::path file, std::string object,
                  const std::string& message);

    ErrorCode code() const noexcept { return code_; }
    // The run file concerned (may be empty for errors that concern no file).
    const std::filesystem::path& file() const noexcept { return file_; }
    // The HDF5 object path concerned ("/calibration/x"), empty for file-level errors.
    const std::string& object() const noexcept { return object_; }

private:
    ErrorCode code_;
    std::filesystem::path file_;
    std::string object_;
};

// ---------------------------------------------------------------------------
// Element types of numeric datasets

template <typename T>
concept Element = std::same_as<T, float> || std::same_as<T, double> ||
                  std::same_as<T, std::int64_t> || std::same_as<T, std::int32_t> ||
                  std::same_as<T, std::uint32_t> || std::same_as<T, std::uint8_t>;

enum class ElementType : std::uint8_t { Float32, Float64, Int64, Int32, UInt32, UInt8 };

template <Element T>
constexpr ElementType elementTypeOf() {
    if constexpr (std::same_as<T, float>) return ElementType::Float32;
    else if constexpr (std::same_as<T, double>) return ElementType::Float64;
    else if constexpr (std::same_as<T, std::int64_t>) return ElementType::Int64;
    else if constexpr (std::same_as<T, std::int32_t>) return ElementType::Int32;
    else if constexpr (std::same_as<T, std::uint32_t>) return ElementType::UInt32;
    else return ElementType::UInt8;
}

const char* toString(ElementType type);

// A dense row-major array read from a run. shape {} is a scalar (one element).
template <Element T>
struct Array {
    std::vector<T> data;
    std::vector<hsize_t> shape;

    std::size_t rank() const { return shape.size(); }
    hsize_t rows() const { return shape.empty() ? 1 : shape[0]; }
    // Elements per row: product of all but the first dimension.
    hsize_t cols() const {
        hsize_t c = 1;
        for (std::size_t i = 1; i < shape.size(); ++i) c *= shape[i];
        return c;
    }
    const T& operator()(hsize_t row, hsize_t col) const { return data[row * cols() + col]; }
};

struct DatasetOptions {
    // First dimension unlimited so append() can add rows later.
    bool extendible = false;
    // Chunk shape (same rank as the data). Empty: contiguous storage, or an
    // automatic chunk of about 128 KiB when extendible or compressed.
    std::vector<hsize_t> chunk;
    // gzip level 1-9 (h5py reads it without plugins); 0 = uncompressed.
    int deflate = 0;

    // Named shorthands; GCC's -Wmissing-field-initializers flags partial
    // designated initializers, so prefer these at call sites.
    static DatasetOptions appendable(int deflateLevel = 0) { return {true, {}, deflateLevel}; }
    static DatasetOptions chunked(std::vector<hsize_t> chunkShape, int deflateLevel = 0) {
        return {false, std::move(chunkShape), deflateLevel};
    }
    static DatasetOptions compressed(int deflateLevel = 4) { return {false, {}, deflateLevel}; }
};

enum class ObjectKind { None, Group, Dataset, Other };

// ---------------------------------------------------------------------------
// Summaries and workspace listing

struct RunSummary {
    std::filesystem::path path;
    std::string runId;
    std::string kind;
    std::string status;        // "incomplete" | "complete"
    int schemaVersion = 0;
    std::int64_t checkpoint = 0;
    Provenance provenance;

    bool complete() const { return status == kStatusComplete; }
};

struct WorkspaceEntry {
    std::filesystem::path path;
    std::optional<RunSummary> summary;  // empty when the file could not be read
    std::string error;                  // why not; empty when summary is set
    std::optional<ErrorCode> errorCode;
    bool partial = false;               // named *.sdw.h5.partial: being written, or left by a crash
};

// Opens, validates and reads the root attributes and provenance. Throws
// RunStoreError (NotFound, NotHdf5, Corrupt, Foreign, NewerSchema, Locked, Io).
RunSummary inspectRun(const std::filesystem::path& path);

// Every *.sdw.h5 and *.sdw.h5.partial directly in `dir`, sorted by file name.
// Unreadable files are listed with their error instead of throwing. Throws
// NotFound when `dir` is not a directory.
std::vector<WorkspaceEntry> listWorkspace(const std::filesystem::path& dir);

std::filesystem::path partialPathFor(const std::filesystem::path& finalPath);
std::filesystem::path creatingPathFor(const std::filesystem::path& finalPath);
bool isPartialPath(const std::filesystem::path& path);
// "20250131T120000Z-3f9a2c1b": sortable by creation time, unique enough.
std::string makeRunId();

// ---------------------------------------------------------------------------
// Reading (shared by RunReader and RunWriter)

namespace detail {
struct RunFileState;
}

class RunFile {
public:
    // The file on disk: the .partial while a writer has it open.
    const std::filesystem::path& path() const;
    bool isOpen() const;

    std::string runId() const;
    std::string kind() const;
    std::string status() const;
    int schemaVersion() const;
    std::int64_t checkpointCount() const;
    Provenance provenance() const;
    RunSummary summary() const;

    ObjectKind objectKind(std::string_view objectPath) const;
    bool exists(std::string_view objectPath) const { return objectKind(objectPath) != ObjectKind::None; }
    // Names of the direct children of a group, sorted.
    std::vector<std::string> listGroup(std::string_view groupPath) const;
    std::vector<hsize_t> shape(std::string_view datasetPath) const;

    // Reads a numeric dataset. Stored types that widen losslessly are
    // accepted (float32 as double, int32/uint32/uint8 as int64, ...), others
    // throw TypeMismatch.
    template <Element T>
    Array<T> read(std::string_view datasetPath) const {
        Array<T> out;
        readRaw(datasetPath, elementTypeOf<T>(), std::nullopt, out.shape,
                [&out](std::size_t n) -> void* { out.data.resize(n); return out.data.data(); });
        return out;
    }
    // Rows [first, first + count) along the first dimension.
    template <Element T>
    Array<T> readRows(std::string_view datasetPath, hsize_t first, hsize_t count) const {
        Array<T> out;
        readRaw(datasetPath, elementTypeOf<T>(), std::pair{first, count}, out.shape,
                [&out](std::size_t n) -> void* { out.data.resize(n); return out.data.data(); });
        return out;
    }
    Array<float> readFloat32(std::string_view p) const { return read<float>(p); }
    Array<double> readFloat64(std::string_view p) const { return read<double>(p); }
    Array<std::int64_t> readInt64(std::string_view p) const { return read<std::int64_t>(p); }
    Array<std::int32_t> readInt32(std::string_view p) const { return read<std::int32_t>(p); }
    Array<std::uint32_t> readUInt32(std::string_view p) const { return read<std::uint32_t>(p); }
    Array<std::uint8_t> readUInt8(std::string_view p) const { return read<std::uint8_t>(p); }

    // A string dataset (variable or fixed length), flattened in row-major order.
    std::vector<std::string> readStrings(std::string_view datasetPath) const;

    bool hasAttribute(std::string_view objectPath, std::string_view name) const;
    std::vector<std::string> attributeNames(std::string_view objectPath) const;
    std::string readStringAttribute(std::string_view objectPath, std::string_view name) const;
    std::int64_t readIntAttribute(std::string_view objectPath, std::string_view name) const;
    // Accepts float and integer attributes.
    double readDoubleAttribute(std::string_view objectPath, std::string_view name) const;

protected:
    RunFile();
    explicit RunFile(std::unique_ptr<detail::RunFileState> state);
    RunFile(RunFile&&) noexcept;
    RunFile& operator=(RunFile&&) noexcept;
    ~RunFile();  // closes the file; not virtual, never deleted through RunFile*

    detail::RunFileState& state() const;  // throws InvalidArgument when closed

    std::unique_ptr<detail::RunFileState> state_;

private:
    using Allocate = std::function<void*(std::size_t count)>;
    void readRaw(std::string_view datasetPath, ElementType type,
                 std::optional<std::pair<hsize_t, hsize_t>> rows, std::vector<hsize_t>& shape,
                 const Allocate& allocate) const;
};

// Read-only access to a validated run file.
class RunReader : public RunFile {
public:
    // Validates the file (see ErrorCode) and keeps it open read-only.
    static RunReader open(const std::filesystem::path& path);

    RunReader(RunReader&&) noexcept = default;
    RunReader& operator=(RunReader&&) noexcept = default;
    ~RunReader() = default;

private:
    using RunFile::RunFile;
};

// ---------------------------------------------------------------------------
// Writing

struct CreateOptions {
    // Replace an existing run file at the final name when committing, and a
    // stale .partial left by a crash when creating.
    bool overwrite = false;
};

// Writes one run. The file lives at `<final>.partial` until commit() or
// keepIncomplete() renames it; destroying the writer without either closes
// the file cleanly and leaves the .partial (status "incomplete"), which is
// also what a crash leaves behind as of the last checkpoint().
class RunWriter : public RunFile {
public:
    // Creates `finalPath + ".partial"` with root attributes (status
    // "incomplete", checkpoint 0) and provenance, and flushes it. Empty
    // provenance fields are filled from this process (tool, host, os,
    // created time). finalPath must end in ".sdw.h5"; kind must be a
    // non-empty lower-case identifier. Throws Exists when the final file or a
    // .partial already exists (unless options.overwrite).
    static RunWriter create(const std::filesystem::path& finalPath, const Provenance& provenance,
                            std::string kind, const CreateOptions& options = {});

    // Reopens an incomplete run read-write, given either its final name or
    // its .partial. A run kept under its final name is renamed back to
    // .partial while it is open. Throws InvalidArgument for a complete run.
    static RunWriter openForResume(const std::filesystem::path& path);

    RunWriter(RunWriter&&) noexcept = default;
    RunWriter& operator=(RunWriter&&) noexcept = default;
    ~RunWriter() = default;

    const std::filesystem::path& finalPath() const;

    // Creates a group and any missing parents; no-op when it exists.
    void createGroup(std::string_view groupPath);

    // Creates a numeric dataset of `shape` (rank >= 1, row-major) holding
    // `data` (product of shape elements); missing parent groups are created.
    // Throws Exists if the dataset exists.
    template <Element T>
    void writeDataset(std::string_view datasetPath, std::span<const T> data, std::vector<hsize_t> shape,
                      const DatasetOptions& options = {}) {
        writeRaw(datasetPath, elementTypeOf<T>(), data.data(), data.size(), std::move(shape), options);
    }
    template <Element T>
    void writeDataset(std::string_view datasetPath, const std::vector<T>& data, std::vector<hsize_t> shape,
                      const DatasetOptions& options = {}) {
        writeRaw(datasetPath, elementTypeOf<T>(), data.data(), data.size(), std::move(shape), options);
    }

    // Appends whole rows to an extendible dataset: data.size() must be a
    // multiple of the row size (product of all but the first dimension).
    // The element type must match the stored one. Returns the new row count.
    template <Element T>
    hsize_t append(std::string_view datasetPath, std::span<const T> data) {
        return appendRaw(datasetPath, elementTypeOf<T>(), data.data(), data.size());
    }
    template <Element T>
    hsize_t append(std::string_view datasetPath, const std::vector<T>& data) {
        return appendRaw(datasetPath, elementTypeOf<T>(), data.data(), data.size());
    }

    // 1-D variable-length UTF-8 string dataset.
    void writeStrings(std::string_view datasetPath, std::span<const std::string> values,
                      const DatasetOptions& options = {});
    hsize_t appendStrings(std::string_view datasetPath, std::span<const std::string> values);

    // Attributes on any group or dataset ("/" is the root). An existing
    // attribute of the same name is replaced. The root attributes that make
    // up the schema (sdw_*, run_kind, run_id, status, checkpoint) are
    // reserved and refused.
    void setStringAttribute(std::string_view objectPath, std::string_view name, std::string_view value);
    void setIntAttribute(std::string_view objectPath, std::string_view name, std::int64_t value);
    void setDoubleAttribute(std::string_view objectPath, std::string_view name, double value);

    // Unlinks a group or dataset. HDF5 reuses its space while the file stays
    // open (a dataset written next may land there); once closed, it is lost.
    void remove(std::string_view objectPath);

    // Increments `checkpoint`, updates provenance updated_utc and flushes
    // everything to disk.
    void checkpoint();
    // When non-zero, write calls run checkpoint() once this long has passed
    // since the last one.
    void setAutoCheckpoint(std::chrono::seconds interval);
    // Every data write first checks the volume's free space and fails with
    // DiskFull, before touching the file, when it would leave less than
    // `bytes` free (default kDefaultMinFreeSpace). The reserve is what lets
    // checkpoint()/commit() and HDF5's deferred writes still succeed: HDF5
    // 1.10 handles running out of space mid-write badly (it can lose cached
    // chunks), so the store stops before that happens.
    void setMinFreeSpace(std::uint64_t bytes);

    // status "complete", finished_utc, final flush, close, rename .partial ->
    // final. Throws Exists (writer still open) when the final file exists and
    // neither `overwrite` nor CreateOptions::overwrite allows replacing it.
    std::filesystem::path commit(bool overwrite = false);
    // Flush, close and rename to the final name keeping status "incomplete",
    // for a cancelled run that openForResume() can continue later.
    std::filesystem::path keepIncomplete(bool overwrite = false);
    // Close and delete the .partial.
    void discard();

private:
    using RunFile::RunFile;

    void writeRaw(std::string_view datasetPath, ElementType type, const void* data, std::size_t count,
                  std::vector<hsize_t> shape, const DatasetOptions& options);
    hsize_t appendRaw(std::string_view datasetPath, ElementType type, const void* data, std::size_t count);
};

}  // namespace sdw::runstore
