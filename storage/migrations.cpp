#include "storage/migrations.h"

#include "storage/sqlite_util.h"

namespace coli::storage {

Result<int> schemaVersion(sqlite3* db, const std::string& file) {
    auto v = detail::queryInt(db, "PRAGMA user_version", file, "reading the schema version");
    if (!v) return v.status();
    return int(v.value().value_or(0));
}

Status applyMigrations(sqlite3* db, const std::vector<Migration>& steps, const std::string& file) {
    for (size_t i = 0; i < steps.size(); ++i) {
        if (steps[i].toVersion != int(i) + 1)
            return {ErrorCode::InvalidArgument,
                    file + ": migration list is not numbered 1, 2, ... (step " + std::to_string(i) +
                        " goes to version " + std::to_string(steps[i].toVersion) + ")"};
    }
    const int latest = int(steps.size());
    for (;;) {
        auto before = schemaVersion(db, file);
        if (!before) return before.status();
        if (before.value() > latest)
            return {ErrorCode::Unsupported,
                    file + ": schema version " + std::to_string(before.value()) +
                        " is newer than this Colibri knows (" + std::to_string(latest) +
                        "); the file is left as it is"};
        if (before.value() == latest) return {};
        detail::Transaction tx(db, file);
        const std::string what =
            "migrating to schema version " + std::to_string(before.value() + 1);
        COLI_RETURN_IF_ERROR(tx.begin(what));
        // Another connection may have migrated between the check and the lock: read it again.
        auto now = schemaVersion(db, file);
        if (!now) return now.status();
        if (now.value() != before.value()) continue;
        const Migration& m = steps[size_t(now.value())];
        COLI_RETURN_IF_ERROR(detail::exec(db, m.sql.c_str(), file, what));
        const std::string bump = "PRAGMA user_version = " + std::to_string(m.toVersion);
        COLI_RETURN_IF_ERROR(detail::exec(db, bump.c_str(), file, what));
        COLI_RETURN_IF_ERROR(tx.commit(what));
    }
}

} // namespace coli::storage
