#pragma once
// Internal helpers over the sqlite3 C API: SQLite result codes -> Status with the file named, a
// prepared-statement wrapper and a transaction guard. Not part of the public API.
// Thread-safety: objects belong to the thread that owns the connection.
#include "core/status.h"

#include <cstdint>
#include <optional>
#include <sqlite3.h>
#include <string>

namespace coli::storage::detail {

// The words every "locked by another connection" Status carries (sessions.h isBusy looks for them).
extern const char* const kLockedText;

// A Status for SQLite result `rc` on connection `db` (may be null) while doing `what` to `file`.
// Mapping: NOTADB/CORRUPT -> Malformed ("not a SQLite database or damaged; left untouched"),
// BUSY/LOCKED -> Io ("locked by another connection"), READONLY/PERM/CANTOPEN -> Io (names the
// read-only file or the folder that cannot be written), FULL -> Io ("disk full"),
// CONSTRAINT -> InvalidArgument, anything else -> Io with SQLite's message.
Status sqliteStatus(sqlite3* db, int rc, const std::string& file, const std::string& what);

// Runs `sql` (one or more statements, no results). Errors: as sqliteStatus.
Status exec(sqlite3* db, const char* sql, const std::string& file, const std::string& what);

// One prepared statement. step() returns SQLITE_ROW / SQLITE_DONE or an error code.
class Stmt {
public:
    Stmt() = default;
    ~Stmt();
    Stmt(const Stmt&) = delete;
    Stmt& operator=(const Stmt&) = delete;
    // Errors: as sqliteStatus.
    Status prepare(sqlite3* db, const char* sql, const std::string& file);
    void bind(int i, int64_t v) { sqlite3_bind_int64(m_s, i, v); }
    void bind(int i, double v) { sqlite3_bind_double(m_s, i, v); }
    void bindNull(int i) { sqlite3_bind_null(m_s, i); }
    void bind(int i, const std::string& v) {
        sqlite3_bind_text(m_s, i, v.data(), int(v.size()), SQLITE_TRANSIENT);
    }
    int step() { return sqlite3_step(m_s); }
    void reset() {
        sqlite3_reset(m_s);
        sqlite3_clear_bindings(m_s);
    }
    int64_t int64(int col) const { return sqlite3_column_int64(m_s, col); }
    double real(int col) const { return sqlite3_column_double(m_s, col); }
    std::string text(int col) const;
    bool isNull(int col) const { return sqlite3_column_type(m_s, col) == SQLITE_NULL; }

private:
    sqlite3_stmt* m_s = nullptr;
};

// Runs a one-row, one-column query; nullopt when it returns no row. Errors: as sqliteStatus.
Result<std::optional<int64_t>> queryInt(sqlite3* db, const char* sql, const std::string& file,
                                        const std::string& what);
Result<std::string> queryText(sqlite3* db, const char* sql, const std::string& file,
                              const std::string& what);

// BEGIN IMMEDIATE (takes the write lock up front, so a locked database fails before any work);
// rolls back on destruction unless commit() succeeded.
class Transaction {
public:
    Transaction(sqlite3* db, const std::string& file) : m_db(db), m_file(file) {}
    ~Transaction();
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    Status begin(const std::string& what);
    Status commit(const std::string& what);

private:
    sqlite3* m_db;
    const std::string& m_file;
    bool m_open = false;
};

// Unix time now, in milliseconds (the unit of every v2/v3 time column).
int64_t nowMs();

// "layer L expert E": how messages name one routed expert.
std::string expertText(int layer, int expert);

} // namespace coli::storage::detail
