#include "storage/database.h"

#include "storage/schema.h"
#include "storage/sqlite_util.h"

#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <set>
#include <sqlite3.h>
#include <thread>
#include <utility>

namespace coli::storage {

namespace fs = std::filesystem;
using detail::sqliteStatus;
using detail::Stmt;
using detail::Transaction;

const char* pinTierName(PinTier t) {
    return t == PinTier::Vram ? "vram" : "ram";
}

namespace {

bool validIndex(int layer, int expert) {
    return layer >= 0 && expert >= 0;
}

std::string expertName(int layer, int expert) {
    return "layer " + std::to_string(layer) + " expert " + std::to_string(expert);
}

} // namespace

Storage::~Storage() {
    if (m_db) sqlite3_close_v2(m_db);
}

int Storage::onCommit(void* self) {
    ++static_cast<Storage*>(self)->m_commits;
    return 0; // 0 lets the commit go ahead
}

Result<std::unique_ptr<Storage>> Storage::open(const std::string& path,
                                               const OpenOptions& options) {
    if (path.empty()) return {ErrorCode::InvalidArgument, "database path is empty"};
    std::error_code ec;
    if (fs::is_directory(path, ec))
        return {ErrorCode::InvalidArgument, path + ": is a folder, not a database file"};
    const fs::path parent = fs::path(path).parent_path();
    if (!parent.empty() && !fs::is_directory(parent, ec)) {
        fs::create_directories(parent, ec);
        if (ec)
            return {ErrorCode::Io,
                    path + ": cannot create the folder " + parent.string() + ": " + ec.message()};
    }
    sqlite3* db = nullptr;
    const int rc =
        sqlite3_open_v2(path.c_str(), &db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) {
        Status s = sqliteStatus(db, rc, path, "opening");
        sqlite3_close_v2(db);
        return s;
    }
    std::unique_ptr<Storage> st(new Storage(db, path));
    COLI_RETURN_IF_ERROR(st->init(options));
    return st;
}

Status Storage::init(const OpenOptions& options) {
    sqlite3_busy_timeout(m_db, options.busyTimeoutMs);
    if (sqlite3_db_readonly(m_db, "main") == 1)
        return {ErrorCode::Io, m_path + ": the file is read-only (no write permission); learning "
                                        "needs a writable database"};
    // Everything up to the WAL switch only reads, so a file that is refused stays untouched.
    // One statement, so one snapshot: another connection migrating the file meanwhile cannot
    // show us its tables with the old version.
    int64_t id = 0, version = 0, tables = 0;
    {
        detail::Stmt s;
        COLI_RETURN_IF_ERROR(s.prepare(m_db,
                                       "SELECT (SELECT application_id FROM pragma_application_id), "
                                       "(SELECT user_version FROM pragma_user_version), "
                                       "(SELECT count(*) FROM sqlite_master)",
                                       m_path));
        const int rc = s.step();
        if (rc != SQLITE_ROW) return sqliteStatus(m_db, rc, m_path, "reading the header");
        id = s.int64(0);
        version = s.int64(1);
        tables = s.int64(2);
    }
    if (options.verify && tables > 0) {
        auto check = detail::queryText(m_db, "PRAGMA quick_check", m_path, "checking integrity");
        if (!check) return check.status();
        if (check.value() != "ok")
            return {ErrorCode::Malformed,
                    m_path + ": the database is damaged (quick_check: " + check.value() +
                        "); the file is left as it is: move it away to "
                        "start a new one"};
    }
    if (id != 0 && id != kApplicationId)
        return {ErrorCode::Malformed, m_path +
                                          ": a SQLite database of another program "
                                          "(application_id " +
                                          std::to_string(id) + "); it is left as it is"};
    if (version == 0 && tables > 0)
        return {ErrorCode::Malformed,
                m_path + ": a SQLite database with tables but no Colibri schema version; not a "
                         "Colibri database, it is left as it is"};
    if (version > kSchemaVersion)
        return {ErrorCode::Unsupported, m_path + ": schema version " + std::to_string(version) +
                                            " is newer than this Colibri knows (" +
                                            std::to_string(kSchemaVersion) +
                                            "); the file is left as it is"};

    // The switch upgrades a shared lock; SQLite answers SQLITE_BUSY at once instead of calling the
    // busy handler when another connection does the same (first opens of a new file), so retry.
    Result<std::string> mode = std::string();
    for (int waitedMs = 0;; waitedMs += 10) {
        mode = detail::queryText(m_db, "PRAGMA journal_mode = WAL", m_path,
                                 "switching to the WAL journal");
        const bool busy = !mode && (sqlite3_errcode(m_db) & 0xff) == SQLITE_BUSY;
        if (!busy || waitedMs >= options.busyTimeoutMs) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!mode) return mode.status();
    if (mode.value() != "wal")
        return {ErrorCode::Io, m_path + ": cannot switch to the WAL journal (journal mode stays '" +
                                   mode.value() + "')"};
    COLI_RETURN_IF_ERROR(detail::exec(m_db, "PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL",
                                      m_path, "setting up the connection"));
    // Counted from here: the journal switch above is not a data transaction.
    sqlite3_commit_hook(m_db, &Storage::onCommit, this);
    COLI_RETURN_IF_ERROR(applyMigrations(m_db, schemaMigrations(), m_path));
    return validateSchema(m_db, m_path);
}

Status Storage::requireModel(int64_t model, const std::string& what) {
    Stmt s;
    COLI_RETURN_IF_ERROR(s.prepare(m_db, "SELECT 1 FROM models WHERE id = ?", m_path));
    s.bind(1, model);
    const int rc = s.step();
    if (rc == SQLITE_DONE)
        return {ErrorCode::NotFound,
                m_path + ": " + what + ": no model with id " + std::to_string(model)};
    if (rc != SQLITE_ROW) return sqliteStatus(m_db, rc, m_path, what);
    return {};
}

Result<int64_t> Storage::modelId(const std::string& identity, const std::string& modelPath) {
    if (identity.empty()) return {ErrorCode::InvalidArgument, m_path + ": empty model identity"};
    Stmt s;
    COLI_RETURN_IF_ERROR(s.prepare(m_db,
                                   "INSERT INTO models(identity, path, created, last_used) "
                                   "VALUES(?1, ?2, ?3, ?3) ON CONFLICT(identity) DO UPDATE SET "
                                   "path = excluded.path, last_used = excluded.last_used "
                                   "RETURNING id",
                                   m_path));
    s.bind(1, identity);
    s.bind(2, modelPath);
    s.bind(3, int64_t(std::time(nullptr)));
    const int rc = s.step();
    if (rc != SQLITE_ROW) return sqliteStatus(m_db, rc, m_path, "recording the model");
    const int64_t id = s.int64(0);
    const int done = s.step();
    if (done != SQLITE_DONE) return sqliteStatus(m_db, done, m_path, "recording the model");
    return id;
}

Result<std::optional<int64_t>> Storage::findModel(const std::string& identity) {
    Stmt s;
    COLI_RETURN_IF_ERROR(s.prepare(m_db, "SELECT id FROM models WHERE identity = ?", m_path));
    s.bind(1, identity);
    const int rc = s.step();
    if (rc == SQLITE_DONE) return std::optional<int64_t>();
    if (rc != SQLITE_ROW) return sqliteStatus(m_db, rc, m_path, "looking up a model");
    return std::optional<int64_t>(s.int64(0));
}

Result<std::vector<HeatRecord>> Storage::loadHeat(int64_t model) {
    Stmt s;
    COLI_RETURN_IF_ERROR(s.prepare(m_db,
                                   "SELECT layer, expert, heat, last_seen FROM expert_usage "
                                   "WHERE model = ? ORDER BY layer, expert",
                                   m_path));
    s.bind(1, model);
    std::vector<HeatRecord> out;
    int rc;
    while ((rc = s.step()) == SQLITE_ROW)
        out.push_back({int(s.int64(0)), int(s.int64(1)), s.real(2), s.int64(3)});
    if (rc != SQLITE_DONE) return sqliteStatus(m_db, rc, m_path, "loading expert heat");
    return out;
}

Status Storage::saveHeat(int64_t model, const std::vector<ExpertHeat>& entries, int64_t nowTokens) {
    const std::string what = "saving expert heat";
    if (nowTokens < 0)
        return {ErrorCode::InvalidArgument,
                m_path + ": " + what + ": negative token clock " + std::to_string(nowTokens)};
    std::set<std::pair<int, int>> seen;
    for (const ExpertHeat& e : entries) {
        if (!validIndex(e.layer, e.expert))
            return {ErrorCode::InvalidArgument,
                    m_path + ": " + what + ": negative index in " + expertName(e.layer, e.expert)};
        if (!std::isfinite(e.heat) || e.heat < 0)
            return {ErrorCode::InvalidArgument,
                    m_path + ": " + what + ": heat " + std::to_string(e.heat) + " of " +
                        expertName(e.layer, e.expert) + " is not a finite value >= 0"};
        if (!seen.insert({e.layer, e.expert}).second)
            return {ErrorCode::InvalidArgument,
                    m_path + ": " + what + ": " + expertName(e.layer, e.expert) + " given twice"};
    }
    Transaction tx(m_db, m_path);
    COLI_RETURN_IF_ERROR(tx.begin(what));
    COLI_RETURN_IF_ERROR(requireModel(model, what));
    Stmt s;
    COLI_RETURN_IF_ERROR(
        s.prepare(m_db,
                  "INSERT INTO expert_usage(model, layer, expert, heat, last_seen) "
                  "VALUES(?, ?, ?, ?, ?) ON CONFLICT(model, layer, expert) DO "
                  "UPDATE SET heat = excluded.heat, last_seen = excluded.last_seen",
                  m_path));
    for (const ExpertHeat& e : entries) {
        s.bind(1, model);
        s.bind(2, int64_t(e.layer));
        s.bind(3, int64_t(e.expert));
        s.bind(4, e.heat);
        s.bind(5, nowTokens);
        const int rc = s.step();
        if (rc != SQLITE_DONE) return sqliteStatus(m_db, rc, m_path, what);
        s.reset();
    }
    return tx.commit(what);
}

Result<int64_t> Storage::tokenClock(int64_t model) {
    Stmt s;
    COLI_RETURN_IF_ERROR(s.prepare(
        m_db, "SELECT coalesce(max(last_seen), 0) FROM expert_usage WHERE model = ?", m_path));
    s.bind(1, model);
    const int rc = s.step();
    if (rc != SQLITE_ROW) return sqliteStatus(m_db, rc, m_path, "reading the token clock");
    return s.int64(0);
}

Result<std::vector<HeatRecord>> Storage::hottest(int64_t model, size_t budgetExperts,
                                                 int64_t nowTokens, double halfLifeTokens) {
    if (!(halfLifeTokens > 0))
        return {ErrorCode::InvalidArgument,
                m_path + ": half-life " + std::to_string(halfLifeTokens) + " tokens is not > 0"};
    auto heat = loadHeat(model);
    if (!heat) return heat.status();
    return rankHottest(std::move(heat.value()), budgetExperts, nowTokens, halfLifeTokens);
}

Status Storage::setPins(int64_t model, const std::vector<Pin>& pins) {
    const std::string what = "saving pins";
    std::set<std::pair<int, int>> seen;
    for (const Pin& p : pins) {
        if (!validIndex(p.layer, p.expert))
            return {ErrorCode::InvalidArgument,
                    m_path + ": " + what + ": negative index in " + expertName(p.layer, p.expert)};
        if (!seen.insert({p.layer, p.expert}).second)
            return {ErrorCode::InvalidArgument,
                    m_path + ": " + what + ": " + expertName(p.layer, p.expert) + " given twice"};
    }
    Transaction tx(m_db, m_path);
    COLI_RETURN_IF_ERROR(tx.begin(what));
    COLI_RETURN_IF_ERROR(requireModel(model, what));
    Stmt del;
    COLI_RETURN_IF_ERROR(del.prepare(m_db, "DELETE FROM pins WHERE model = ?", m_path));
    del.bind(1, model);
    int rc = del.step();
    if (rc != SQLITE_DONE) return sqliteStatus(m_db, rc, m_path, what);
    Stmt s;
    COLI_RETURN_IF_ERROR(
        s.prepare(m_db, "INSERT INTO pins(model, layer, expert, tier) VALUES(?, ?, ?, ?)", m_path));
    for (const Pin& p : pins) {
        s.bind(1, model);
        s.bind(2, int64_t(p.layer));
        s.bind(3, int64_t(p.expert));
        s.bind(4, std::string(pinTierName(p.tier)));
        rc = s.step();
        if (rc != SQLITE_DONE) return sqliteStatus(m_db, rc, m_path, what);
        s.reset();
    }
    return tx.commit(what);
}

Result<std::vector<Pin>> Storage::getPins(int64_t model) {
    Stmt s;
    COLI_RETURN_IF_ERROR(s.prepare(
        m_db, "SELECT layer, expert, tier FROM pins WHERE model = ? ORDER BY layer, expert",
        m_path));
    s.bind(1, model);
    std::vector<Pin> out;
    int rc;
    while ((rc = s.step()) == SQLITE_ROW) {
        const std::string tier = s.text(2);
        Pin p{int(s.int64(0)), int(s.int64(1)), PinTier::Ram};
        if (tier == "vram")
            p.tier = PinTier::Vram;
        else if (tier != "ram")
            return {ErrorCode::Malformed, m_path + ": pin of " + expertName(p.layer, p.expert) +
                                              " has the unknown tier '" + tier + "'"};
        out.push_back(p);
    }
    if (rc != SQLITE_DONE) return sqliteStatus(m_db, rc, m_path, "loading pins");
    return out;
}

Result<int64_t> Storage::resetUsage(std::optional<int64_t> model) {
    const std::string what = "resetting usage";
    Transaction tx(m_db, m_path);
    COLI_RETURN_IF_ERROR(tx.begin(what));
    int64_t deleted = 0;
    for (const char* table : {"expert_usage", "pins", "pin_exclusions"}) {
        const std::string sql =
            std::string("DELETE FROM ") + table + (model ? " WHERE model = ?" : "");
        Stmt s;
        COLI_RETURN_IF_ERROR(s.prepare(m_db, sql.c_str(), m_path));
        if (model) s.bind(1, *model);
        const int rc = s.step();
        if (rc != SQLITE_DONE) return sqliteStatus(m_db, rc, m_path, what);
        deleted += sqlite3_changes(m_db);
    }
    COLI_RETURN_IF_ERROR(tx.commit(what));
    return deleted;
}

Result<std::optional<std::string>> Storage::findFileHash(const FileStamp& stamp) {
    Stmt s;
    COLI_RETURN_IF_ERROR(s.prepare(
        m_db, "SELECT sha256 FROM file_hashes WHERE path = ? AND bytes = ? AND mtime_ns = ?",
        m_path));
    s.bind(1, stamp.path);
    s.bind(2, int64_t(stamp.bytes));
    s.bind(3, stamp.mtimeNs);
    const int rc = s.step();
    if (rc == SQLITE_DONE) return std::optional<std::string>();
    if (rc != SQLITE_ROW) return sqliteStatus(m_db, rc, m_path, "reading the file-hash cache");
    return std::optional<std::string>(s.text(0));
}

Status Storage::storeFileHash(const FileStamp& stamp, const std::string& sha256Hex) {
    Stmt s;
    COLI_RETURN_IF_ERROR(s.prepare(m_db,
                                   "INSERT INTO file_hashes(path, bytes, mtime_ns, sha256) "
                                   "VALUES(?, ?, ?, ?) ON CONFLICT(path) DO UPDATE SET "
                                   "bytes = excluded.bytes, mtime_ns = excluded.mtime_ns, "
                                   "sha256 = excluded.sha256",
                                   m_path));
    s.bind(1, stamp.path);
    s.bind(2, int64_t(stamp.bytes));
    s.bind(3, stamp.mtimeNs);
    s.bind(4, sha256Hex);
    const int rc = s.step();
    if (rc != SQLITE_DONE) return sqliteStatus(m_db, rc, m_path, "writing the file-hash cache");
    return {};
}

std::optional<std::string> Storage::findHash(const FileStamp& stamp) {
    auto r = findFileHash(stamp);
    return r ? r.value() : std::nullopt;
}

void Storage::rememberHash(const FileStamp& stamp, const std::string& sha256Hex) {
    (void)storeFileHash(stamp, sha256Hex);
}

} // namespace coli::storage
