#include "storage/sqlite_util.h"

#include <cerrno>
#include <chrono>
#include <cstring>

namespace coli::storage::detail {

const char* const kLockedText = "the database is locked by another connection";

Status sqliteStatus(sqlite3* db, int rc, const std::string& file, const std::string& what) {
    const int primary = rc & 0xff;
    std::string detail = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    const int sysErr = db ? sqlite3_system_errno(db) : 0;
    if (sysErr != 0 && primary != SQLITE_BUSY)
        detail += std::string(" (") + std::strerror(sysErr) + ")";
    const std::string head = file + ": " + what + ": ";
    switch (primary) {
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
        return {ErrorCode::Malformed,
                head + "not a SQLite database or damaged (SQLite: " + detail +
                    "); the file is left as it is: move it away to start a new one"};
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return {ErrorCode::Io, head + kLockedText +
                                   " (another Colibri or sqlite3 holds it; SQLite: " + detail +
                                   ")"};
    case SQLITE_READONLY:
    case SQLITE_PERM:
        return {ErrorCode::Io,
                head + "cannot write: the file or its folder is read-only (SQLite: " + detail +
                    ")"};
    case SQLITE_CANTOPEN:
        return {ErrorCode::Io, head +
                                   "cannot open or create the file or its journal in its "
                                   "folder (read-only or missing folder? SQLite: " +
                                   detail + ")"};
    case SQLITE_FULL:
        return {ErrorCode::Io, head + "disk full (SQLite: " + detail + ")"};
    case SQLITE_CONSTRAINT:
        return {ErrorCode::InvalidArgument, head + "constraint failed (SQLite: " + detail + ")"};
    default:
        return {ErrorCode::Io, head + "SQLite error " + std::to_string(rc) + ": " + detail};
    }
}

Status exec(sqlite3* db, const char* sql, const std::string& file, const std::string& what) {
    const int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) return sqliteStatus(db, rc, file, what);
    return {};
}

Stmt::~Stmt() {
    sqlite3_finalize(m_s);
}

Status Stmt::prepare(sqlite3* db, const char* sql, const std::string& file) {
    sqlite3_finalize(m_s);
    m_s = nullptr;
    const int rc = sqlite3_prepare_v2(db, sql, -1, &m_s, nullptr);
    if (rc != SQLITE_OK) return sqliteStatus(db, rc, file, "preparing a statement");
    return {};
}

std::string Stmt::text(int col) const {
    const unsigned char* p = sqlite3_column_text(m_s, col);
    if (!p) return {};
    return std::string(reinterpret_cast<const char*>(p), size_t(sqlite3_column_bytes(m_s, col)));
}

Result<std::optional<int64_t>> queryInt(sqlite3* db, const char* sql, const std::string& file,
                                        const std::string& what) {
    Stmt s;
    COLI_RETURN_IF_ERROR(s.prepare(db, sql, file));
    const int rc = s.step();
    if (rc == SQLITE_DONE) return std::optional<int64_t>();
    if (rc != SQLITE_ROW) return sqliteStatus(db, rc, file, what);
    return std::optional<int64_t>(s.int64(0));
}

Result<std::string> queryText(sqlite3* db, const char* sql, const std::string& file,
                              const std::string& what) {
    Stmt s;
    COLI_RETURN_IF_ERROR(s.prepare(db, sql, file));
    const int rc = s.step();
    if (rc == SQLITE_DONE) return std::string();
    if (rc != SQLITE_ROW) return sqliteStatus(db, rc, file, what);
    return s.text(0);
}

Transaction::~Transaction() {
    if (m_open) sqlite3_exec(m_db, "ROLLBACK", nullptr, nullptr, nullptr);
}

Status Transaction::begin(const std::string& what) {
    COLI_RETURN_IF_ERROR(exec(m_db, "BEGIN IMMEDIATE", m_file, what));
    m_open = true;
    return {};
}

Status Transaction::commit(const std::string& what) {
    COLI_RETURN_IF_ERROR(exec(m_db, "COMMIT", m_file, what));
    m_open = false;
    return {};
}

int64_t nowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string expertText(int layer, int expert) {
    return "layer " + std::to_string(layer) + " expert " + std::to_string(expert);
}

} // namespace coli::storage::detail
