#pragma once
// Download records in the Colibri database (schema v4, docs/storage.md "Schema version 4"): one
// record per model download (`coli download`, the app's wizard), keyed by its destination folder,
// with one row per file (its size and Hub hashes, the ETag its .part was started with, the bytes
// done, pending/done), so that a killed process resumes where it stopped and the app can offer to
// resume on its next start. The .part files are the truth for bytes; the record holds what the
// next run needs to trust them (commit, ETag).
//
// A DownloadStore is a view over an open Storage's connection (database.h): it holds a reference,
// no handle of its own, and must not outlive the Storage.
//
// Thread-safety: like its Storage, used only on the thread that opened the Storage. A download
// running on a worker thread opens its own Storage on that thread (WAL: other connections keep
// reading). Results are plain values that may cross threads.
//
// Failure policy: every function returns a Status / Result whose message names the database file
// and what was being done; each call is ONE transaction. Errors common to all: NotFound (no
// record with that id, or no such file in it), InvalidArgument (empty repo/dir, a file listed
// twice), Io (locked after the busy timeout, read-only, disk full), Malformed (a damaged file).
#include "core/status.h"
#include "storage/database.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace coli::storage {

enum class DownloadState { Active, Paused, Done, Failed, Cancelled };
const char* downloadStateName(DownloadState s); // "active", ... (the stored spelling)

enum class DownloadFileState { Pending, Done, Failed };

struct DownloadFileRecord {
    std::string path; // repo path, '/'-separated
    uint64_t size = 0;
    std::string blobId;    // git blob SHA-1
    std::string lfsSha256; // "" for a non-LFS file (stored as NULL)
    std::string etag;      // ETag that started the .part ("" = none yet)
    uint64_t bytesDone = 0;
    DownloadFileState state = DownloadFileState::Pending;
    bool operator==(const DownloadFileRecord&) const = default;
};

struct DownloadRecord {
    int64_t id = 0;
    std::string repo;                  // "owner/name"
    std::string revision;              // as asked
    std::string commit;                // the commit it resolved to (40 hex); all files come from it
    std::string endpoint;              // the Hub's base URL
    std::string dir;                   // absolute destination folder (unique among records)
    std::vector<std::string> includes; // --include globs (empty: every file)
    DownloadState state = DownloadState::Active;
    std::string message;                   // why it paused or failed, in words
    int64_t createdMs = 0;                 // Unix ms (0 in create(): now)
    int64_t updatedMs = 0;                 // Unix ms, set by every change
    std::vector<DownloadFileRecord> files; // by path
};

class DownloadStore {
public:
    explicit DownloadStore(Storage& storage) : m_db(storage) {}

    // Stores `rec` and its files as a new record, replacing any record of the same dir (and its
    // files). Returns the new id.
    Result<int64_t> create(const DownloadRecord& rec);
    // The record of `dir` with its files; nullopt when there is none.
    Result<std::optional<DownloadRecord>> findByDir(const std::string& dir);
    // Records without their files, most recently updated first; unfinishedOnly: active and
    // paused ones (what a restarted app offers to resume).
    Result<std::vector<DownloadRecord>> list(bool unfinishedOnly = false);
    // Sets the record's state and message (updated = now).
    Status setState(int64_t id, DownloadState state, const std::string& message = "");
    // Updates one file's resume state (updated = now on the record).
    Status updateFile(int64_t id, const std::string& path, const std::string& etag,
                      uint64_t bytesDone, DownloadFileState state);
    // Deletes the record and its files; false when there was none.
    Result<bool> remove(int64_t id);

private:
    Result<std::vector<DownloadFileRecord>> loadFiles(int64_t id);
    Storage& m_db;
};

} // namespace coli::storage
