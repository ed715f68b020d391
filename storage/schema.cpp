#include "storage/schema.h"

#include "storage/sqlite_util.h"

#include <set>

namespace coli::storage {

namespace {

// Version 1. Times: created/last_used in Unix seconds; last_seen in tokens of the model's own
// token clock (docs/storage.md "Heat"); heat is a decayed routing count (REAL >= 0).
constexpr const char* kV1 = R"sql(
PRAGMA application_id = 1131375721;
CREATE TABLE models(
    id INTEGER PRIMARY KEY,
    identity TEXT NOT NULL UNIQUE,
    path TEXT NOT NULL,
    created INTEGER NOT NULL,
    last_used INTEGER NOT NULL);
CREATE TABLE expert_usage(
    model INTEGER NOT NULL REFERENCES models(id) ON DELETE CASCADE,
    layer INTEGER NOT NULL CHECK(layer >= 0),
    expert INTEGER NOT NULL CHECK(expert >= 0),
    heat REAL NOT NULL CHECK(heat >= 0),
    last_seen INTEGER NOT NULL CHECK(last_seen >= 0),
    PRIMARY KEY(model, layer, expert)) WITHOUT ROWID;
CREATE TABLE pins(
    model INTEGER NOT NULL REFERENCES models(id) ON DELETE CASCADE,
    layer INTEGER NOT NULL CHECK(layer >= 0),
    expert INTEGER NOT NULL CHECK(expert >= 0),
    tier TEXT NOT NULL CHECK(tier IN ('ram', 'vram')),
    PRIMARY KEY(model, layer, expert)) WITHOUT ROWID;
CREATE TABLE file_hashes(
    path TEXT PRIMARY KEY,
    bytes INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL);
)sql";

struct TableColumns {
    const char* table;
    std::vector<const char*> columns;
};

const std::vector<TableColumns>& expectedTables() {
    static const std::vector<TableColumns> t = {
        {"models", {"id", "identity", "path", "created", "last_used"}},
        {"expert_usage", {"model", "layer", "expert", "heat", "last_seen"}},
        {"pins", {"model", "layer", "expert", "tier"}},
        {"file_hashes", {"path", "bytes", "mtime_ns", "sha256"}},
    };
    return t;
}

} // namespace

static_assert(kApplicationId == 1131375721, "kV1 spells kApplicationId in decimal");

const std::vector<Migration>& schemaMigrations() {
    static const std::vector<Migration> steps = {{1, kV1}};
    return steps;
}

Status validateSchema(sqlite3* db, const std::string& file) {
    for (const TableColumns& t : expectedTables()) {
        detail::Stmt s;
        COLI_RETURN_IF_ERROR(s.prepare(db, "SELECT name FROM pragma_table_info(?)", file));
        s.bind(1, std::string(t.table));
        std::set<std::string> have;
        int rc;
        while ((rc = s.step()) == SQLITE_ROW)
            have.insert(s.text(0));
        if (rc != SQLITE_DONE) return detail::sqliteStatus(db, rc, file, "checking the schema");
        if (have.empty())
            return {ErrorCode::Malformed, file + ": schema version " +
                                              std::to_string(kSchemaVersion) + " but the table '" +
                                              t.table + "' is missing"};
        for (const char* c : t.columns)
            if (!have.count(c))
                return {ErrorCode::Malformed,
                        file + ": table '" + t.table + "' lacks the column '" + c + "'"};
    }
    return {};
}

} // namespace coli::storage
