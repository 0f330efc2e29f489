// Run store v1: schema, write protocol (.partial, checkpoint, commit),
// validation of damaged and foreign files, workspace listing, provenance and
// SHA-256.

#include "core/provenance.h"
#include "core/runstore.h"
#include "core/sha256.h"
#include "core/version.h"

#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest/QtTest>

#include <atomic>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <thread>

#if defined(__unix__)
#include <sys/wait.h>
#include <unistd.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
#define SDW_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SDW_TEST_ASAN 1
#endif
#endif

#if defined(SDW_TEST_ASAN)
// HDF5 1.10 loses an object header on the error path where it rejects damaged
// metadata (damagedFilesNeverCrash). That memory belongs to libhdf5; our side
// is covered by openHdf5Ids() checks that no identifier stays open.
extern "C" const char* __lsan_default_suppressions();
extern "C" const char* __lsan_default_suppressions() { return "leak:libhdf5\n"; }
#endif

using namespace sdw;
using namespace sdw::runstore;
namespace fs = std::filesystem;

namespace {

fs::path tempPath(const QTemporaryDir& dir, const std::string& name) {
    return fs::path(dir.path().toStdString()) / name;
}

void writeBytes(const fs::path& p, std::string_view bytes) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string readBytes(const fs::path& p) {
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

Provenance sampleProvenance() {
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
fs::path makeValidRun(const QTemporaryDir& dir, const std::string& name) {
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
ssize_t openHdf5Ids() {
    Hdf5Lock lock;
    return H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
}

std::vector<hsize_t> toShape(const QList<qulonglong>& list) { return {list.begin(), list.end()}; }

template <Element T>
std::vector<T> sampleValues(std::size_t n) {
    std::vector<T> v(n);
    for (std::size_t i = 0; i < n; ++i) {
        if constexpr (std::is_floating_point_v<T>) {
            v[i] = T(double(i) * 0.37 - 5.0);
        } else {
            v[i] = T((i * 7919u) % 251u);
        }
    }
    // Extremes catch accidental narrowing in the file type.
    if (n > 0) v[0] = std::numeric_limits<T>::max();
    if (n > 1) v[1] = std::numeric_limits<T>::lowest();
    if constexpr (std::is_floating_point_v<T>) {
        if (n > 2) v[2] = std::numeric_limits<T>::denorm_min();
        if (n > 3) v[3] = std::numeric_limits<T>::infinity();
    }
    return v;
}

H5D_layout_t layoutOf(const fs::path& file, const char* dataset, bool* deflated) {
    Hdf5Lock lock;
    H5Handle f = h5File(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
    H5Handle ds = h5Dataset(H5Dopen2(f.get(), dataset, H5P_DEFAULT));
    H5Handle dcpl = h5Plist(H5Dget_create_plist(ds.get()));
    *deflated = false;
    const int nfilters = H5Pget_nfilters(dcpl.get());
    for (int i = 0; i < nfilters; ++i) {
        unsigned flags = 0;
        std::size_t nelmts = 0;
        char name[64];
        if (H5Pget_filter2(dcpl.get(), static_cast<unsigned>(i), &flags, &nelmts, nullptr, sizeof name, name,
                           nullptr) == H5Z_FILTER_DEFLATE) {
            *deflated = true;
        }
    }
    return H5Pget_layout(dcpl.get());
}

template <Element T>
void roundTripNumeric(const fs::path& p, const std::vector<hsize_t>& shape, const QString& mode) {
    DatasetOptions opts;
    opts.extendible = mode == "extendible";
    opts.deflate = mode == "deflate" ? 4 : 0;
    if (mode == "chunked") opts.chunk.assign(shape.size(), 1);

    std::size_t n = 1;
    for (hsize_t d : shape) n *= d;
    const std::vector<T> data = sampleValues<T>(n);
    {
        RunWriter w = RunWriter::create(p, Provenance::capture(), "analysis");
        w.writeDataset<T>("/analysis/x", std::span<const T>(data), shape, opts);
        // The writer reads back what it wrote, before any flush.
        const Array<T> early = w.read<T>("/analysis/x");
        QCOMPARE(early.shape, shape);
        QVERIFY(early.data == data);
        w.commit();
    }
    RunReader r = RunReader::open(p);
    const Array<T> a = r.read<T>("/analysis/x");
    QCOMPARE(a.shape, shape);
    QCOMPARE(a.data.size(), n);
    QVERIFY2(a.data == data, "values differ after round trip");
    QCOMPARE(r.shape("/analysis/x"), shape);
    QCOMPARE(r.objectKind("/analysis/x"), ObjectKind::Dataset);

    bool deflated = false;
    const H5D_layout_t layout = layoutOf(p, "/analysis/x", &deflated);
    const bool expectChunked = opts.extendible || (n > 0 && mode != "contiguous");
    QCOMPARE(layout == H5D_CHUNKED, expectChunked);
    QCOMPARE(deflated, mode == "deflate" && n > 0);
}

}  // namespace

class TestRunStore : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();

    // SHA-256 and provenance helpers
    void sha256Vectors_data();
    void sha256Vectors();
    void sha256Streaming_data();
    void sha256Streaming();
    void hashFileProgressAndCancel();
    void addModelFiles();
    void provenanceCapture();

    // Writing and reading
    void rootAttributesOnCreate();
    void numericRoundTrip_data();
    void numericRoundTrip();
    void nanSurvives();
    void readWidening_data();
    void readWidening();
    void readRows();
    void appendRows();
    void appendErrors();
    void stringsRoundTrip();
    void attributes();
    void groupsAndListing();
    void provenanceRoundTrip();

    // Protocol
    void commitRenamesPartial();
    void commitRefusesExistingFinal();
    void createRefusals();
    void destructorLeavesValidPartial();
    void keepIncompleteThenResume();
    void discardRemovesPartial();
    void resumePartialAppends();
    void resumeRefusals();
    void checkpointCounts();
    void autoCheckpoint();
    void crashKeepsLastCheckpoint();
    void diskFullPrecheck();
    void realDiskFull_data();
    void realDiskFull();

    // Validation
    void missingFile();
    void notHdf5_data();
    void notHdf5();
    void truncatedFiles_data();
    void truncatedFiles();
    void damagedFilesNeverCrash_data();
    void damagedFilesNeverCrash();
    void foreignHdf5_data();
    void foreignHdf5();
    void newerSchema();
    void missingRootAttribute();
    void missingObjectsNamed();

    // Workspace
    void listWorkspaceMixed();
    void listWorkspaceWhileWriting();
    void listWorkspaceMissingDir();
    void lockedByAnotherProcess();
    void concurrentWriters();
};

void TestRunStore::initTestCase() {
    // Test code below calls the C API directly; keep HDF5 quiet there too.
    Hdf5Lock lock;
    QVERIFY(H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr) >= 0);
}

// ---------------------------------------------------------------------------
// SHA-256

void TestRunStore::sha256Vectors_data() {
    QTest::addColumn<QByteArray>("input");
    QTest::addColumn<QString>("digest");
    QTest::newRow("empty") << QByteArray()
                           << "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    QTest::newRow("abc") << QByteArray("abc")
                         << "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
    QTest::newRow("two blocks")
        << QByteArray("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")
        << "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1";
    QTest::newRow("million a") << QByteArray(1'000'000, 'a')
                               << "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
}

void TestRunStore::sha256Vectors() {
    QFETCH(QByteArray, input);
    QFETCH(QString, digest);
    QCOMPARE(QString::fromStdString(sha256Hex(std::string_view(input.constData(), std::size_t(input.size())))),
             digest);
}

void TestRunStore::sha256Streaming_data() {
    QTest::addColumn<int>("piece");
    // Piece sizes around the 64-byte block boundary exercise the buffering.
    for (int piece : {1, 3, 55, 56, 63, 64, 65, 1000, 65536}) {
        QTest::addRow("piece %d", piece) << piece;
    }
}

void TestRunStore::sha256Streaming() {
    QFETCH(int, piece);
    const std::string data(1'000'000, 'a');
    Sha256 h;
    for (std::size_t pos = 0; pos < data.size(); pos += std::size_t(piece)) {
        h.update(std::string_view(data).substr(pos, std::size_t(piece)));
    }
    QCOMPARE(QString::fromStdString(h.finishHex()),
             QStringLiteral("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
    // finish() resets: the object is reusable.
    h.update("abc");
    QCOMPARE(QString::fromStdString(h.finishHex()),
             QStringLiteral("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
}

void TestRunStore::hashFileProgressAndCancel() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    std::string content(3 * 1024 * 1024 + 17, '\0');
    std::mt19937 gen(7);
    for (char& c : content) c = char(gen() & 0xff);
    const fs::path p = tempPath(dir, "blob.bin");
    writeBytes(p, content);

    std::uint64_t lastDone = 0, lastTotal = 0;
    int calls = 0;
    bool monotonic = true;
    const std::optional<std::string> digest = hashFile(p, [&](std::uint64_t done, std::uint64_t total) {
        monotonic = monotonic && done >= lastDone;
        lastDone = done;
        lastTotal = total;
        ++calls;
        return true;
    });
    QVERIFY(digest.has_value());
    QVERIFY(monotonic);
    QCOMPARE(*digest, sha256Hex(content));
    QCOMPARE(lastTotal, std::uint64_t(content.size()));
    QCOMPARE(lastDone, std::uint64_t(content.size()));
    QVERIFY(calls >= 4);

    int cancelCalls = 0;
    const std::optional<std::string> stopped = hashFile(p, [&](std::uint64_t done, std::uint64_t) {
        ++cancelCalls;
        return done < 1024 * 1024;
    });
    QVERIFY(!stopped.has_value());
    QCOMPARE(cancelCalls, 2);  // start, then after the first 1 MiB

    QVERIFY_THROWS_EXCEPTION(fs::filesystem_error, hashFile(tempPath(dir, "nope.bin")));
}

void TestRunStore::addModelFiles() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const fs::path model = tempPath(dir, "model");
    fs::create_directories(model / "subdir");
    const std::map<std::string, std::string> files = {
        {"config.json", R"({"hidden_size": 8})"},
        {"generation_config.json", "{}"},
        {"tokenizer.json", R"({"model": {}})"},
        {"model.safetensors.index.json", R"({"weight_map": {}})"},
        {"model-00001-of-00002.safetensors", std::string(5000, 'x')},
        {"model-00002-of-00002.safetensors", std::string(3000, 'y')},
        {"README.md", "ignored"},
        {"tokenizer_config.json", "ignored too"},
    };
    for (const auto& [name, content] : files) writeBytes(model / name, content);
    writeBytes(model / "subdir" / "extra.safetensors", "not at top level");

    Provenance p;
    p.modelFiles = {{"config.json", "stale", 1}};
    std::uint64_t lastDone = 0, total = 0;
    QVERIFY(p.addModelFiles(model, [&](std::uint64_t d, std::uint64_t t) {
        lastDone = d;
        total = t;
        return true;
    }));
    const std::vector<std::string> expectedOrder = {
        "config.json", "generation_config.json", "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors", "model.safetensors.index.json", "tokenizer.json"};
    QCOMPARE(p.modelFiles.size(), expectedOrder.size());
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < expectedOrder.size(); ++i) {
        const ModelFile& f = p.modelFiles[i];
        QCOMPARE(f.path, expectedOrder[i]);
        QCOMPARE(f.sha256, sha256Hex(files.at(f.path)));  // "stale" entry replaced
        QCOMPARE(f.bytes, std::int64_t(files.at(f.path).size()));
        sum += std::uint64_t(f.bytes);
    }
    QCOMPARE(total, sum);
    QCOMPARE(lastDone, sum);

    Provenance cancelled;
    QVERIFY(!cancelled.addModelFiles(model, [](std::uint64_t done, std::uint64_t) { return done == 0; }));
    QVERIFY(cancelled.modelFiles.empty());
}

void TestRunStore::provenanceCapture() {
    const Provenance p = Provenance::capture();
    QCOMPARE(p.toolName, std::string(kToolName));
    QCOMPARE(p.toolVersion, std::string(kToolVersion));
    QVERIFY(!p.host.empty());
    QVERIFY(!p.os.empty());
    QCOMPARE(p.gpu, std::string("none"));
    QCOMPARE(p.settingsJson, std::string("{}"));
    const QRegularExpression iso(QStringLiteral("^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}Z$"));
    QVERIFY2(iso.match(QString::fromStdString(p.createdUtc)).hasMatch(), p.createdUtc.c_str());
    QCOMPARE(p.updatedUtc, p.createdUtc);
    QVERIFY(p.finishedUtc.empty());
}

// ---------------------------------------------------------------------------
// Writing and reading

void TestRunStore::rootAttributesOnCreate() {
    QTemporaryDir dir;
    const fs::path p = tempPath(dir, "root.sdw.h5");
    {
        RunWriter w = RunWriter::create(p, sampleProvenance(), "calibration");
        QCOMPARE(w.path(), partialPathFor(p));
        QCOMPARE(w.finalPath(), p);
        QVERIFY(fs::exists(partialPathFor(p)));
        QVERIFY(!fs::exists(p));
        QVERIFY(w.isOpen());
    }
    RunReader r = RunReader::open(partialPathFor(p));
    QCOMPARE(r.readStringAttribute("/", "sdw_format"), std::string("sdw-run"));
    QCOMPARE(r.readIntAttribute("/", "sdw_schema_version"), std::int64_t(kSchemaVersion));
    QCOMPARE(r.schemaVersion(), 1);
    QCOMPARE(r.kind(), std::string("calibration"));
    QCOMPARE(r.status(), std::string("incomplete"));
    QCOMPARE(r.readIntAttribute("/", "checkpoint"), std::int64_t(0));
    QCOMPARE(r.checkpointCount(), std::int64_t(0));
    const QRegularExpression id(QStringLiteral("^\\d{8}T\\d{6}Z-[0-9a-f]{8}$"));
    QVERIFY2(id.match(QString::fromStdString(r.runId())).hasMatch(), r.runId().c_str());
    QCOMPARE(r.attributeNames("/"), (std::vector<std::string>{"checkpoint", "run_id", "run_kind",
                                                              "sdw_format", "sdw_schema_version", "status"}));
    QCOMPARE(r.listGroup("/"), std::vector<std::string>{"provenance"});
    QCOMPARE(r.listGroup("/provenance"), std::vector<std::string>{"model_files"});
    QCOMPARE(r.listGroup("/provenance/model_files"), (std::vector<std::string>{"bytes", "path", "sha256"}));
    QCOMPARE(r.readStringAttribute("/provenance", "finished_utc"), std::string());
}

void TestRunStore::numericRoundTrip_data() {
    QTest::addColumn<QString>("type");
    QTest::addColumn<QList<qulonglong>>("shape");
    QTest::addColumn<QString>("mode");
    const QList<QList<qulonglong>> shapes = {{5}, {3, 4}, {0}, {0, 6}, {300, 7}, {2, 3, 4}};
    for (const char* type : {"float32", "float64", "int64", "int32", "uint32", "uint8"}) {
        for (const QList<qulonglong>& shape : shapes) {
            for (const char* mode : {"contiguous", "chunked", "deflate", "extendible"}) {
                QStringList dims;
                for (qulonglong d : shape) dims << QString::number(d);
                QTest::addRow("%s %s %s", type, qPrintable(dims.join('x')), mode)
                    << QString(type) << shape << QString(mode);
            }
        }
    }
}

void TestRunStore::numericRoundTrip() {
    QFETCH(QString, type);
    QFETCH(QList<qulonglong>, shape);
    QFETCH(QString, mode);
    QTemporaryDir dir;
    const fs::path p = tempPath(dir, "num.sdw.h5");
    const std::vector<hsize_t> s = toShape(shape);
    if (type == "float32") roundTripNumeric<float>(p, s, mode);
    else if (type == "float64") roundTripNumeric<double>(p, s, mode);
    else if (type == "int64") roundTripNumeric<std::int64_t>(p, s, mode);
    else if (type == "int32") roundTripNumeric<std::int32_t>(p, s, mode);
    else if (type == "uint32") roundTripNumeric<std::uint32_t>(p, s, mode);
    else if (type == "uint8") roundTripNumeric<std::uint8_t>(p, s, mode);
    else QFAIL("unknown type");
}

void TestRunStore::nanSurvives() {
    QTemporaryDir dir;
    const fs::path p = tempPath(dir, "nan.sdw.h5");
    RunWriter w = RunWriter::create(p, Provenance::capture(), "analysis");
    const std::vector<float> v = {std::nanf(""), -0.0f, 1.5f};
    w.writeDataset("/analysis/nan", v, {3});
    w.commit();
    const Array<float> a = RunReader::open(p).readFloat32("/analysis/nan");
    QVERIFY(std::isnan(a.data[0]));
    QVERIFY(std::signbit(a.data[1]));
    QCOMPARE(a.data[2], 1.5f);
}

void TestRunStore::readWidening_data() {
    QTest::addColumn<QString>("stored");
    QTest::addColumn<QString>("asType");
    QTest::addColumn<bool>("ok");
    QTest::newRow("f32 as f64") << "float32" << "float64" << true;
    QTest::newRow("f64 as f32") << "float64" << "float32" << false;
    QTest::newRow("i32 as i64") << "int32" << "int64" << true;
    QTest::newRow("u8 as i64") << "uint8" << "int64" << true;
    QTest::newRow("u8 as u32") << "uint8" << "uint32" << true;
    QTest::newRow("u32 as i64") << "uint32" << "int64" << true;
    QTest::newRow("u32 as i32") << "uint32" << "int32" << false;
    QTest::newRow("i32 as u32") << "int32" << "uint32" << false;
    QTest::newRow("i64 as i32") << "int64" << "int32" << false;
    QTest::newRow("i32 as f64") << "int32" << "float64" << false;
    QTest::newRow("f32 as i64") << "float32" << "int64" << false;
}

void TestRunStore::readWidening() {
    QFETCH(QString, stored);
    QFETCH(QString, asType);
    QFETCH(bool, ok);
    QTemporaryDir dir;
    const fs::path p = tempPath(dir, "w.sdw.h5");
    {
        RunWriter w = RunWriter::create(p, Provenance::capture(), "analysis");
        if (stored == "float32") w.writeDataset(std::string_view("/x"), std::vector<float>{1.f, 2.5f}, {2});
        if (stored == "float64") w.writeDataset(std::string_view("/x"), std::vector<double>{1., 2.5}, {2});
        if (stored == "int32") w.writeDataset(std::string_view("/x"), std::vector<std::int32_t>{1, -2}, {2});
        if (stored == "int64") w.writeDataset(std::string_view("/x"), std::vector<std::int64_t>{1, -2}, {2});
        if (stored == "uint8") w.writeDataset(std::string_view("/x"), std::vector<std::uint8_t>{1, 255}, {2});
        if (stored == "uint32") w.writeDataset(std::string_view("/x"), std::vector<std::uint32_t>{1, 4000000000u}, {2});
        w.commit();
    }
    RunReader r = RunReader::open(p);
    std::vector<double> got;
    const auto attempt = [&] {
        if (asType == "float64") for (double v : r.readFloat64("/x").data) got.push_back(v);
        if (asType == "float32") for (float v : r.readFloat32("/x").data) got.push_back(v);
        if (asType == "int64") for (auto v : r.readInt64("/x").data) got.push_back(double(v));
        if (asType == "int32") for (auto v : r.readInt32("/x").data) got.push_back(double(v));
        if (asType == "uint32") for (auto v : r.readUInt32("/x").data) got.push_back(double(v));
    };
    if (!ok) {
        const std::optional<RunStoreError> err = errorOf(attempt);
        QVERIFY(err.has_value());
        QCOMPARE(toString(err->code()), toString(ErrorCode::TypeMismatch));
        QVERIFY2(QString(err->what()).contains(QString::fromStdString(p.string())), err->what());
        return;
    }
    attempt();
    QCOMPARE(got.size(), std::size_t(2));
    QCOMPARE(got[0], 1.0);
    const std::map<QString, double> second = {{"float32", 2.5}, {"int32", -2.0}, {"uint8", 255.0},
                                              {"uint32", 4000000000.0}};
    QCOMPARE(got[1], second.at(stored));
}

void TestRunStore::readRows() {
    QTemporaryDir dir;
    const fs::path p = tempPath(dir, "rows.sdw.h5");
    RunWriter w = RunWriter::create(p, Provenance::capture(), "analysis");
    std::vector<std::int32_t> v(5 * 3);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::int32_t(i);
    w.writeDataset("/m", v, {5, 3});
    const Array<std::int32_t> mid = w.readRows<std::int32_t>("/m", 1, 2);  // rows 1..2
    QCOMPARE(mid.shape, (std::vector<hsize_t>{2, 3}));
    QCOMPARE(mid.data, (std::vector<std::int32_t>{3, 4, 5, 6, 7, 8}));
    QCOMPARE(mid(1, 2), 8);
    QCOMPARE(mid.rows(), hsize_t(2));
    QCOMPARE(mid.cols(), hsize_t(3));
    QCOMPARE(w.readRows<std::int32_t>("/m", 5, 0).data.size(), std::size_t(0));
    EXPECT_RUN_ERROR(w.readRows<std::int32_t>("/m", 4, 2), ErrorCode::InvalidArgument);
    w.discard();
}

void TestRunStore::appendRows() {
    QTemporaryDir dir;
    const fs::path p = tempPath(dir, "append.sdw.h5");
    {
        RunWriter w = RunWriter::create(p, Provenance::capture(), "calibration");
        // {rows, 3} float32, streamed one batch at a time.
        w.writeDataset("/calibration/act", std::vector<float>{}, {0, 3}, DatasetOptions::appendable());
        QCOMPARE(w.append("/calibration/act", std::vector<float>{1, 2, 3}), hsize_t(1));
        QCOMPARE(w.append("/calibration/act", std::vector<float>{4, 5, 6, 7, 8, 9}), hsize_t(3));
        QCOMPARE(w.append("/calibration/act", std::vector<float>{}), hsize_t(3));
        // Small explicit chunks force the data across several chunks.
        w.writeDataset("/calibration/step", std::vector<std::int64_t>{0}, {1},
                       DatasetOptions{true, {2}, 1});
        for (std::int64_t i = 1; i < 10; ++i) w.append("/calibration/step", std::vector<std::int64_t>{i});
        QCOMPARE(w.shape("/calibration/step"), std::vector<hsize_t>{10});
        w.commit();
    }
    RunReader r = RunReader::open(p);
    const Array<float> act = r.readFloat32("/calibration/act");
    QCOMPARE(act.shape, (std::vector<hsize_t>{3, 3}));
    QCOMPARE(act.data, (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
    QCOMPARE(r.readInt64("/calibration/step").data,
             (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

void TestRunStore::appendErrors() {
    QTemporaryDir dir;
    const fs::path p = tempPath(dir, "append-errors.sdw.h5");
    RunWriter w = RunWriter::create(p, Provenance::capture(), "calibration");
    w.writeDataset("/grow", std::vector<float>{}, {0, 4}, DatasetOptions::appendable());
    w.writeDataset("/fixed", std::vector<float>{1, 2}, {2});
    EXPECT_RUN_ERROR(w.append("/grow", std::vector<float>{1, 2, 3}), ErrorCode::InvalidArgument);
    EXPECT_RUN_ERROR(w.append("/grow", std::vector<double>{1, 2, 3, 4}), ErrorCode::TypeMismatch);
    EXPECT_RUN_ERROR(w.append("/fixed", std::vector<float>{3}), ErrorCode::InvalidArgument);
    EXPECT_RUN_ERROR(w.append("/nope", std::vector<float>{3}), ErrorCode::Missing);
    EXPECT_RUN_ERROR(w.appendStrings("/grow", std::vector<std::string>{"x"}), ErrorCode::TypeMismatch);
    EXPECT_RUN_ERROR(w.writeDataset("/bad", std::vector<float>{1, 2, 3}, {2, 2}), ErrorCode::InvalidArgument);
    EXPECT_RUN_ERROR(w.writeDataset("/bad", std::vector<float>{}, {}), ErrorCode::InvalidArgument);
    EXPECT_RUN_ERROR(w.writeDataset("/bad", std::vector<float>{1, 2}, {2}, DatasetOptions::chunked({3})),
                     ErrorCode::InvalidArgument);
    EXPECT_RUN_ERROR(w.writeDataset("/bad", std::vector<float>{1, 2}, {2}, DatasetOptions::compressed(12)),
                     ErrorCode::InvalidArgument);
    // Failed writes leave nothing behind and the writer usable.
    QVERIFY(!w.exists("/bad"));
    QCOMPARE(w.append("/grow", std::vector<float>{1, 2, 3, 4}), hsize_t(1));
    QCOMPARE(w.readFloat32("/grow").data, (std::vector<float>{1, 2, 3, 4}));
    w.discard();
}

void TestRunStore::stringsRoundTrip() {
    QTemporaryDir dir;
    const fs::path p = tempPath(dir, "strings.sdw.h5");
    const std::vector<std::string> values = {"", "plain", "h\xc3\xa9llo w\xc3\xb6rld \xe2\x9c\x93",
                                             std::string(10000, 'z'), "tab\tnew\nline"};
    {
        RunWriter w = RunWriter::create(p, Provenance::capture(), "analysis");
        w.writeStrings("/analysis/prompts", values);
        w.writeStrings("/analysis/empty", std::vector<std::string>{});
        w.writeStrings("/analysis/log", std::vector<std::string>{"start"}, DatasetOptions::appendable());
        QCOMPARE(w.appendStrings("/analysis/log", std::vector<std::string>{"step 1", "step 2"}), hsize_t(3));
        w.commit();
    }
    RunReader r = RunReader::open(p);
    QCOMPARE(r.readStrings("/analysis/prompts"), values);
    QCOMPARE(r.shape("/analysis/prompts"), std::vector<hsize_t>{values.size()});
    QVERIFY(r.readStrings("/analysis/empty").empty());
    QCOMPARE(r.readStrings("/analysis/log"), (std::vector<std::string>{"start", "step 1", "step 2"}));
    EXPECT_RUN_ERROR(r.readFloat32("/analysis/prompts"), ErrorCode::TypeMismatch);
    EXPECT_RUN_ERROR(r.readStrings("/provenance/model_files/bytes"), ErrorCode::TypeMismatch);
}

void TestRunStore::attributes() {
    QTemporaryDir dir;
    const fs::path p = tempPath(dir, "attrs.sdw.h5");
    {
        RunWriter w = RunWriter::create(p, Provenance::capture(), "pruning");
        w.createGroup("/pruning");
        w.writeDataset("/pruning/mask", std::vector<std::uint8_t>{1, 0, 1}, {3});
        w.setStringAttribute("/", "note", "root note \xe2\x9c\x93");
        w.setStringAttribute("/pruning", "method", "wanda");
        w.setIntAttribute("/pruning", "layers", 24);
        w.setDoubleAttribute("/pruning", "sparsity", 0.5);
        w.setDoubleAttribute("/pruning/mask", "density", 2.0 / 3.0);
        w.setIntAttribute("/pruning/mask", "big", std::numeric_limits<std::int64_t>::min());
        w.setStringAttribute("/pruning", "changes", "first");
        w.setIntAttribute("/pruning", "changes", 2);  // replaced, type changes
        EXPECT_RUN_ERROR(w.setStringAttribute("/", "status", "complete"), ErrorCode::InvalidArgument);
        EXPECT_RUN_ERROR(w.setIntAttribute("/", "sdw_anything", 1), ErrorCode::InvalidArgument);
        EXPECT_RUN_ERROR(w.setIntAttribute("/nope", "x", 1), ErrorCode::Missing);
        w.commit();
    }
    RunReader r = RunReader::open(p);
    QCOMPARE(r.readStringAttribute("/", "note"), std::string("root note \xe2\x9c\x93"));
    QCOMPARE(r.readStringAttribute("/pruning", "method"), std::string("wanda"));
    QCOMPARE(r.readIntAttribute("/pruning", "layers"), std::int64_t(24));
    QCOMPARE(r.readDoubleAttribute("/pruning", "layers"), 24.0);  // integers read as double
    QCOMPARE(r.readDoubleAttribute("/pruning", "sparsity"), 0.5);
    QCOMPARE(r.readDoubleAttribute("/pruning/mask", "density"), 2.0 / 3.0);
    QCOMPARE(r.readIntAttribute("/pruning/mask", "big"), std::numeric_limits<std::int64_t>::min());
    QCOMPARE(r.readIntAttribute("/pruning", "changes"), std::int64_t(2));
    QVERIFY(r.hasAttribute("/pruning", "method"));
    QVERIFY(!r.hasAttribute("/pruning", "nope"));
    QVERIFY(!r.hasAttribute("/nope", "method"));
    QCOMPARE(r.attributeNames("/pruning"),
             (std::vector<std::string>{"changes", "layers", "method", "sparsity"}));
    EXPECT_RUN_ERROR(r.readIntAttribute("/pruning", "method"), ErrorCode::TypeMismatch);
    EXPECT_RUN_ERROR(r.readIntAttribute("/pruning", "sparsity"), ErrorCode::TypeMismatch);
    EXPECT_RUN_ERROR(r.readStringAttribute("/pruning", "layers"), ErrorCode::TypeMismatch);
    EXPECT_RUN_ERROR(r.readStringAttribute("/pruning", "absent"), ErrorCode::Missing);
}

void TestRunStore::groupsAndListing() {
    QTemporaryDir dir;
    const fs::path p = tempPath(dir, "groups.sdw.h5");
    RunWriter w = RunWriter::create(p, Provenance::capture(), "analysis");
    w.createGroup("/analysis/layer0/attn");
    w.createGroup("analysis/layer0/attn/");  // relative and trailing slash: same group, no-op
    w.writeDataset("/analysis/layer0/mlp/score", std::vector<double>{1, 2}, {2});  // parents created
    w.writeDataset("/bench/latency", std::vector<double>{3}, {1});
    QCOMPARE(w.listGroup("/"), (std::vector<std::string>{"analysis", "bench", "provenance"}));
    QCOMPARE(w.listGroup("/analysis/layer0"), (std::vector<std::string>{"attn", "mlp"}));
    QCOMPARE(w.objectKind("/analysis/layer0"), ObjectKind::Group);
    QCOMPARE(w.objectKind("/analysis/layer0/mlp/score"), ObjectKind::Dataset);
    QCOMPARE(w.objectKind("/analysis/nothing/deeper"), ObjectKind::None);
    QCOMPARE(w.objectKind("/bench/latency/below"), ObjectKind::None);
    QVERIFY(w.exists("/"));
    QVERIFY(!w.exists("/calibration"));
    EXPECT_RUN_ERROR(w.writeDataset("/bench/latency", std::vector<double>{3}, {1}), ErrorCode::Exists);
    EXPECT_RUN_ERROR(w.writeDataset("/bench/latency/x", std::vector<double>{3}, {1}), ErrorCode::Exists);
    EXPECT_RUN_ERROR(w.createGroup("/bench/latency"), ErrorCode::Exists);
    EXPECT_RUN_ERROR(w.listGroup("/bench/latency"), ErrorCode::InvalidArgument);
    EXPECT_RUN_ERROR(w.listGroup("/nope"), ErrorCode::Missing);

    w.remove("/bench");
    QVERIFY(!w.exists("/bench/latency"));
    EXPECT_RUN_ERROR(w.remove("/bench"), ErrorCode::Missing);
    EXPECT_RUN_ERROR(w.remove("/provenance"), ErrorCode::InvalidArgument);
    w.writeDataset("/bench/latency", std::vector<double>{4}, {1});  // the name is free again
    QCOMPARE(w.readFloat64("/bench/latency").data, std::vector<double>{4});
    w.discard();
}

void TestRunStore::provenanceRoundTrip() {
    QTemporaryDir dir;
    const fs::path p = tempPath(dir, "prov.sdw.h5");
    Provenance in = sampleProvenance();
    in.modelFiles.push_back({"d\xc3\xbcr/weights.safetensors", std::string(64, 'f'), 0});
    in.createdUtc = "2025-01-02T03:04:05Z";
    {
        RunWriter w = RunWriter::create(p, in, "benchmark");
        const Provenance early = w.provenance();
        QCOMPARE(early.createdUtc, in.createdUtc);
        QVERIFY(early.finishedUtc.empty());
        w.commit();
    }
    const RunSummary s = inspectRun(p);
    QCOMPARE(s.path, p);
    QCOMPARE(s.kind, std::string("benchmark"));
    QCOMPARE(s.status, std::string("complete"));
    QVERIFY(s.complete());
    QCOMPARE(s.schemaVersion, 1);
    QCOMPARE(s.checkpoint, std::int64_t(1));  // the commit flush
    const Provenance& out = s.provenance;
    QCOMPARE(out.toolName, in.toolName);
    QCOMPARE(out.toolVersion, in.toolVersion);
    QCOMPARE(out.host, in.host);
    QCOMPARE(out.os, in.os);
    QCOMPARE(out.gpu, in.gpu);
    QCOMPARE(out.modelId, in.modelId);
    QCOMPARE(out.settingsJson, in.settingsJson);
    QCOMPARE(out.createdUtc, in.createdUtc);
    QVERIFY(!out.updatedUtc.empty());
    QVERIFY(!out.finishedUtc.empty());
    QVERIFY(out.finishedUtc >= out.createdUtc);
    QCOMPARE(out.modelFiles, in.modelFiles);

    // Empty fields are filled from this process.
    const fs::path q = tempPath(dir, "blank.sdw.h5");
    RunWriter::create(q, Provenance{}, "sample").commit();
    const Provenance filled = inspectRun(q).provenance;
    QCOMPARE(filled.toolName, std::string(kToolName));
    QCOMPARE(filled.toolVersion, std::string(kToolVersion));
    QCOMPARE(filled.host, hostName());
    QCOMPARE(filled.gpu, std::string("none"));
    QCOMPARE(filled.settingsJson, std::string("{}"));
    QVERIFY(!filled.createdUtc.empty());
    QVERIFY(filled.modelFiles.empty());
}

// ---------------------------------------------------------------------------
// Protocol

void TestRunStore::commitRenamesPartial() {
    QTemporaryDir dir;
    const fs::path p = tempPath(dir, "sub/dir/commit.sdw.h5");  // folders are created
    RunWriter w = RunWriter::create(p, sampleProvenance(), "sample");
    w.writeDataset("/analysis/v", std::vector<float>{1, 2, 3}, {3});
    QVERIFY(fs::exists(partialPathFor(p)));
    QVERIFY(!fs::exists(p));
    QCOMPARE(w.commit(), p);
    QVERIFY(!fs::exists(partialPathFor(p)));
    QVERIFY(fs::exists(p));
    QVERIFY(!w.isOpen());
    QCOMPARE(w.path(), p);
    EXPECT_RUN_ERROR(w.writeDataset("/analysis/w", std::vector<float>{1}, {1}), ErrorCode::InvalidArgument);
    EXPECT_RUN_ERROR(w.commit(), ErrorCode::InvalidArgument);

    RunReader r = RunReader::open(p);
    QCOMPARE(r.status(), std::string("complete"));
    QCOMPARE(r.readFloat32("/analysis/v").data, (std::vector<float>{1, 2, 3}));

    // A moved-from writer is closed, the moved-to one owns the file.
    const fs::path m = tempPath(dir, "moved.sdw.h5");
    RunWriter a = RunWriter::create(m, Provenance::capture(), "sample");
    RunWriter b = std::move(a);
    EXPECT_RUN_ERROR(a.checkpoint(), ErrorCode::InvalidArgument);  // NOLINT(bugprone-use-after-move)
    b.commit();
    QCOMPARE(inspectRun(m).status, std::string("complete"));
}

void TestRunStore::commitRefusesExistingFinal() {
    QTemporaryDir dir;
    const fs::path p = tempPath(dir, "clash.sdw.h5");
    RunWriter first = RunWriter::create(p, Provenance::capture(), "sample");
    RunWriter::create(tempPath(dir, "other.sdw.h5"), Provenance::capture(), "sample").commit();
    fs::copy_file(tempPath(dir, "other.sdw.h5"), p);  // someone else took the name meanwhile
    const std::string otherId = inspectRun(p).runId;

    first.writeDataset("/analysis/v", std::vector<double>{1}, {1});
    const std::optional<RunStoreError> err = errorOf([&] { first.commit(); });
    QVERIFY(err.has_value());
    QCOMPARE(toString(err->code()), toString(ErrorCode::Exists));
    QVERIFY2(QString(err->what()).contains(QString::fromStdString(p.string())), err->what());
    QVERIFY(first.isOpen());  // still usable
    QCOMPARE(inspectRun(p).runId, otherId);

    QCOMPARE(first.commit(true), p);
    const RunSummary s = inspectRun(p);
    QVERIFY(s.runId != otherId);
    QCOMPARE(s.status, std::string("complete"));
    QVERIFY(!fs::exists(partialPathFor(p)));
}

void TestRunStore::createRefusals() {
    QTemporaryDir dir;
    const fs::path p = tempPath(dir, "exists.sdw.h5");
    RunWriter::create(p, Provenance::capture(), "sample").commit();
    EXPECT_RUN_ERROR(RunWriter::create(p, Provenance::capture(), "sample"), ErrorCode::Exists);

    const fs::path q = tempPath(dir, "stale.sdw.h5");
    { RunWriter w = RunWriter::create(q, Provenance::capture(), "sample"); }  // leaves q.partial
    EXPECT_RUN_ERROR(RunWriter::create(q, Provenance::capture(), "sample"), ErrorCode::Exists);
    {
        RunWriter w = RunWriter::create(q, Provenance::capture(), "sample", {.overwrite = true});
        w.commit();
    }
    QVERIFY(fs::exists(q));
    QVERIFY(!fs::exists(partialPathFor(q)));

    RunWriter over = RunWriter::create(p, Provenance::capture(), "analysis", {.overwrite = true});
    QCOMPARE(over.commit(), p);  // overwrite from CreateOptions applies to commit
    QCOMPARE(inspectRun(p).kind, std::string("analysis"));

    EXPECT_RUN_ERROR(RunWriter::create(tempPath(dir, "bad.h5"), Provenance::capture(), "sample"),
                     ErrorCode::InvalidArgument);
    EXPECT_RUN_ERROR(RunWriter::create(tempPath(dir, "k.sdw.h5"), Provenance::capture(), "Bad Kind"),
                     ErrorCode::InvalidArgument);
    EXPECT_RUN_ERROR(RunWriter::create(tempPath(dir, "k.sdw.h5"), Provenance::capture(), ""),
                     ErrorCode::InvalidArgument);
    Provenance badJson = Provenance::capture();
    badJson.settingsJson = "{not json";
    EXPECT_RUN_ERROR(RunWriter::create(tempPath(dir, "k.sdw.h5"), badJson, "sample"), ErrorCode::InvalidArgument);
    QVERIFY(!fs::exists(partialPathFor(tempPath(dir, "k.sdw.h5"))));
}

void TestRunStore::destructorLeavesValidPartial() {
    QTemporaryDir dir;
    const fs::path p = tempPath(dir, "cancel.sdw.h5");
    {
        RunWriter w = RunWriter::create(p, sampleProvenance(), "pruning");
        w.writeDataset("/pruning/scores", std::vector<float>{0.25f, 0.5f}, {2});
        w.setStringAttribute("/pruning", "stage", "layer 3");
        // No checkpoint and no commit: the destructor still closes cleanly.
    }
    QVERIFY(!fs::exists(p));
    QVERIFY(fs::exists(partialPathFor(p)));
    const RunSummary s = inspectRun(partialPathFor(p));
    QCOMPARE(s.status, std::string("incomplete"));
    QVERIFY(!s.complete());
    QCOMPARE(s.kind, std::string("pruning"));
    QCOMPARE(s.provenance.modelId, sampleProvenance().modelId);
    QVERIFY(s.provenance.finishedUtc.empty());
    RunReader r = RunReader::open(partialPathFor(p));
    QCOMPARE(r.readFloat32("/pruning/scores").data, (std::vector<float>{0.25f, 0.5f}));
    QCOMPARE(r.readStringAttribute("/pruning", "stage"), std::string("layer 3"));
}

void TestRunStore::keepIncompleteThenResume() {
    QTemporaryDir dir;
    const fs::path p = tempPath(dir, "kept.sdw.h5");
    std::string runId;
    {
        RunWriter w = RunWriter::create(p, sampleProvenance(), "calibration");
        runId = w.runId();
        w.writeDataset("/calibration/rows", std::vector<std::int32_t>{1, 2}, {1, 2}, DatasetOptions::appendable());
        QCOMPARE(w.keepIncomplete(), p);
        QVERIFY(!w.isOpen());
    }
    QVERIFY(fs::exists(p));
    QVERIFY(!fs::exists(partialPathFor(p)));
    QCOMPARE(inspectRun(p).status, std::string("incomplete"));

    {
        RunWriter w = RunWriter::openForResume(p);
        QCOMPARE(w.path(), partialPathFor(p));  // back to .partial while open
        QVERIFY(!fs::exists(p));
        QCOMPARE(w.runId(), runId);
        QCOMPARE(w.append("/calibration/rows", std::vector<std::int32_t>{3, 4}), hsize_t(2));
        w.commit();
    }
    const RunSummary s = inspectRun(p);
    QCOMPARE(s.status, std::string("complete"));
    QCOMPARE(s.runId, runId);
    QCOMPARE(RunReader::open(p).readInt32("/calibration/rows").data, (std::vector<std::int32_t>{1, 2, 3, 4}));
}

void TestRunStore::discardRemovesPartial() {
    QTemporaryDir dir;
    const fs::path p = tempPath(dir, "gone.sdw.h5");
    RunWriter w = RunWriter::create(p, Provenance::capture(), "sample");
    w.writeDataset("/analysis/v", std::vector<float>{1}, {1});
    w.discard();
    QVERIFY(!w.isOpen());
    QVERIFY(!fs::exists(p));
    QVERIFY(!fs::exists(partialPathFor(p)));
    QCOMPARE(std::distance(fs::directory_iterator(dir.path().toStdString()), fs::directory_iterator()), 0);

    // Discarding a resumed kept run removes it entirely.
    const fs::path q = tempPath(dir, "kept.sdw.h5");
    RunWriter::create(q, Provenance::capture(), "sample").keepIncomplete();
    RunWriter::openForResume(q).discard();
    QVERIFY(!fs::exists(q));
    QVERIFY(!fs::exists(partialPathFor(q)));
}

void TestRunStore::resumePartialAppends() {
    QTemporaryDir dir;
    const fs::path p = tempPath(dir, "resume.sdw.h5");
    {
        RunWriter w = RunWriter::create(p, Provenance::capture(), "calibration");
        w.writeDataset("/calibration/loss", std::vector<double>{0.9, 0.8}, {2}, DatasetOptions::appendable());
        w.checkpoint();
        w.checkpoint();
    }
    for (const fs::path& target : {p, partialPathFor(p)}) {
        // Either name finds the .partial; the first resume ends without commit.
        RunWriter w = RunWriter::openForResume(target);
        QCOMPARE(w.path(), partialPathFor(p));
        QCOMPARE(w.finalPath(), p);
        QCOMPARE(w.checkpointCount(), std::int64_t(2));
        if (target == p) {
            QCOMPARE(w.append("/calibration/loss", std::vector<double>{0.7}), hsize_t(3));
        } else {
            QCOMPARE(w.append("/calibration/loss", std::vector<double>{0.6}), hsize_t(4));
            w.checkpoint();
            QCOMPARE(w.checkpointCount(), std::int64_t(3));
            w.commit();
        }
    }
    RunReader r = RunReader::open(p);
    QCOMPARE(r.readFloat64("/calibration/loss").data, (std::vector<double>{0.9, 0.8, 0.7, 0.6}));
    QCOMPARE(r.checkpointCount(), std::int64_t(4));
}

void TestRunStore::resumeRefusals() {
    QTemporaryDir dir;
    const fs::path done = makeValidRun(dir, "done.sdw.h5");
    EXPECT_RUN_ERROR(RunWriter::openForResume(done), ErrorCode::InvalidArgument);
    QVERIFY(fs::exists(done));  // left where it was
    QVERIFY(!fs::exists(partialPathFor(done)));
    EXPECT_RUN_ERROR(RunWriter::openForResume(tempPath(dir, "none.sdw.h5")), ErrorCode::NotFound);

    const fs::path junk = tempPath(dir, "junk.sdw.h5");
    writeBytes(junk, "not hdf5 at all");
    EXPECT_RUN_ERROR(RunWriter::openForResume(junk), ErrorCode::NotHdf5);
    QVERIFY(fs::exists(junk));

    // A complete run left as .partial (crash between flush and rename).
    const fs::path q = tempPath(dir, "late.sdw.h5");
    fs::copy_file(done, partialPathFor(q));
    EXPECT_RUN_ERROR(RunWriter::openForResume(partialPathFor(q)), ErrorCode::InvalidArgument);
    QVERIFY(fs::exists(partialPathFor(q)));
}

void TestRunStore::checkpointCounts() {
    QTemporaryDir dir;
    const fs::path p = tempPath(dir, "cp.sdw.h5");
    RunWriter w = RunWriter::create(p, Provenance::capture(), "sample");
    QCOMPARE(w.checkpointCount(), std::int64_t(0));
    for (int i = 1; i <= 3; ++i) {
        w.writeDataset("/analysis/d" + std::to_string(i), std::vector<float>{float(i)}, {1});
        w.checkpoint();
        QCOMPARE(w.checkpointCount(), std::int64_t(i));
        QCOMPARE(w.readIntAttribute("/", "checkpoint"), std::int64_t(i));
        // A flushed .partial is readable by a second, independent open.
        RunReader r = RunReader::open(w.path());
        QCOMPARE(r.checkpointCount(), std::int64_t(i));
        QCOMPARE(r.readFloat32("/analysis/d" + std::to_string(i)).data, std::vector<float>{float(i)});
    }
    w.commit();
    QCOMPARE(inspectRun(p).checkpoint, std::int64_t(4));
}

void TestRunStore::autoCheckpoint() {
    QTemporaryDir dir;
    const fs::path p = tempPath(dir, "auto.sdw.h5");
    RunWriter w = RunWriter::create(p, Provenance::capture(), "sample");
    w.setAutoCheckpoint(std::chrono::seconds(1));
    w.writeDataset("/a", std::vector<float>{1}, {1});
    QCOMPARE(w.checkpointCount(), std::int64_t(0));  // too soon
    QTest::qSleep(1100);
    w.writeDataset("/b", std::vector<float>{1}, {1});
    QCOMPARE(w.checkpointCount(), std::int64_t(1));
    w.setStringAttribute("/a", "x", "y");
    QCOMPARE(w.checkpointCount(), std::int64_t(1));  // interval restarts at each checkpoint
    w.setAutoCheckpoint(std::chrono::seconds(0));
    QTest::qSleep(1100);
    w.writeDataset("/c", std::vector<float>{1}, {1});
    QCOMPARE(w.checkpointCount(), std::int64_t(1));  // off
    w.discard();
}

void TestRunStore::crashKeepsLastCheckpoint() {
#if defined(__unix__)
    QTemporaryDir dir;
    const fs::path p = tempPath(dir, "crash.sdw.h5");
    const pid_t pid = fork();
    QVERIFY(pid >= 0);
    if (pid == 0) {
        // Child: write, checkpoint, write more, then die without closing.
        int rc = 0;
        try {
            RunWriter w = RunWriter::create(p, sampleProvenance(), "calibration");
            w.writeDataset("/calibration/kept", std::vector<float>{1, 2, 3, 4}, {2, 2}, DatasetOptions::appendable());
            w.checkpoint();
            w.append("/calibration/kept", std::vector<float>{5, 6});
            w.writeDataset("/calibration/lost", std::vector<float>(1000, 7.f), {1000});
            std::_Exit(0);
        } catch (...) {
            rc = 3;
        }
        std::_Exit(rc);
    }
    int status = 0;
    QCOMPARE(waitpid(pid, &status, 0), pid);
    QVERIFY(WIFEXITED(status));
    QCOMPARE(WEXITSTATUS(status), 0);

    QVERIFY(fs::exists(partialPathFor(p)));
    const RunSummary s = inspectRun(partialPathFor(p));
    QCOMPARE(s.status, std::string("incomplete"));
    QCOMPARE(s.checkpoint, std::int64_t(1));
    hsize_t keptRows = 0;
    {
        RunReader r = RunReader::open(partialPathFor(p));
        const Array<float> kept = r.readFloat32("/calibration/kept");
        // Checkpointed rows survive; the unflushed append may or may not.
        QVERIFY(kept.rows() == 2 || kept.rows() == 3);
        QCOMPARE(kept.cols(), hsize_t(2));
        keptRows = kept.rows();
        QCOMPARE(std::vector<float>(kept.data.begin(), kept.data.begin() + 4), (std::vector<float>{1, 2, 3, 4}));
    }

    // The crashed run can be resumed and finished.
    RunWriter w = RunWriter::openForResume(p);
    QCOMPARE(w.append("/calibration/kept", std::vector<float>{8, 9}), keptRows + 1);
    w.commit();
    const Array<float> all = RunReader::open(p).readFloat32("/calibration/kept");
    QCOMPARE(all.rows(), keptRows + 1);
    QCOMPARE(all(keptRows, 0), 8.f);
    QCOMPARE(all(keptRows, 1), 9.f);
#else
    QSKIP("needs fork()");
#endif
}

void TestRunStore::diskFullPrecheck() {
    QTemporaryDir dir;
    const fs::path p = tempPath(dir, "full.sdw.h5");
    RunWriter w = RunWriter::create(p, Provenance::capture(), "sample");
    const std::uintmax_t available = fs::space(dir.path().toStdString()).available;
    w.setMinFreeSpace(available + (std::uint64_t(1) << 40));  // more than the volume can ever have
    const std::optional<RunStoreError> err =
        errorOf([&] { w.writeDataset("/analysis/big", std::vector<float>(1000, 1.f), {1000}); });
    QVERIFY(err.has_value());
    QCOMPARE(toString(err->code()), toString(ErrorCode::DiskFull));
    const QString msg = err->what();
    QVERIFY2(msg.contains("disk full: need"), err->what());
    QVERIFY2(msg.contains(" free"), err->what());
    QVERIFY2(msg.contains("/analysis/big"), err->what());
    QVERIFY2(msg.contains(QString::fromStdString(w.path().string())), err->what());
    QCOMPARE(err->object(), std::string("/analysis/big"));
    QVERIFY(!w.exists("/analysis/big"));

    EXPECT_RUN_ERROR(w.append("/provenance/model_files/bytes", std::vector<std::int64_t>{}), ErrorCode::InvalidArgument);
    w.setMinFreeSpace(0);
    w.writeDataset("/analysis/big", std::vector<float>(1000, 1.f), {1000});
    QCOMPARE(w.shape("/analysis/big"), std::vector<hsize_t>{1000});
    w.discard();
}

void TestRunStore::realDiskFull_data() {
    QTest::addColumn<qulonglong>("reserve");
    QTest::newRow("stopped by the reserve") << qulonglong(256 * 1024);
    QTest::newRow("no reserve: HDF5 hits ENOSPC") << qulonglong(0);
}

void TestRunStore::realDiskFull() {
    // Needs a small, otherwise empty filesystem, e.g.
    //   mount -t tmpfs -o size=2m tmpfs /mnt/sdw-small
    //   SDW_TEST_SMALL_FS=/mnt/sdw-small ctest -R test_runstore
    const QByteArray small = qgetenv("SDW_TEST_SMALL_FS");
    if (small.isEmpty()) QSKIP("set SDW_TEST_SMALL_FS to a folder on a small (~2 MiB) filesystem");
    QFETCH(qulonglong, reserve);
    const fs::path p = fs::path(small.toStdString()) / "full.sdw.h5";
    fs::remove(p);
    fs::remove(partialPathFor(p));
    QVERIFY2(fs::space(p.parent_path()).capacity < (std::uint64_t(64) << 20), "SDW_TEST_SMALL_FS is not small");

    constexpr hsize_t kBatch = 10, kCols = 1024;  // 40 KiB per append
    hsize_t rows = 0;
    std::optional<RunStoreError> err;
    {
        RunWriter w = RunWriter::create(p, Provenance::capture(), "sample");
        w.setMinFreeSpace(reserve);
        w.writeDataset("/x", std::vector<float>{}, {0, kCols}, DatasetOptions::appendable());
        for (int batch = 0; batch < 10000 && !err; ++batch) {
            err = errorOf([&] { rows = w.append("/x", std::vector<float>(kBatch * kCols, float(batch))); });
        }
        QVERIFY2(err.has_value(), "the filesystem never filled up");
        QCOMPARE(toString(err->code()), toString(ErrorCode::DiskFull));
        QVERIFY2(QString(err->what()).contains("disk full"), err->what());
        QVERIFY(rows > 0);
        QCOMPARE(w.shape("/x")[0], rows);  // a failed append leaves no rows behind
        w.keepIncomplete();
    }
    {
        RunReader r = RunReader::open(p);
        const Array<float> x = r.readFloat32("/x");
        QCOMPARE(x.rows(), rows);
        for (hsize_t i = 0; i < rows; ++i) QCOMPARE(x(i, kCols - 1), float(i / kBatch));
        QCOMPARE(r.status(), std::string("incomplete"));
    }
    fs::remove(p);
}

// ---------------------------------------------------------------------------
// Validation

void TestRunStore::missingFile() {
    QTemporaryDir dir;
    const fs::path p = tempPath(dir, "absent.sdw.h5");
    const std::optional<RunStoreError> err = errorOf([&] { inspectRun(p); });
    QVERIFY(err.has_value());
    QCOMPARE(toString(err->code()), toString(ErrorCode::NotFound));
    QVERIFY2(QString(err->what()).contains(QString::fromStdString(p.string())), err->what());
    QCOMPARE(err->file(), p);
}

void TestRunStore::notHdf5_data() {
    QTest::addColumn<QByteArray>("content");
    QTest::newRow("empty") << QByteArray();
    QTest::newRow("text") << QByteArray("{\"hello\": \"json\"}\n");
    std::mt19937 gen(42);
    QByteArray random(4096, '\0');
    for (char& c : random) c = char(gen() & 0xff);
    QTest::newRow("random bytes") << random;
    QTest::newRow("half signature") << QByteArray("\x89HDF", 4);
}

void TestRunStore::notHdf5() {
    QFETCH(QByteArray, content);
    QTemporaryDir dir;
    const fs::path p = tempPath(dir, "bad.sdw.h5");
    writeBytes(p, std::string_view(content.constData(), std::size_t(content.size())));
    const std::optional<RunStoreError> err = errorOf([&] { inspectRun(p); });
    QVERIFY(err.has_value());
    QCOMPARE(toString(err->code()), toString(ErrorCode::NotHdf5));
    QVERIFY2(QString(err->what()).contains("not an HDF5 file"), err->what());
    QVERIFY2(QString(err->what()).contains(QString::fromStdString(p.string())), err->what());
    EXPECT_RUN_ERROR(RunReader::open(p), ErrorCode::NotHdf5);
}

void TestRunStore::truncatedFiles_data() {
    QTest::addColumn<double>("fraction");
    QTest::addColumn<int>("bytes");  // used when fraction < 0
    for (double f : {0.02, 0.1, 0.25, 0.4, 0.5, 0.6, 0.75, 0.9, 0.99}) {
        QTest::addRow("%g of the file", f) << f << 0;
    }
    for (int b : {8, 48, 100, 512, 2048}) QTest::addRow("first %d bytes", b) << -1.0 << b;
    QTest::newRow("all but the last byte") << -1.0 << -1;
}

void TestRunStore::truncatedFiles() {
    QFETCH(double, fraction);
    QFETCH(int, bytes);
    QTemporaryDir dir;
    const fs::path valid = makeValidRun(dir, "valid.sdw.h5");
    const std::string whole = readBytes(valid);
    QVERIFY(whole.size() > 100000);  // the data lies past the metadata
    std::size_t keep = 0;
    if (fraction >= 0) keep = std::size_t(double(whole.size()) * fraction);
    else keep = bytes >= 0 ? std::size_t(bytes) : whole.size() - 1;

    const fs::path cut = tempPath(dir, "cut.sdw.h5");
    writeBytes(cut, std::string_view(whole).substr(0, keep));
    const std::optional<RunStoreError> err = errorOf([&] {
        // Whatever open lets through, reading everything must fail cleanly.
        RunReader r = RunReader::open(cut);
        (void)r.summary();
        (void)r.readFloat32("/analysis/values");
        (void)r.readStrings("/analysis/labels");
    });
    QVERIFY2(err.has_value(), "a truncated file was read without error");
    QCOMPARE(toString(err->code()), toString(ErrorCode::Corrupt));
    QVERIFY2(QString(err->what()).contains("file is truncated or corrupt"), err->what());
    QVERIFY2(QString(err->what()).contains(QString::fromStdString(cut.string())), err->what());
    EXPECT_RUN_ERROR(RunWriter::openForResume(cut), ErrorCode::Corrupt);
    QCOMPARE(openHdf5Ids(), ssize_t(0));
}

void TestRunStore::damagedFilesNeverCrash_data() {
    QTest::addColumn<double>("where");
    for (double w : {0.0003, 0.0005, 0.001, 0.002, 0.003, 0.005, 0.01, 0.02, 0.03}) QTest::addRow("at %g", w) << w;
    for (int i = 1; i < 40; ++i) QTest::addRow("at %d/40", i) << i / 40.0;
    QTest::newRow("last bytes") << 0.9999;
}

void TestRunStore::damagedFilesNeverCrash() {
    // Overwrites 64 bytes somewhere. Damage in raw data may go unnoticed (no
    // checksums on data); damage in metadata must be a RunStoreError. Either
    // way nothing may crash or print. Variable-length string datasets are not
    // read here: HDF5 keeps their contents in the unchecksummed global heap
    // and can crash on damage there (see docs/run-format.md); everything the
    // summary path reads is fixed-length for that reason.
    QFETCH(double, where);
    QTemporaryDir dir;
    const fs::path valid = makeValidRun(dir, "valid.sdw.h5");
    std::string bytes = readBytes(valid);
    const std::size_t at = std::size_t(double(bytes.size()) * where);
    for (std::size_t i = at; i < std::min(bytes.size(), at + 64); ++i) bytes[i] = char(0xA5 ^ i);
    const fs::path damaged = tempPath(dir, "damaged.sdw.h5");
    writeBytes(damaged, bytes);

    bool threw = false;
    try {
        RunReader r = RunReader::open(damaged);
        (void)r.summary();
        (void)r.readFloat32("/analysis/values");
        (void)r.shape("/analysis/labels");
        (void)r.readDoubleAttribute("/analysis", "scale");
        (void)r.listGroup("/analysis");
    } catch (const RunStoreError& e) {
        threw = true;
        QVERIFY2(QString(e.what()).contains(QString::fromStdString(damaged.string())), e.what());
        const bool sensible = e.code() == ErrorCode::Corrupt || e.code() == ErrorCode::Foreign ||
                              e.code() == ErrorCode::NotHdf5 || e.code() == ErrorCode::TypeMismatch ||
                              e.code() == ErrorCode::Missing || e.code() == ErrorCode::NewerSchema;
        QVERIFY2(sensible, e.what());
    }
    if (where < 0.002) QVERIFY2(threw, "damage to the root object header went unnoticed");
    QCOMPARE(openHdf5Ids(), ssize_t(0));
}

void TestRunStore::foreignHdf5_data() {
    QTest::addColumn<QString>("variant");
    QTest::newRow("no magic") << "none";
    QTest::newRow("other magic") << "other";
    QTest::newRow("numeric magic") << "number";
}

void TestRunStore::foreignHdf5() {
    QFETCH(QString, variant);
    QTemporaryDir dir;
    const fs::path p = tempPath(dir, "foreign.sdw.h5");
    {
        Hdf5Lock lock;
        H5Handle f = h5File(H5Fcreate(p.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
        QVERIFY(f.valid());
        const hsize_t dims[1] = {4};
        H5Handle space = h5Space(H5Screate_simple(1, dims, nullptr));
        H5Handle ds = h5Dataset(H5Dcreate2(f.get(), "data", H5T_NATIVE_INT, space.get(), H5P_DEFAULT,
                                           H5P_DEFAULT, H5P_DEFAULT));
        const int values[4] = {1, 2, 3, 4};
        QVERIFY(H5Dwrite(ds.get(), H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values) >= 0);
        H5Handle scalar = h5Space(H5Screate(H5S_SCALAR));
        if (variant == "other") {
            H5Handle type = vlenUtf8Type();
            H5Handle a = h5Attr(H5Acreate2(f.get(), "sdw_format", type.get(), scalar.get(), H5P_DEFAULT, H5P_DEFAULT));
            const char* s = "something-else";
            QVERIFY(H5Awrite(a.get(), type.get(), &s) >= 0);
        } else if (variant == "number") {
            H5Handle a = h5Attr(H5Acreate2(f.get(), "sdw_format", H5T_NATIVE_INT64, scalar.get(), H5P_DEFAULT,
                                           H5P_DEFAULT));
            const std::int64_t v = 1;
            QVERIFY(H5Awrite(a.get(), H5T_NATIVE_INT64, &v) >= 0);
        }
    }
    const std::optional<RunStoreError> err = errorOf([&] { inspectRun(p); });
    QVERIFY(err.has_value());
    QCOMPARE(toString(err->code()), toString(ErrorCode::Foreign));
    QVERIFY2(QString(err->what()).contains("not a SparseDecoding Workbench run file (foreign HDF5)"), err->what());
    QVERIFY2(QString(err->what()).contains(QString::fromStdString(p.string())), err->what());
    EXPECT_RUN_ERROR(RunWriter::openForResume(p), ErrorCode::Foreign);
    QVERIFY(fs::exists(p));  // never renamed or touched
}

void TestRunStore::newerSchema() {
    QTemporaryDir dir;
    const fs::path p = makeValidRun(dir, "future.sdw.h5");
    {
        Hdf5Lock lock;
        H5Handle f = h5File(H5Fopen(p.c_str(), H5F_ACC_RDWR, H5P_DEFAULT));
        QVERIFY(f.valid());
        H5Handle a = h5Attr(H5Aopen(f.get(), "sdw_schema_version", H5P_DEFAULT));
        const std::int64_t v = 7;
        QVERIFY(H5Awrite(a.get(), H5T_NATIVE_INT64, &v) >= 0);
    }
    const std::optional<RunStoreError> err = errorOf([&] { inspectRun(p); });
    QVERIFY(err.has_value());
    QCOMPARE(toString(err->code()), toString(ErrorCode::NewerSchema));
    const QString msg = err->what();
    QVERIFY2(msg.contains("written by a newer version (schema 7, this build reads up to 1)"), err->what());
    QVERIFY2(msg.contains(QString::fromStdString(p.string())), err->what());
    EXPECT_RUN_ERROR(RunWriter::openForResume(p), ErrorCode::NewerSchema);
}

void TestRunStore::missingRootAttribute() {
    QTemporaryDir dir;
    const fs::path p = makeValidRun(dir, "noid.sdw.h5");
    {
        Hdf5Lock lock;
        H5Handle f = h5File(H5Fopen(p.c_str(), H5F_ACC_RDWR, H5P_DEFAULT));
        QVERIFY(H5Adelete(f.get(), "run_id") >= 0);
    }
    const std::optional<RunStoreError> err = errorOf([&] { inspectRun(p); });
    QVERIFY(err.has_value());
    QCOMPARE(toString(err->code()), toString(ErrorCode::Corrupt));
    QVERIFY2(QString(err->what()).contains("run_id"), err->what());
}

void TestRunStore::missingObjectsNamed() {
    QTemporaryDir dir;
    const fs::path p = makeValidRun(dir, "named.sdw.h5");
    RunReader r = RunReader::open(p);
    const std::optional<RunStoreError> err = errorOf([&] { r.readFloat32("/analysis/nope"); });
    QVERIFY(err.has_value());
    QCOMPARE(toString(err->code()), toString(ErrorCode::Missing));
    QCOMPARE(err->object(), std::string("/analysis/nope"));
    QCOMPARE(err->file(), p);
    QVERIFY2(QString(err->what()).contains("/analysis/nope"), err->what());
    QVERIFY2(QString(err->what()).contains(QString::fromStdString(p.string())), err->what());
    EXPECT_RUN_ERROR(r.shape("/analysis"), ErrorCode::InvalidArgument);
    EXPECT_RUN_ERROR(r.listGroup("/analysis/values"), ErrorCode::InvalidArgument);
}

// ---------------------------------------------------------------------------
// Workspace

void TestRunStore::listWorkspaceMixed() {
    QTemporaryDir dir;
    const fs::path ws = dir.path().toStdString();
    makeValidRun(dir, "a-complete.sdw.h5");
    { RunWriter w = RunWriter::create(ws / "b-crashed.sdw.h5", sampleProvenance(), "calibration"); }
    writeBytes(ws / "c-random.sdw.h5", "\x01\x02garbage");
    {
        Hdf5Lock lock;
        H5Handle f = h5File(H5Fcreate((ws / "d-foreign.sdw.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
        QVERIFY(f.valid());
    }
    writeBytes(ws / "e-empty.sdw.h5", "");
    RunWriter::create(ws / "f-kept.sdw.h5", sampleProvenance(), "pruning").keepIncomplete();
    const std::string whole = readBytes(ws / "a-complete.sdw.h5");
    writeBytes(ws / "g-truncated.sdw.h5", std::string_view(whole).substr(0, whole.size() * 6 / 10));
    writeBytes(ws / "notes.txt", "not a run");
    writeBytes(ws / "h.sdw.h5.bak", "not listed");
    fs::create_directory(ws / "folder.sdw.h5");  // directories are skipped

    const std::vector<WorkspaceEntry> entries = listWorkspace(ws);
    std::vector<std::string> names;
    for (const WorkspaceEntry& e : entries) names.push_back(e.path.filename().string());
    QCOMPARE(names, (std::vector<std::string>{"a-complete.sdw.h5", "b-crashed.sdw.h5.partial", "c-random.sdw.h5",
                                              "d-foreign.sdw.h5", "e-empty.sdw.h5", "f-kept.sdw.h5",
                                              "g-truncated.sdw.h5"}));

    QVERIFY(entries[0].summary.has_value());
    QCOMPARE(entries[0].summary->status, std::string("complete"));
    QCOMPARE(entries[0].summary->kind, std::string("sample"));
    QVERIFY(!entries[0].partial);
    QVERIFY(entries[0].error.empty());
    QVERIFY(!entries[0].errorCode.has_value());

    QVERIFY(entries[1].partial);
    QVERIFY(entries[1].summary.has_value());
    QCOMPARE(entries[1].summary->status, std::string("incomplete"));
    QCOMPARE(entries[1].summary->kind, std::string("calibration"));

    const std::pair<std::size_t, ErrorCode> failures[] = {
        {2, ErrorCode::NotHdf5}, {3, ErrorCode::Foreign}, {4, ErrorCode::NotHdf5}, {6, ErrorCode::Corrupt}};
    for (const auto& [i, code] : failures) {
        QVERIFY2(!entries[i].summary.has_value(), names[i].c_str());
        QVERIFY(!entries[i].partial);
        QVERIFY(entries[i].errorCode.has_value());
        QCOMPARE(toString(*entries[i].errorCode), toString(code));
        QVERIFY2(QString::fromStdString(entries[i].error).contains(QString::fromStdString(names[i])),
                 entries[i].error.c_str());
    }

    QCOMPARE(openHdf5Ids(), ssize_t(0));
    QVERIFY(!entries[5].partial);
    QVERIFY(entries[5].summary.has_value());
    QCOMPARE(entries[5].summary->status, std::string("incomplete"));
    QCOMPARE(entries[5].summary->provenance.modelId, sampleProvenance().modelId);
}

void TestRunStore::listWorkspaceWhileWriting() {
    QTemporaryDir dir;
    const fs::path ws = dir.path().toStdString();
    RunWriter w = RunWriter::create(ws / "live.sdw.h5", sampleProvenance(), "benchmark");
    w.writeDataset("/bench/t", std::vector<double>{1.5}, {1});
    w.checkpoint();
    const std::vector<WorkspaceEntry> entries = listWorkspace(ws);
    QCOMPARE(entries.size(), std::size_t(1));
    QVERIFY(entries[0].partial);
    QVERIFY2(entries[0].summary.has_value(), entries[0].error.c_str());
    QCOMPARE(entries[0].summary->checkpoint, std::int64_t(1));
    QCOMPARE(entries[0].summary->status, std::string("incomplete"));
    // The writer is unaffected by the listing.
    w.writeDataset("/bench/u", std::vector<double>{2.5}, {1});
    w.commit();
    QCOMPARE(RunReader::open(ws / "live.sdw.h5").readFloat64("/bench/u").data, std::vector<double>{2.5});
}

void TestRunStore::listWorkspaceMissingDir() {
    QTemporaryDir dir;
    EXPECT_RUN_ERROR(listWorkspace(tempPath(dir, "nowhere")), ErrorCode::NotFound);
    QVERIFY(listWorkspace(dir.path().toStdString()).empty());
}

void TestRunStore::lockedByAnotherProcess() {
#if defined(__unix__)
    QTemporaryDir dir;
    const fs::path ws = dir.path().toStdString();
    const fs::path p = ws / "live.sdw.h5";
    int ready[2], release[2];
    QVERIFY(pipe(ready) == 0 && pipe(release) == 0);
    const pid_t pid = fork();
    QVERIFY(pid >= 0);
    if (pid == 0) {
        // Child: a run in progress in another process (say, the CLI).
        int rc = 0;
        try {
            RunWriter w = RunWriter::create(p, sampleProvenance(), "calibration");
            w.checkpoint();
            char c = 'r';
            if (write(ready[1], &c, 1) != 1) rc = 4;
            if (read(release[0], &c, 1) != 1) rc = 5;
            w.commit();
        } catch (...) {
            rc = 3;
        }
        std::_Exit(rc);
    }
    char c = 0;
    QCOMPARE(read(ready[0], &c, 1), ssize_t(1));

    const std::vector<WorkspaceEntry> entries = listWorkspace(ws);
    const std::optional<RunStoreError> resume = errorOf([&] { RunWriter::openForResume(p); });
    const std::optional<RunStoreError> create = errorOf([&] { RunWriter::create(p, Provenance::capture(), "sample"); });
    c = 'g';
    QCOMPARE(write(release[1], &c, 1), ssize_t(1));
    int status = 0;
    QCOMPARE(waitpid(pid, &status, 0), pid);
    QVERIFY(WIFEXITED(status));
    QCOMPARE(WEXITSTATUS(status), 0);

    QCOMPARE(entries.size(), std::size_t(1));
    QVERIFY(entries[0].partial);
    QVERIFY(!entries[0].summary.has_value());
    QVERIFY(entries[0].errorCode.has_value());
    QCOMPARE(toString(*entries[0].errorCode), toString(ErrorCode::Locked));
    QVERIFY2(QString::fromStdString(entries[0].error).contains("another process"), entries[0].error.c_str());
    QVERIFY(resume.has_value());
    QCOMPARE(toString(resume->code()), toString(ErrorCode::Locked));
    QVERIFY(create.has_value());
    QCOMPARE(toString(create->code()), toString(ErrorCode::Exists));
    // Once the other process is done, the run reads normally.
    QCOMPARE(inspectRun(p).status, std::string("complete"));
    for (int fd : {ready[0], ready[1], release[0], release[1]}) close(fd);
#else
    QSKIP("needs fork()");
#endif
}

void TestRunStore::concurrentWriters() {
    // Several threads each writing their own run: the global HDF5 lock must
    // keep them from corrupting each other.
    QTemporaryDir dir;
    const fs::path ws = dir.path().toStdString();
    constexpr int kThreads = 4, kRows = 50;
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            try {
                RunWriter w = RunWriter::create(ws / ("t" + std::to_string(t) + ".sdw.h5"), Provenance::capture(),
                                                "benchmark");
                w.writeDataset("/bench/rows", std::vector<std::int64_t>{}, {0, 2}, DatasetOptions::appendable());
                for (int i = 0; i < kRows; ++i) {
                    w.append("/bench/rows", std::vector<std::int64_t>{t, i});
                    if (i % 10 == 0) w.checkpoint();
                    (void)listWorkspace(ws);
                }
                w.commit();
            } catch (const std::exception&) {
                ++failures;
            }
        });
    }
    for (std::thread& th : threads) th.join();
    QCOMPARE(failures.load(), 0);
    for (int t = 0; t < kThreads; ++t) {
        const Array<std::int64_t> rows = RunReader::open(ws / ("t" + std::to_string(t) + ".sdw.h5"))
                                             .readInt64("/bench/rows");
        QCOMPARE(rows.shape, (std::vector<hsize_t>{hsize_t(kRows), 2}));
        for (int i = 0; i < kRows; ++i) {
            QCOMPARE(rows(hsize_t(i), 0), std::int64_t(t));
            QCOMPARE(rows(hsize_t(i), 1), std::int64_t(i));
        }
    }
}

QTEST_GUILESS_MAIN(TestRunStore)
#include "test_runstore.moc"
