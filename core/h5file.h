#pragma once
// Thin RAII layer over the HDF5 C API, shared by the run store.
//
// HDF5 is not safe to call from several threads at once (the Debian build is
// "threadsafe" only in the sense of one global lock, other builds not at all),
// so every HDF5 call in sdw goes through Hdf5Lock, which holds the one
// process-wide hdf5Mutex(). Handles must be closed while that lock is held.

#include <hdf5.h>

#include <cstddef>
#include <mutex>
#include <string>
#include <utility>

namespace sdw::runstore {

// The process-wide lock around all HDF5 calls. Not recursive: take it once at
// the public entry point, never inside helpers.
std::mutex& hdf5Mutex();

// Holds hdf5Mutex() and switches off HDF5's automatic error printing for the
// calling thread (thread-safe HDF5 builds keep that setting per thread, so
// doing it once at start-up is not enough).
class Hdf5Lock {
public:
    Hdf5Lock();
    Hdf5Lock(const Hdf5Lock&) = delete;
    Hdf5Lock& operator=(const Hdf5Lock&) = delete;

private:
    std::lock_guard<std::mutex> guard_;
};

// Owns one HDF5 identifier (file, group, dataset, dataspace, type, attribute,
// property list). Destroy only while holding Hdf5Lock.
class H5Handle {
public:
    using Closer = herr_t (*)(hid_t);

    H5Handle() = default;
    H5Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
    H5Handle(const H5Handle&) = delete;
    H5Handle& operator=(const H5Handle&) = delete;
    H5Handle(H5Handle&& other) noexcept
        : id_(std::exchange(other.id_, H5I_INVALID_HID)), closer_(other.closer_) {}
    H5Handle& operator=(H5Handle&& other) noexcept {
        if (this != &other) {
            reset();
            id_ = std::exchange(other.id_, H5I_INVALID_HID);
            closer_ = other.closer_;
        }
        return *this;
    }
    ~H5Handle() { reset(); }

    hid_t get() const { return id_; }
    bool valid() const { return id_ >= 0; }
    explicit operator bool() const { return valid(); }

    // Closes now; returns false when HDF5 reported a failure while closing
    // (for a file that means the final flush failed).
    bool reset();

private:
    hid_t id_ = H5I_INVALID_HID;
    Closer closer_ = nullptr;
};

inline H5Handle h5File(hid_t id) { return {id, &H5Fclose}; }
inline H5Handle h5Group(hid_t id) { return {id, &H5Gclose}; }
inline H5Handle h5Dataset(hid_t id) { return {id, &H5Dclose}; }
inline H5Handle h5Space(hid_t id) { return {id, &H5Sclose}; }
inline H5Handle h5Type(hid_t id) { return {id, &H5Tclose}; }
inline H5Handle h5Attr(hid_t id) { return {id, &H5Aclose}; }
inline H5Handle h5Plist(hid_t id) { return {id, &H5Pclose}; }
// H5Oopen returns any object kind; H5Oclose closes each of them.
inline H5Handle h5Object(hid_t id) { return {id, &H5Oclose}; }

// The innermost messages of the calling thread's HDF5 error stack, e.g.
// "unable to open file; truncated file: eof = 100, stored_eof = 2048", then
// clears the stack. Empty when HDF5 recorded nothing.
std::string hdf5ErrorDetail();

// A variable-length UTF-8 string type. Its data lives in HDF5's global heap,
// which carries no checksum: damage there can crash the library on read.
H5Handle vlenUtf8Type();

// A fixed-length, null-padded UTF-8 string type of `bytes` bytes (at least 1).
// Stored inline (attributes: in the checksummed object header).
H5Handle fixedUtf8Type(std::size_t bytes);

}  // namespace sdw::runstore
