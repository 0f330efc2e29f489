#include "core/h5file.h"

#include <vector>

namespace sdw::runstore {

std::mutex& hdf5Mutex() {
    static std::mutex mutex;
    return mutex;
}

Hdf5Lock::Hdf5Lock() : guard_(hdf5Mutex()) {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

bool H5Handle::reset() {
    bool ok = true;
    if (id_ >= 0 && closer_ != nullptr) ok = closer_(id_) >= 0;
    id_ = H5I_INVALID_HID;
    return ok;
}

namespace {

herr_t collectError(unsigned depth, const H5E_error2_t* err, void* clientData) {
    auto* lines = static_cast<std::vector<std::string>*>(clientData);
    // The outermost frames only repeat the failed API call ("H5Fopen():
    // unable to open file"); the inner ones say why. Keep at most a few.
    if (err != nullptr && err->desc != nullptr && err->desc[0] != '\0' && depth < 16) {
        lines->emplace_back(err->desc);
    }
    return 0;
}

// The sec2 driver's system errors carry a timestamp (with a newline), buffer
// addresses and byte counts; the OS message is what a user can act on.
std::string conciseLine(const std::string& line) {
    const std::string key = "error message = '";
    const std::size_t at = line.find(key);
    if (at != std::string::npos) {
        const std::size_t begin = at + key.size();
        const std::size_t end = line.find('\'', begin);
        if (end != std::string::npos) return line.substr(begin, end - begin);
    }
    std::string out = line;
    for (char& c : out) {
        if (c == '\n' || c == '\r') c = ' ';
    }
    return out;
}

}  // namespace

std::string hdf5ErrorDetail() {
    std::vector<std::string> lines;
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, &collectError, &lines);
    H5Eclear2(H5E_DEFAULT);

    // Innermost (most specific) first, de-duplicated, capped so messages stay
    // readable in a status bar.
    std::string out;
    int kept = 0;
    for (auto it = lines.rbegin(); it != lines.rend() && kept < 3; ++it) {
        std::string line = conciseLine(*it);
        if (out.find(line) != std::string::npos) continue;
        if (!out.empty()) out += "; ";
        out += line;
        ++kept;
    }
    return out;
}

H5Handle vlenUtf8Type() {
    H5Handle type = h5Type(H5Tcopy(H5T_C_S1));
    if (type) {
        H5Tset_size(type.get(), H5T_VARIABLE);
        H5Tset_cset(type.get(), H5T_CSET_UTF8);
    }
    return type;
}

H5Handle fixedUtf8Type(std::size_t bytes) {
    H5Handle type = h5Type(H5Tcopy(H5T_C_S1));
    if (type) {
        H5Tset_size(type.get(), bytes == 0 ? 1 : bytes);
        H5Tset_cset(type.get(), H5T_CSET_UTF8);
        H5Tset_strpad(type.get(), H5T_STR_NULLPAD);
    }
    return type;
}

}  // namespace sdw::runstore
