#pragma once
// The Colibri database (docs/storage.md): learned expert heat, pins and a file-hash cache in one
// SQLite file (WAL journal, foreign keys on, `PRAGMA user_version` migrations: schema.h).
//
// Failure policy: every function returns a Status naming the file and the problem; nothing
// crashes, and a database that cannot be used is reported and left byte for byte as it was (a
// damaged file is never truncated or recreated). The caller can go on without learning.
//
// Thread-safety: a Storage owns one connection and must be used only by the thread that opened it
// (docs/design.md threading rule 6: the storage thread). Results are plain values that may cross
// threads. Several Storage objects (threads, processes) may share one file: readers never block
// the writer in WAL mode; a writer that finds the file locked by another writer waits up to
// OpenOptions::busyTimeoutMs, then gets an Io status saying the database is locked.
#include "core/status.h"
#include "storage/file_hash_cache.h"
#include "storage/heat.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct sqlite3;

namespace coli::storage {

enum class PinTier { Ram, Vram };
const char* pinTierName(PinTier t); // "ram", "vram" (the stored spelling)

struct Pin {
    int layer = 0;
    int expert = 0;
    PinTier tier = PinTier::Ram;
};

// Heat of one expert as of the nowTokens given to saveHeat.
struct ExpertHeat {
    int layer = 0;
    int expert = 0;
    double heat = 0; // finite, >= 0
};

struct OpenOptions {
    int busyTimeoutMs = 2000; // how long a write waits for another connection's lock
    bool verify = true;       // PRAGMA quick_check at open (a damaged file is refused, Malformed)
};

class Storage final : public FileHashCache {
public:
    ~Storage() override;
    Storage(const Storage&) = delete;
    Storage& operator=(const Storage&) = delete;

    // Opens or creates the database at `path`, creating missing folders, switching to WAL and
    // migrating it to kSchemaVersion. Errors: InvalidArgument (empty path, or a folder),
    // Io (a folder cannot be created; the file or its folder is read-only; the database is
    // locked; disk full), Malformed (garbage or damaged file, a file of another program, or a
    // missing table/column), Unsupported (schema newer than this code). On any error the file is
    // left as it was.
    static Result<std::unique_ptr<Storage>> open(const std::string& path,
                                                 const OpenOptions& options = {});

    const std::string& path() const { return m_path; }

    // The id of the model with this identity (model_identity.h), created when new; records
    // `modelPath` (where it was last opened) and the time (Unix seconds) as last_used.
    // Errors: InvalidArgument (empty identity), Io (locked, read-only, ...).
    Result<int64_t> modelId(const std::string& identity, const std::string& modelPath);
    // The id for an identity without creating it; nullopt when unknown. Errors: Io.
    Result<std::optional<int64_t>> findModel(const std::string& identity);

    // Every stored heat record of the model, sorted by (layer, expert); heat as saved (not
    // decayed). An unknown model has none. Errors: Io.
    Result<std::vector<HeatRecord>> loadHeat(int64_t model);
    // Upserts the entries' heat as of nowTokens (stored with last_seen = nowTokens) in ONE
    // transaction; experts not in `entries` keep their rows. All or nothing.
    // Errors: InvalidArgument (layer/expert < 0, heat negative or not finite, nowTokens < 0, an
    // expert twice), NotFound (no such model), Io (locked: after busyTimeoutMs, read-only, ...).
    Status saveHeat(int64_t model, const std::vector<ExpertHeat>& entries, int64_t nowTokens);
    // The model's token clock: the largest last_seen stored (0 without heat), where the engine's
    // clock continues after a restart. Errors: Io.
    Result<int64_t> tokenClock(int64_t model);
    // The experts to pin at start: rankHottest (heat.h) over loadHeat. Each record's heat is the
    // decayed heat at nowTokens. Errors: InvalidArgument (halfLifeTokens not > 0), Io.
    Result<std::vector<HeatRecord>> hottest(int64_t model, size_t budgetExperts, int64_t nowTokens,
                                            double halfLifeTokens = kDefaultHalfLifeTokens);

    // Replaces the model's pins with `pins` (one transaction). Errors: InvalidArgument (negative
    // index, an expert twice), NotFound (no such model), Io.
    Status setPins(int64_t model, const std::vector<Pin>& pins);
    // The model's pins sorted by (layer, expert). Errors: Malformed (an unknown tier), Io.
    Result<std::vector<Pin>> getPins(int64_t model);

    // Deletes the heat, learned pins and pin exclusions of one model (or of every model when
    // nullopt), in one transaction, for `coli usage reset`; user pins (user_pins.h) stay, being
    // the user's own choice. Returns the number of rows deleted. Errors: Io.
    Result<int64_t> resetUsage(std::optional<int64_t> model);

    // The file-hash cache (file_hash_cache.h) with errors reported. findFileHash: nullopt when
    // there is no entry for exactly this stamp. Errors: Io.
    Result<std::optional<std::string>> findFileHash(const FileStamp& stamp);
    Status storeFileHash(const FileStamp& stamp, const std::string& sha256Hex);
    std::optional<std::string> findHash(const FileStamp& stamp) override;
    void rememberHash(const FileStamp& stamp, const std::string& sha256Hex) override;

    // Write transactions committed by this connection since open (migrations included, the WAL
    // switch not): lets
    // tests check that a save is one transaction.
    uint64_t commits() const { return m_commits; }

private:
    // The session API (sessions.h) works on this connection, on this Storage's thread; the
    // handle itself is never handed out.
    friend class SessionStore;
    friend class UserPinStore;  // user_pins.h
    friend class AtlasStore;    // the topic probe's tables (atlas_store.h)
    friend class DownloadStore; // download records (downloads.h)

    Storage(sqlite3* db, std::string path) : m_db(db), m_path(std::move(path)) {}
    Status init(const OpenOptions& options);
    Status requireModel(int64_t model, const std::string& what);
    static int onCommit(void* self);

    sqlite3* m_db = nullptr;
    std::string m_path;
    uint64_t m_commits = 0;
};

} // namespace coli::storage
