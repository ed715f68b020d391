#pragma once
// The digests `coli doctor --deep` compares: SHA-256 (the container manifest, LFS files in the
// download receipt) and the git blob id (SHA-1 of "blob <size>\0" + the bytes: non-LFS files in
// the download receipt, as git and the Hub's tree API name them), both from one read of the file,
// through OpenSSL's libcrypto. Thread-safety: a plain function.
#include "core/status.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

namespace coli::doctor {

struct FileDigests {
    std::string sha256;      // 64 lowercase hex digits; "" when not asked for
    std::string gitBlobSha1; // 40 lowercase hex digits; "" when not asked for
    uint64_t bytes = 0;      // bytes read (the file's size at the time)
};

// Reads the regular file `path` once, in 4 MiB pieces, and computes the digests asked for.
// onBytes (may be empty) is told each piece's size, on the calling thread. Errors: NotFound,
// Malformed (not a regular file), Io (naming path), Cancelled once *cancel turns true (checked
// before each piece).
Result<FileDigests> hashFile(const std::string& path, bool sha256, bool gitBlobSha1,
                             const std::function<void(uint64_t)>& onBytes = {},
                             const std::atomic<bool>* cancel = nullptr);

} // namespace coli::doctor
