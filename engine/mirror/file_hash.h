#pragma once
// SHA-256 of a whole file for the mirror (stage's checks, verify), read in 4 MiB pieces with
// progress and cancel, dropping the file's pages from the page cache first when asked, so that a
// file just written is hashed as the disk holds it, not as memory still does.
// Thread-safety: plain function.
#include "core/status.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

namespace coli::mirror {

// Called after each piece with the bytes of that piece.
using HashBytesFn = std::function<void(uint64_t bytes)>;

struct FileDigest {
    uint64_t size = 0;  // bytes hashed (the file's size)
    std::string sha256; // 64 lower-case hex digits
};

// Errors, naming path: NotFound, Malformed (not a regular file), Io (read failure), Cancelled
// (*cancel turned true between pieces).
Result<FileDigest> hashFile(const std::string& path, const HashBytesFn& onBytes = {},
                            const std::atomic<bool>* cancel = nullptr, bool dropCache = false);

} // namespace coli::mirror
