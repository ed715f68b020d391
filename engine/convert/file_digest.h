#pragma once
// A whole file's digests from one read: SHA-256 (the container manifest, LFS files of a download,
// mirror copies) and the git blob id (SHA-1 of "blob <size>\0" + the bytes: non-LFS files of a
// download, as git and the Hub's tree API name them), through OpenSSL's libcrypto. The one file
// hasher of `coli doctor --deep`, `coli mirror stage|verify` and the downloader's checks.
// Thread-safety: a plain function.
#include "core/status.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

namespace coli::convert {

struct FileDigests {
    std::string sha256;      // 64 lowercase hex digits; "" when not asked for
    std::string gitBlobSha1; // 40 lowercase hex digits; "" when not asked for
    uint64_t bytes = 0;      // bytes read (the file's size at the time)
};

struct DigestRequest {
    bool sha256 = true;
    bool gitBlobSha1 = false;
    // Drop the file's pages from the page cache first (POSIX_FADV_DONTNEED), so that a file just
    // written and fsync'ed is hashed as the disk holds it, not as memory still does.
    bool dropCache = false;
};

// Reads the regular file `path` once, in 4 MiB pieces, and computes the digests asked for.
// onBytes (may be empty) is told each piece's size, on the calling thread. Errors: NotFound,
// Malformed (not a regular file), Io (naming path; also a file whose size changed while a git
// blob id was computed), Cancelled once *cancel turns true (checked before each piece).
Result<FileDigests> hashFile(const std::string& path, const DigestRequest& what,
                             const std::function<void(uint64_t)>& onBytes = {},
                             const std::atomic<bool>* cancel = nullptr);

} // namespace coli::convert
