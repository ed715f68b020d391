#pragma once
// The schema migration mechanism: `PRAGMA user_version` holds the schema version of a database
// file; migration N takes a file from version N-1 to N. Each step runs in its own write
// transaction (BEGIN IMMEDIATE) together with `PRAGMA user_version = N`, so a step is applied
// whole or not at all, and two processes opening an old file at once migrate it once.
// The list of the released schema's steps is schemaMigrations() (schema.h).
// Thread-safety: the connection's thread only.
#include "core/status.h"

#include <sqlite3.h>
#include <string>
#include <vector>

namespace coli::storage {

struct Migration {
    int toVersion = 0; // 1, 2, ...: steps[i].toVersion must be i + 1
    std::string sql;   // one or more statements, no BEGIN/COMMIT of their own
};

// Applies every step whose toVersion exceeds the file's user_version, in order. `file` names the
// database in messages. Errors: InvalidArgument (steps not numbered 1, 2, ...), Unsupported (the
// file's version is newer than the last step: written by a newer Colibri; the file is not
// touched), and those of the failing step as detail::sqliteStatus maps them, with the version
// named (that step is rolled back; earlier steps stay).
Status applyMigrations(sqlite3* db, const std::vector<Migration>& steps, const std::string& file);

// The file's `PRAGMA user_version`. Errors: Malformed (not a database), Io.
Result<int> schemaVersion(sqlite3* db, const std::string& file);

} // namespace coli::storage
