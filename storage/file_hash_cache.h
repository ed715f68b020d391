#pragma once
// A cache of whole-file SHA-256 digests keyed by (path, size, mtime), so that a big checkpoint is
// hashed once, not at every start (model_identity.h). The database implements it (database.h).
// Thread-safety: as the implementation (the database: one thread).
#include <cstdint>
#include <optional>
#include <string>

namespace coli::storage {

struct FileStamp {
    std::string path;    // absolute, as the caller canonicalised it
    uint64_t bytes = 0;  // st_size
    int64_t mtimeNs = 0; // st_mtim in nanoseconds since the epoch
};

class FileHashCache {
public:
    virtual ~FileHashCache() = default;
    // The digest (64 lowercase hex) recorded for exactly this stamp; nullopt when none, when the
    // file's size or mtime differ from the recorded ones, or when the cache cannot be read (a
    // failing cache behaves as an empty one: the caller hashes the file).
    virtual std::optional<std::string> findHash(const FileStamp& stamp) = 0;
    // Records the digest for the stamp, replacing any older one for the path; failures ignored.
    virtual void rememberHash(const FileStamp& stamp, const std::string& sha256Hex) = 0;
};

} // namespace coli::storage
