#pragma once
// A journaling HDF5 file driver for run files: checkpoints that a kill
// cannot tear.
//
// HDF5's flush writes a file's changed metadata (object headers, B-tree
// nodes, heaps, the superblock) in place, one block after another; a process
// killed in the middle leaves some blocks new and some old, and the file may
// no longer open. This driver does the file I/O itself (POSIX, as HDF5's
// default "sec2" driver does) and holds every metadata write in memory until
// the flush ends. Then it commits them:
//
//   0. sync the file (the raw data written since the last commit);
//   1. write them all to `.NAME.journal.tmp` (address, length, bytes; a
//      checksum at the end) and fsync it;
//   2. rename it to `.NAME.journal` and fsync the folder: the commit point;
//   3. write the blocks into the file, apply a deferred shrink, fsync;
//   4. delete the journal and fsync the folder.
//
// A kill before step 2 leaves the file as of its previous checkpoint (its
// metadata untouched since); a kill after it leaves a journal that the next
// open through this driver replays before HDF5 reads anything. Raw data
// (H5FD_MEM_DRAW) written below the end of file that the last commit
// recorded (a chunk rewritten in place, freed space reused) is held the same
// way, up to 256 MiB per commit; raw data in new space goes straight to the
// file, where the last checkpoint's metadata points nowhere.
//
// The file itself stays a plain HDF5 file (the driver stores nothing in the
// superblock): h5py and every other reader open it with the default driver.
// Only a file left by a kill during step 3 needs the replay, which every
// open by the workbench does. Compiled for the HDF5 1.10 driver interface;
// with another HDF5 the default driver is used (useJournalDriver() returns
// false).

#include <hdf5.h>

#include <cstddef>
#include <filesystem>

namespace sdw::runstore::detail {

// Sets the journaling driver on a file-access property list. False when this
// HDF5 has no journaling driver (the list keeps the default one).
bool useJournalDriver(hid_t fapl);
// Whether this build has the journaling driver (HDF5 1.10).
bool journalDriverAvailable();

// The journal's name for a file: the folder's hidden `.NAME.journal`
// (a file already hidden keeps its one dot).
std::filesystem::path journalPathFor(const std::filesystem::path& file);

// Tells the driver of an open file (opened through it) that the file was
// renamed, so that its next commit writes the journal beside the new name.
void journalFileRenamed(hid_t file, const std::filesystem::path& newPath);

// Tests only: the process exits at once (_exit(86)) at that point of its
// next commit, as a kill there would leave things.
enum class JournalCrashPoint { None, BeforeRename, AfterRename, MidApply };
void setJournalCrashPointForTest(JournalCrashPoint point);
// Tests only: the raw bytes held per commit (default 256 MiB).
void setJournalRawBudgetForTest(std::size_t bytes);

}  // namespace sdw::runstore::detail
