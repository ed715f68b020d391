#include "storage/user_pins.h"

#include "storage/sqlite_util.h"

#include <string>

namespace coli::storage {

using detail::expertText;
using detail::nowMs;
using detail::sqliteStatus;
using detail::Stmt;
using detail::Transaction;

Result<UserPinLists> UserPinStore::load(int64_t model) {
    const std::string& file = m_db.m_path;
    const std::string what = "loading user pins";
    Transaction tx(m_db.m_db, file);
    COLI_RETURN_IF_ERROR(tx.begin(what));
    UserPinLists out;
    struct Query {
        const char* sql;
        std::vector<PinnedExpert>* into;
    };
    const Query queries[] = {
        {"SELECT layer, expert, created FROM user_pins WHERE model = ? "
         "ORDER BY created, layer, expert",
         &out.pins},
        {"SELECT layer, expert, created FROM pin_exclusions WHERE model = ? "
         "ORDER BY layer, expert",
         &out.exclusions},
    };
    for (const Query& q : queries) {
        Stmt s;
        COLI_RETURN_IF_ERROR(s.prepare(m_db.m_db, q.sql, file));
        s.bind(1, model);
        int rc;
        while ((rc = s.step()) == SQLITE_ROW)
            q.into->push_back({int(s.int64(0)), int(s.int64(1)), s.int64(2)});
        if (rc != SQLITE_DONE) return sqliteStatus(m_db.m_db, rc, file, what);
    }
    COLI_RETURN_IF_ERROR(tx.commit(what));
    return out;
}

Result<bool> UserPinStore::insert(const char* table, int64_t model, int layer, int expert,
                                  int64_t createdMs, const std::string& what) {
    const std::string& file = m_db.m_path;
    if (layer < 0 || expert < 0)
        return {ErrorCode::InvalidArgument,
                file + ": " + what + ": negative index in " + expertText(layer, expert)};
    Transaction tx(m_db.m_db, file);
    COLI_RETURN_IF_ERROR(tx.begin(what));
    COLI_RETURN_IF_ERROR(m_db.requireModel(model, what));
    const std::string sql = std::string("INSERT OR IGNORE INTO ") + table +
                            "(model, layer, expert, created) VALUES(?, ?, ?, ?)";
    Stmt s;
    COLI_RETURN_IF_ERROR(s.prepare(m_db.m_db, sql.c_str(), file));
    s.bind(1, model);
    s.bind(2, int64_t(layer));
    s.bind(3, int64_t(expert));
    s.bind(4, createdMs != 0 ? createdMs : nowMs());
    const int rc = s.step();
    if (rc != SQLITE_DONE) return sqliteStatus(m_db.m_db, rc, file, what);
    const bool added = sqlite3_changes(m_db.m_db) > 0;
    COLI_RETURN_IF_ERROR(tx.commit(what));
    return added;
}

Result<bool> UserPinStore::pin(int64_t model, int layer, int expert, int64_t createdMs) {
    return insert("user_pins", model, layer, expert, createdMs,
                  "pinning " + expertText(layer, expert));
}

Result<bool> UserPinStore::exclude(int64_t model, int layer, int expert, int64_t createdMs) {
    return insert("pin_exclusions", model, layer, expert, createdMs,
                  "excluding " + expertText(layer, expert) + " from learned pins");
}

Result<bool> UserPinStore::unpin(int64_t model, int layer, int expert) {
    const std::string& file = m_db.m_path;
    const std::string what = "unpinning " + expertText(layer, expert);
    if (layer < 0 || expert < 0)
        return {ErrorCode::InvalidArgument,
                file + ": " + what + ": negative index in " + expertText(layer, expert)};
    Transaction tx(m_db.m_db, file);
    COLI_RETURN_IF_ERROR(tx.begin(what));
    COLI_RETURN_IF_ERROR(m_db.requireModel(model, what));
    Stmt s;
    COLI_RETURN_IF_ERROR(s.prepare(
        m_db.m_db, "DELETE FROM user_pins WHERE model = ? AND layer = ? AND expert = ?", file));
    s.bind(1, model);
    s.bind(2, int64_t(layer));
    s.bind(3, int64_t(expert));
    const int rc = s.step();
    if (rc != SQLITE_DONE) return sqliteStatus(m_db.m_db, rc, file, what);
    const bool removed = sqlite3_changes(m_db.m_db) > 0;
    COLI_RETURN_IF_ERROR(tx.commit(what));
    return removed;
}

Result<int64_t> UserPinStore::resetExclusions(int64_t model) {
    const std::string& file = m_db.m_path;
    const std::string what = "resetting pin exclusions";
    Transaction tx(m_db.m_db, file);
    COLI_RETURN_IF_ERROR(tx.begin(what));
    COLI_RETURN_IF_ERROR(m_db.requireModel(model, what));
    Stmt s;
    COLI_RETURN_IF_ERROR(s.prepare(m_db.m_db, "DELETE FROM pin_exclusions WHERE model = ?", file));
    s.bind(1, model);
    const int rc = s.step();
    if (rc != SQLITE_DONE) return sqliteStatus(m_db.m_db, rc, file, what);
    const int64_t n = sqlite3_changes(m_db.m_db);
    COLI_RETURN_IF_ERROR(tx.commit(what));
    return n;
}

} // namespace coli::storage
