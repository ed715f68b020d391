#include "storage/downloads.h"

#include "storage/sqlite_util.h"

#include <nlohmann/json.hpp>

#include <set>

namespace coli::storage {

using detail::nowMs;
using detail::sqliteStatus;
using detail::Stmt;
using detail::Transaction;

namespace {

const char* fileStateName(DownloadFileState s) {
    switch (s) {
    case DownloadFileState::Pending:
        return "pending";
    case DownloadFileState::Done:
        return "done";
    case DownloadFileState::Failed:
        return "failed";
    }
    return "pending";
}

DownloadFileState fileStateFrom(const std::string& s) {
    if (s == "done") return DownloadFileState::Done;
    if (s == "failed") return DownloadFileState::Failed;
    return DownloadFileState::Pending;
}

DownloadState stateFrom(const std::string& s) {
    for (DownloadState d : {DownloadState::Active, DownloadState::Paused, DownloadState::Done,
                            DownloadState::Failed, DownloadState::Cancelled})
        if (s == downloadStateName(d)) return d;
    return DownloadState::Failed;
}

constexpr const char* kRecordColumns =
    "id, repo, revision, commit_sha, endpoint, dir, includes, state, message, created, updated";

DownloadRecord recordFrom(const Stmt& s) {
    DownloadRecord r;
    r.id = s.int64(0);
    r.repo = s.text(1);
    r.revision = s.text(2);
    r.commit = s.text(3);
    r.endpoint = s.text(4);
    r.dir = s.text(5);
    const auto inc = nlohmann::json::parse(s.text(6), nullptr, false);
    if (inc.is_array())
        for (const auto& g : inc)
            if (g.is_string()) r.includes.push_back(g.get<std::string>());
    r.state = stateFrom(s.text(7));
    r.message = s.text(8);
    r.createdMs = s.int64(9);
    r.updatedMs = s.int64(10);
    return r;
}

} // namespace

const char* downloadStateName(DownloadState s) {
    switch (s) {
    case DownloadState::Active:
        return "active";
    case DownloadState::Paused:
        return "paused";
    case DownloadState::Done:
        return "done";
    case DownloadState::Failed:
        return "failed";
    case DownloadState::Cancelled:
        return "cancelled";
    }
    return "failed";
}

Result<int64_t> DownloadStore::create(const DownloadRecord& rec) {
    const std::string& file = m_db.m_path;
    const std::string what = "recording the download of " + rec.repo + " into " + rec.dir;
    if (rec.repo.empty() || rec.dir.empty())
        return Status(ErrorCode::InvalidArgument, file + ": " + what + ": empty repo or folder");
    std::set<std::string> seen;
    for (const auto& f : rec.files)
        if (!seen.insert(f.path).second)
            return Status(ErrorCode::InvalidArgument,
                          file + ": " + what + ": '" + f.path + "' listed twice");
    Transaction tx(m_db.m_db, file);
    COLI_RETURN_IF_ERROR(tx.begin(what));
    {
        Stmt del;
        COLI_RETURN_IF_ERROR(del.prepare(m_db.m_db, "DELETE FROM downloads WHERE dir = ?", file));
        del.bind(1, rec.dir);
        if (int rc = del.step(); rc != SQLITE_DONE) return sqliteStatus(m_db.m_db, rc, file, what);
    }
    const int64_t now = nowMs();
    Stmt ins;
    COLI_RETURN_IF_ERROR(ins.prepare(m_db.m_db,
                                     "INSERT INTO downloads(repo, revision, commit_sha, endpoint, "
                                     "dir, includes, state, message, "
                                     "created, updated) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                     file));
    ins.bind(1, rec.repo);
    ins.bind(2, rec.revision);
    ins.bind(3, rec.commit);
    ins.bind(4, rec.endpoint);
    ins.bind(5, rec.dir);
    ins.bind(6, nlohmann::json(rec.includes).dump());
    ins.bind(7, std::string(downloadStateName(rec.state)));
    ins.bind(8, rec.message);
    ins.bind(9, rec.createdMs != 0 ? rec.createdMs : now);
    ins.bind(10, now);
    if (int rc = ins.step(); rc != SQLITE_DONE) return sqliteStatus(m_db.m_db, rc, file, what);
    const int64_t id = sqlite3_last_insert_rowid(m_db.m_db);
    Stmt f;
    COLI_RETURN_IF_ERROR(f.prepare(m_db.m_db,
                                   "INSERT INTO download_files(download, path, size, blob_id, "
                                   "lfs_sha256, etag, bytes_done, state) VALUES(?, ?, ?, ?, ?, ?, "
                                   "?, ?)",
                                   file));
    for (const auto& df : rec.files) {
        f.reset();
        f.bind(1, id);
        f.bind(2, df.path);
        f.bind(3, int64_t(df.size));
        f.bind(4, df.blobId);
        if (df.lfsSha256.empty())
            f.bindNull(5);
        else
            f.bind(5, df.lfsSha256);
        f.bind(6, df.etag);
        f.bind(7, int64_t(df.bytesDone));
        f.bind(8, std::string(fileStateName(df.state)));
        if (int rc = f.step(); rc != SQLITE_DONE) return sqliteStatus(m_db.m_db, rc, file, what);
    }
    COLI_RETURN_IF_ERROR(tx.commit(what));
    return id;
}

Result<std::vector<DownloadFileRecord>> DownloadStore::loadFiles(int64_t id) {
    const std::string& file = m_db.m_path;
    Stmt s;
    COLI_RETURN_IF_ERROR(s.prepare(m_db.m_db,
                                   "SELECT path, size, blob_id, lfs_sha256, etag, bytes_done, "
                                   "state FROM download_files WHERE download = ? ORDER BY path",
                                   file));
    s.bind(1, id);
    std::vector<DownloadFileRecord> out;
    int rc;
    while ((rc = s.step()) == SQLITE_ROW) {
        DownloadFileRecord f;
        f.path = s.text(0);
        f.size = uint64_t(s.int64(1));
        f.blobId = s.text(2);
        f.lfsSha256 = s.isNull(3) ? std::string() : s.text(3);
        f.etag = s.text(4);
        f.bytesDone = uint64_t(s.int64(5));
        f.state = fileStateFrom(s.text(6));
        out.push_back(std::move(f));
    }
    if (rc != SQLITE_DONE) return sqliteStatus(m_db.m_db, rc, file, "reading download files");
    return out;
}

Result<std::optional<DownloadRecord>> DownloadStore::findByDir(const std::string& dir) {
    const std::string& file = m_db.m_path;
    const std::string what = "reading the download record of " + dir;
    Transaction tx(m_db.m_db, file);
    COLI_RETURN_IF_ERROR(tx.begin(what));
    Stmt s;
    const std::string sql =
        std::string("SELECT ") + kRecordColumns + " FROM downloads WHERE dir = ?";
    COLI_RETURN_IF_ERROR(s.prepare(m_db.m_db, sql.c_str(), file));
    s.bind(1, dir);
    const int rc = s.step();
    if (rc == SQLITE_DONE) {
        COLI_RETURN_IF_ERROR(tx.commit(what));
        return std::optional<DownloadRecord>();
    }
    if (rc != SQLITE_ROW) return sqliteStatus(m_db.m_db, rc, file, what);
    DownloadRecord r = recordFrom(s);
    auto files = loadFiles(r.id);
    if (!files.isOk()) return files.status();
    r.files = std::move(files.value());
    COLI_RETURN_IF_ERROR(tx.commit(what));
    return std::optional<DownloadRecord>(std::move(r));
}

Result<std::vector<DownloadRecord>> DownloadStore::list(bool unfinishedOnly) {
    const std::string& file = m_db.m_path;
    std::string sql = std::string("SELECT ") + kRecordColumns + " FROM downloads";
    if (unfinishedOnly) sql += " WHERE state IN ('active', 'paused')";
    sql += " ORDER BY updated DESC, id DESC";
    Stmt s;
    COLI_RETURN_IF_ERROR(s.prepare(m_db.m_db, sql.c_str(), file));
    std::vector<DownloadRecord> out;
    int rc;
    while ((rc = s.step()) == SQLITE_ROW)
        out.push_back(recordFrom(s));
    if (rc != SQLITE_DONE) return sqliteStatus(m_db.m_db, rc, file, "listing downloads");
    return out;
}

Status DownloadStore::setState(int64_t id, DownloadState state, const std::string& message) {
    const std::string& file = m_db.m_path;
    const std::string what =
        "setting download " + std::to_string(id) + " " + downloadStateName(state);
    Stmt s;
    COLI_RETURN_IF_ERROR(s.prepare(
        m_db.m_db, "UPDATE downloads SET state = ?, message = ?, updated = ? WHERE id = ?", file));
    s.bind(1, std::string(downloadStateName(state)));
    s.bind(2, message);
    s.bind(3, nowMs());
    s.bind(4, id);
    if (int rc = s.step(); rc != SQLITE_DONE) return sqliteStatus(m_db.m_db, rc, file, what);
    if (sqlite3_changes(m_db.m_db) == 0)
        return {ErrorCode::NotFound, file + ": " + what + ": no such download"};
    return {};
}

Status DownloadStore::updateFile(int64_t id, const std::string& path, const std::string& etag,
                                 uint64_t bytesDone, DownloadFileState state) {
    const std::string& file = m_db.m_path;
    const std::string what = "recording the progress of " + path;
    Transaction tx(m_db.m_db, file);
    COLI_RETURN_IF_ERROR(tx.begin(what));
    Stmt s;
    COLI_RETURN_IF_ERROR(s.prepare(m_db.m_db,
                                   "UPDATE download_files SET etag = ?, bytes_done = ?, state = ? "
                                   "WHERE download = ? AND path = ?",
                                   file));
    s.bind(1, etag);
    s.bind(2, int64_t(bytesDone));
    s.bind(3, std::string(fileStateName(state)));
    s.bind(4, id);
    s.bind(5, path);
    if (int rc = s.step(); rc != SQLITE_DONE) return sqliteStatus(m_db.m_db, rc, file, what);
    if (sqlite3_changes(m_db.m_db) == 0)
        return {ErrorCode::NotFound,
                file + ": " + what + ": download " + std::to_string(id) + " has no such file"};
    Stmt u;
    COLI_RETURN_IF_ERROR(
        u.prepare(m_db.m_db, "UPDATE downloads SET updated = ? WHERE id = ?", file));
    u.bind(1, nowMs());
    u.bind(2, id);
    if (int rc = u.step(); rc != SQLITE_DONE) return sqliteStatus(m_db.m_db, rc, file, what);
    return tx.commit(what);
}

Result<bool> DownloadStore::remove(int64_t id) {
    const std::string& file = m_db.m_path;
    Stmt s;
    COLI_RETURN_IF_ERROR(s.prepare(m_db.m_db, "DELETE FROM downloads WHERE id = ?", file));
    s.bind(1, id);
    if (int rc = s.step(); rc != SQLITE_DONE)
        return sqliteStatus(m_db.m_db, rc, file, "deleting download " + std::to_string(id));
    return sqlite3_changes(m_db.m_db) > 0;
}

} // namespace coli::storage
