// Run store v1: schema, numeric and string datasets, attributes, provenance
// and SHA-256. The write protocol, validation and workspace listing are in
// test_runstore_protocol.cpp.

#include "runstore_test_util.h"

#include "core/sha256.h"
#include "core/version.h"

#include <QRegularExpression>

#include <cmath>
#include <limits>
#include <map>
#include <random>

using namespace runstore_test;

namespace {

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

QTEST_GUILESS_MAIN(TestRunStore)
#include "test_runstore.moc"
