#pragma once
// Paths as run files record them, and back.
//
// A run file names its model, its inputs and the files it made. Recorded
// absolute, a run made in one clone of the repository names folders that a
// clone elsewhere does not have. So a path that lies inside the working
// directory is recorded relative to it ("samples/model/brown-llama" when the
// run is made from the repository root), any other path absolute; and a
// relative path read back is looked up in the working directory and then in
// the folders above the run file, so a run file inside the repository finds
// the repository's files from any working directory.

#include <filesystem>
#include <string>

namespace sdw {

// `p` relative to the working directory when it lies inside it (no ".."),
// else absolute; lexically normal. An empty path stays empty.
std::string recordedPath(const std::filesystem::path& p);

// Where a recorded path points. Absolute: itself. Relative: the working
// directory's entry when it exists, else the first folder above `runFile`
// (its own folder first) that holds it, else the working directory's (which
// does not exist). An empty string gives an empty path.
std::filesystem::path resolveRecordedPath(const std::string& recorded, const std::filesystem::path& runFile = {});

}  // namespace sdw
