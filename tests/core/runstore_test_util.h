#pragma once
// Helpers shared by the run store suites (test_runstore, test_runstore_protocol).

#include "core/provenance.h"
#include "core/runstore.h"

#include <QTemporaryDir>
#include <QtTest/QtTest>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace runstore_test {

using namespace sdw;
using namespace sdw::runstore;
namespace fs = std::filesystem;

inline fs::path tempPath(const QTemporaryDir& dir, const std::string& name) {
    return fs::path(dir.path().toStdString()) / name;
}

inline void writeBytes(const fs::path& p, std::string_view bytes) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string readBytes(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Runs `f` and returns the RunStoreError it threw, if any.
template <typename F>
std::optional<RunStoreError> errorOf(F&& f) {
    try {
        f();
    } catch (const RunStoreError& e) {
        return e;
    }
    return std::nullopt;
}

#define EXPECT_RUN_ERROR(expr, expectedCode)                                                   \
    do {                                                                                       \
        const std::optional<RunStoreError> err_ = errorOf([&] { (void)(expr); });              \
        QVERIFY2(err_.has_value(), "expected RunStoreError from: " #expr);                     \
        QCOMPARE(toString(err_->code()), toString(expectedCode));                              \
    } while (0)

inline Provenance sampleProvenance() {
    Provenance p = Provenance::capture();
    p.gpu = "NVIDIA H200 (sm_90)";
    p.modelId = "Qwen/Qwen2.5-0.5B";
    p.settingsJson = R"({"sparsity":0.5,"method":"wanda","layers":[0,1,2]})";
    p.modelFiles = {{"config.json", std::string(64, 'a'), 1234},
                    {"model-00001-of-00002.safetensors", std::string(64, 'b'), 5'000'000'000LL},
                    {"tokenizer.json", std::string(64, 'c'), 7}};
    return p;
}

// A committed run with a few datasets, for the damage tests.
inline fs::path makeValidRun(const QTemporaryDir& dir, const std::string& name) {
    const fs::path p = tempPath(dir, name);
    RunWriter w = RunWriter::create(p, sampleProvenance(), "sample");
    std::vector<float> values(40000);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = float(i) * 0.5f;
    w.writeDataset("/analysis/values", values, {400, 100});
    w.writeStrings("/analysis/labels", std::vector<std::string>{"alpha", "beta", "gamma"});
    w.setDoubleAttribute("/analysis", "scale", 0.5);
    w.commit();
    return p;
}

// HDF5 identifiers of any kind still open in this process; RAII must leave none.
inline ssize_t openHdf5Ids() {
    Hdf5Lock lock;
    return H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
}

}  // namespace runstore_test
