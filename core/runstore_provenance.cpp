// The /provenance group of a run file: who wrote it, where, from which
// model files (docs/run-format.md).

#include "core/runstore_internal.h"

#include "core/json_limits.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace sdw::runstore::detail {

namespace {

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

}  // namespace

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
    // settings_json is handed to JSON readers (info, runs, the GUI, resume):
    // one nested or sized beyond the limits makes the file corrupt, so that
    // no reader ever builds or prints it.
    if (!p.settingsJson.empty()) {
        try {
            (void)parseJsonBounded(p.settingsJson, "/provenance@settings_json");
        } catch (const JsonInputError& e) {
            if (e.overLimit())
                st.fail(ErrorCode::Corrupt, "/provenance", "run file " + quoted(st.path) + ": " + e.what());
        }
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

}  // namespace sdw::runstore::detail
