#pragma once
// The converter's only way to write files, so that tests can make writes fail (a full disk) at a
// chosen byte and count which files were (re)written. Not for reading: sources go through io/.
// Thread-safety: a FileSystem may be shared only if the implementation says so (PosixFileSystem
// is stateless and safe; FaultyFileSystem is not); a WritableFile is used by one thread.
#include "core/status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace coli::convert {

class WritableFile {
public:
    virtual ~WritableFile() = default;
    // Appends n bytes. Errors: Io; NoSpace when the device is full (ENOSPC, EDQUOT: "disk full
    // writing <path>") or the file size limit is reached (EFBIG).
    virtual Status write(const void* data, size_t n) = 0;
    // fsync. Errors: Io; NoSpace (ENOSPC, EDQUOT).
    virtual Status sync() = 0;
    // Closes (also done by the destructor, ignoring errors). Errors: Io.
    virtual Status close() = 0;
};

class FileSystem {
public:
    virtual ~FileSystem() = default;
    // Creates or truncates `path` for writing (mode 0644). Errors: Io.
    virtual Result<std::unique_ptr<WritableFile>> create(const std::string& path) = 0;
    // Opens `path` for appending at its end, creating it (mode 0644) when absent: how a resumed
    // download continues its .part. Errors: Io.
    virtual Result<std::unique_ptr<WritableFile>> openAppend(const std::string& path) = 0;
    // rename(2), then fsync of the destination's directory so the rename survives a crash.
    // Errors: Io.
    virtual Status rename(const std::string& from, const std::string& to) = 0;
    // Bytes an unprivileged writer may still use on the file system holding `dir` (statvfs:
    // f_bavail * f_frsize). Errors: Io.
    virtual Result<uint64_t> freeBytes(const std::string& dir) = 0;
};

// The real file system (POSIX calls).
FileSystem& posixFileSystem();

// Writes `bytes` to `path` so that a crash leaves either the old file or the whole new one:
// path + ".tmp" written, fsync'ed and closed, then renamed over `path` (rename fsyncs the folder).
// For small files written last (receipts). Errors: NoSpace, Io naming the file.
Status writeFileAtomically(const std::string& path, const std::string& bytes,
                           FileSystem& fs = posixFileSystem());

// For tests: forwards to `base`, but once `failAfterBytes` bytes have been written in total
// (over all files, created or appended), a write fails like a full disk ("disk full writing
// <path>"), writing only the bytes that still fit. freeBytes() returns `reportedFree` when set.
// Records every created and every appended path.
class FaultyFileSystem : public FileSystem {
public:
    explicit FaultyFileSystem(FileSystem& base, uint64_t failAfterBytes = UINT64_MAX)
        : m_base(base), m_budget(failAfterBytes) {}
    Result<std::unique_ptr<WritableFile>> create(const std::string& path) override;
    Result<std::unique_ptr<WritableFile>> openAppend(const std::string& path) override;
    Status rename(const std::string& from, const std::string& to) override;
    Result<uint64_t> freeBytes(const std::string& dir) override;

    uint64_t reportedFree = UINT64_MAX; // UINT64_MAX = ask the base
    const std::vector<std::string>& created() const { return m_created; }
    const std::vector<std::string>& appended() const { return m_appended; }
    uint64_t bytesWritten() const { return m_written; }

private:
    friend class FaultyFile;
    FileSystem& m_base;
    uint64_t m_budget;
    uint64_t m_written = 0;
    std::vector<std::string> m_created;
    std::vector<std::string> m_appended;
};

} // namespace coli::convert
