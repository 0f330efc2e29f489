// Run store v1: the write protocol (.partial, checkpoint, commit, resume,
// disk full), validation of damaged and foreign files, and the workspace
// listing with concurrent writers.

#include "runstore_test_util.h"

#include "core/h5_journal.h"

#include <atomic>
#include <cstring>
#include <fstream>
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

using namespace runstore_test;

class TestRunStoreProtocol : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();

    // Protocol
    void commitRenamesPartial();
    void commitRefusesExistingFinal();
    void creationIsHidden();
    void createRefusals();
    void destructorLeavesValidPartial();
    void keepIncompleteThenResume();
    void discardRemovesPartial();
    void resumePartialAppends();
    void resumeRefusals();
    void checkpointCounts();
    void autoCheckpoint();
    void crashKeepsLastCheckpoint();
    void crashDuringCheckpoint_data();
    void crashDuringCheckpoint();
    void heldWritesReadBack();
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

void TestRunStoreProtocol::initTestCase() {
    // Test code below calls the C API directly; keep HDF5 quiet there too.
    Hdf5Lock lock;
    QVERIFY(H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr) >= 0);
}

// ---------------------------------------------------------------------------
// Protocol

void TestRunStoreProtocol::commitRenamesPartial() {
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

// A run killed while its header is written leaves only the hidden
// ".NAME.sdw.h5.creating" (never a .partial that does not open); the workspace
// does not list it and the next create of that run removes it.
void TestRunStoreProtocol::creationIsHidden() {
    QTemporaryDir dir;
    const fs::path p = tempPath(dir, "born.sdw.h5");
    const fs::path creating = creatingPathFor(p);
    QCOMPARE(creating.filename().string(), std::string(".born.sdw.h5.creating"));
    QCOMPARE(creating.parent_path(), p.parent_path());
    {
        std::ofstream stale(creating, std::ios::binary);
        stale << std::string(48, '\x89');  // what a kill during H5Fcreate leaves
    }
    QVERIFY(listWorkspace(p.parent_path()).empty());
    RunWriter w = RunWriter::create(p, sampleProvenance(), "sample");
    QVERIFY(!fs::exists(creating));
    QVERIFY(fs::exists(partialPathFor(p)));
    QCOMPARE(inspectRun(partialPathFor(p)).status, std::string("incomplete"));
    const auto listed = listWorkspace(p.parent_path());
    QCOMPARE(listed.size(), std::size_t(1));
    QVERIFY(listed[0].partial);
    QVERIFY(listed[0].error.empty());
    w.commit();
    QCOMPARE(listWorkspace(p.parent_path()).size(), std::size_t(1));
}

void TestRunStoreProtocol::commitRefusesExistingFinal() {
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

void TestRunStoreProtocol::createRefusals() {
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

void TestRunStoreProtocol::destructorLeavesValidPartial() {
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

void TestRunStoreProtocol::keepIncompleteThenResume() {
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

void TestRunStoreProtocol::discardRemovesPartial() {
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

void TestRunStoreProtocol::resumePartialAppends() {
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

void TestRunStoreProtocol::resumeRefusals() {
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

void TestRunStoreProtocol::checkpointCounts() {
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

void TestRunStoreProtocol::autoCheckpoint() {
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

void TestRunStoreProtocol::crashKeepsLastCheckpoint() {
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
        // Checkpointed rows survive; the append after the checkpoint does not
        // (its metadata was held back), nor the dataset written after it.
        if (detail::journalDriverAvailable()) {
          QCOMPARE(kept.rows(), hsize_t(2));
          QVERIFY(!r.exists("/calibration/lost"));
        } else {
          QVERIFY(kept.rows() == 2 || kept.rows() == 3);  // HDF5's default driver: either
        }
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

// A kill inside a checkpoint's flush: before the journal is committed the
// file is the previous checkpoint's, after it the new one's (replayed by the
// next open, here a read-only RunReader). Either way it opens, also with
// HDF5's default driver once replayed, and holds one checkpoint's values,
// never a mix: an appended row (its chunk rewritten in place), a dataset
// replaced by one with new values, and a new dataset.
void TestRunStoreProtocol::crashDuringCheckpoint_data() {
  QTest::addColumn<int>("point");
  QTest::addColumn<bool>("newState");
  QTest::newRow("before the journal's rename") << int(detail::JournalCrashPoint::BeforeRename) << false;
  QTest::newRow("after the journal's rename") << int(detail::JournalCrashPoint::AfterRename) << true;
  QTest::newRow("halfway through applying it") << int(detail::JournalCrashPoint::MidApply) << true;
  // Raw data rewritten in place past the held budget goes straight to the
  // file: the metadata is still the last checkpoint's, whole.
  QTest::newRow("no raw budget, before the rename") << int(detail::JournalCrashPoint::BeforeRename) << false;
}

void TestRunStoreProtocol::crashDuringCheckpoint() {
#if defined(__unix__)
  if (!detail::journalDriverAvailable()) QSKIP("this HDF5 has no journaling driver (core/h5_journal.h: 1.10 only)");
  QFETCH(int, point);
  QFETCH(bool, newState);
  QTemporaryDir dir;
  const fs::path p = tempPath(dir, "torn.sdw.h5");
  const fs::path partial = partialPathFor(p);
  const pid_t pid = fork();
  QVERIFY(pid >= 0);
  const bool noRawBudget = QByteArray(QTest::currentDataTag()).startsWith("no raw budget");
  if (pid == 0) {
    int rc = 3;
    if (noRawBudget) detail::setJournalRawBudgetForTest(0);
    try {
      RunWriter w = RunWriter::create(p, sampleProvenance(), "calibration");
      w.writeDataset("/calibration/rows", std::vector<float>{1, 2, 3, 4}, {2, 2}, DatasetOptions::appendable());
      w.writeDataset("/calibration/sums", std::vector<double>(16384, 1.0), {128, 128});
      w.checkpoint();
      w.append("/calibration/rows", std::vector<float>{5, 6});
      w.remove("/calibration/sums");
      w.writeDataset("/calibration/sums", std::vector<double>(16384, 2.0), {128, 128});
      w.writeDataset("/calibration/added", std::vector<float>{9}, {1});
      detail::setJournalCrashPointForTest(static_cast<detail::JournalCrashPoint>(point));
      w.checkpoint();
      rc = 4;  // the crash point was not reached
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
    }
    std::_Exit(rc);
  }
  int status = 0;
  QCOMPARE(waitpid(pid, &status, 0), pid);
  QVERIFY(WIFEXITED(status));
  QCOMPARE(WEXITSTATUS(status), 86);
  QVERIFY(fs::exists(partial));
  QCOMPARE(fs::exists(detail::journalPathFor(partial)), newState);

  {
    RunReader r = RunReader::open(partial);
    QCOMPARE(r.status(), std::string("incomplete"));
    QCOMPARE(r.checkpointCount(), std::int64_t(newState ? 2 : 1));
    const Array<float> rows = r.readFloat32("/calibration/rows");
    QCOMPARE(rows.rows(), hsize_t(newState ? 3 : 2));
    QCOMPARE(rows(rows.rows() - 1, 1), newState ? 6.f : 4.f);
    const Array<double> sums = r.readFloat64("/calibration/sums");
    QCOMPARE(sums.data.size(), std::size_t(16384));
    const double want = newState ? 2.0 : 1.0;
    // Without the raw budget the replaced values may land in the old
    // dataset's freed space: they may mix, but each is old or new.
    QVERIFY(std::all_of(sums.data.begin(), sums.data.end(),
                        [&](double v) { return noRawBudget ? v == 1.0 || v == 2.0 : v == want; }));
    if (noRawBudget)
      qInfo("without the raw budget: %d of 16384 sums read back from the interrupted checkpoint",
            int(std::count(sums.data.begin(), sums.data.end(), 2.0)));
    QCOMPARE(r.exists("/calibration/added"), newState);
  }
  QVERIFY(!fs::exists(detail::journalPathFor(partial)));
  {
    Hdf5Lock lock;
    H5Handle f = h5File(H5Fopen(partial.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
    QVERIFY(f);
  }
  // The run resumes and finishes.
  RunWriter w = RunWriter::openForResume(p);
  w.append("/calibration/rows", std::vector<float>{7, 8});
  w.commit();
  QCOMPARE(RunReader::open(p).readFloat32("/calibration/rows").rows(), hsize_t(newState ? 4 : 3));
#else
  QSKIP("needs fork()");
#endif
}

// What the journal holds until the next checkpoint (here a dataset rewritten
// in place, below the last commit's end of file) is not in the file yet, and
// reads back as written all the same.
void TestRunStoreProtocol::heldWritesReadBack() {
  if (!detail::journalDriverAvailable()) QSKIP("this HDF5 has no journaling driver (core/h5_journal.h: 1.10 only)");
  QTemporaryDir dir;
  const fs::path p = tempPath(dir, "held.h5");
  const auto onDisk = [&](haddr_t at) {  // the first value stored at `at`, as the file has it
    const std::string bytes = readBytes(p);
    double v = 0;
    std::memcpy(&v, bytes.data() + at, sizeof v);
    return v;
  };
  Hdf5Lock lock;
  H5Handle fapl = h5Plist(H5Pcreate(H5P_FILE_ACCESS));
  QVERIFY(detail::useJournalDriver(fapl.get()));
  H5Handle f = h5File(H5Fcreate(p.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()));
  QVERIFY(f);
  const hsize_t dims[2] = {128, 128};  // 128 KiB: past HDF5's 64 KiB sieve buffer, so reads reach the driver
  H5Handle space = h5Space(H5Screate_simple(2, dims, nullptr));
  H5Handle ds =
      h5Dataset(H5Dcreate2(f.get(), "sums", H5T_NATIVE_DOUBLE, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  QVERIFY(ds);
  std::vector<double> v(16384, 1.0);
  QVERIFY(H5Dwrite(ds.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()) >= 0);
  QVERIFY(H5Fflush(f.get(), H5F_SCOPE_GLOBAL) >= 0);
  const haddr_t at = H5Dget_offset(ds.get());
  QVERIFY(at != HADDR_UNDEF);
  QCOMPARE(onDisk(at), 1.0);

  std::fill(v.begin(), v.end(), 2.0);
  QVERIFY(H5Dwrite(ds.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()) >= 0);
  QCOMPARE(onDisk(at), 1.0);  // held
  std::vector<double> back(16384, 0.0);
  QVERIFY(H5Dread(ds.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, back.data()) >= 0);
  QCOMPARE(std::count(back.begin(), back.end(), 2.0), std::ptrdiff_t(16384));

  QVERIFY(H5Fflush(f.get(), H5F_SCOPE_GLOBAL) >= 0);
  QCOMPARE(onDisk(at), 2.0);
}

void TestRunStoreProtocol::diskFullPrecheck() {
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

void TestRunStoreProtocol::realDiskFull_data() {
    QTest::addColumn<qulonglong>("reserve");
    QTest::newRow("stopped by the reserve") << qulonglong(256 * 1024);
    QTest::newRow("no reserve: HDF5 hits ENOSPC") << qulonglong(0);
}

void TestRunStoreProtocol::realDiskFull() {
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

void TestRunStoreProtocol::missingFile() {
    QTemporaryDir dir;
    const fs::path p = tempPath(dir, "absent.sdw.h5");
    const std::optional<RunStoreError> err = errorOf([&] { inspectRun(p); });
    QVERIFY(err.has_value());
    QCOMPARE(toString(err->code()), toString(ErrorCode::NotFound));
    QVERIFY2(QString(err->what()).contains(QString::fromStdString(p.string())), err->what());
    QCOMPARE(err->file(), p);
}

void TestRunStoreProtocol::notHdf5_data() {
    QTest::addColumn<QByteArray>("content");
    QTest::newRow("empty") << QByteArray();
    QTest::newRow("text") << QByteArray("{\"hello\": \"json\"}\n");
    std::mt19937 gen(42);
    QByteArray random(4096, '\0');
    for (char& c : random) c = char(gen() & 0xff);
    QTest::newRow("random bytes") << random;
    QTest::newRow("half signature") << QByteArray("\x89HDF", 4);
}

void TestRunStoreProtocol::notHdf5() {
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

void TestRunStoreProtocol::truncatedFiles_data() {
    QTest::addColumn<double>("fraction");
    QTest::addColumn<int>("bytes");  // used when fraction < 0
    for (double f : {0.02, 0.1, 0.25, 0.4, 0.5, 0.6, 0.75, 0.9, 0.99}) {
        QTest::addRow("%g of the file", f) << f << 0;
    }
    for (int b : {8, 48, 100, 512, 2048}) QTest::addRow("first %d bytes", b) << -1.0 << b;
    QTest::newRow("all but the last byte") << -1.0 << -1;
}

void TestRunStoreProtocol::truncatedFiles() {
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

void TestRunStoreProtocol::damagedFilesNeverCrash_data() {
    QTest::addColumn<double>("where");
    for (double w : {0.0003, 0.0005, 0.001, 0.002, 0.003, 0.005, 0.01, 0.02, 0.03}) QTest::addRow("at %g", w) << w;
    for (int i = 1; i < 40; ++i) QTest::addRow("at %d/40", i) << i / 40.0;
    QTest::newRow("last bytes") << 0.9999;
}

void TestRunStoreProtocol::damagedFilesNeverCrash() {
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

void TestRunStoreProtocol::foreignHdf5_data() {
    QTest::addColumn<QString>("variant");
    QTest::newRow("no magic") << "none";
    QTest::newRow("other magic") << "other";
    QTest::newRow("numeric magic") << "number";
}

void TestRunStoreProtocol::foreignHdf5() {
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

void TestRunStoreProtocol::newerSchema() {
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

void TestRunStoreProtocol::missingRootAttribute() {
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

void TestRunStoreProtocol::missingObjectsNamed() {
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

void TestRunStoreProtocol::listWorkspaceMixed() {
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

void TestRunStoreProtocol::listWorkspaceWhileWriting() {
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

void TestRunStoreProtocol::listWorkspaceMissingDir() {
    QTemporaryDir dir;
    EXPECT_RUN_ERROR(listWorkspace(tempPath(dir, "nowhere")), ErrorCode::NotFound);
    QVERIFY(listWorkspace(dir.path().toStdString()).empty());
}

void TestRunStoreProtocol::lockedByAnotherProcess() {
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

void TestRunStoreProtocol::concurrentWriters() {
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

QTEST_GUILESS_MAIN(TestRunStoreProtocol)
#include "test_runstore_protocol.moc"
