#include "storage/sessions.h"

#include "storage/sqlite_util.h"

#include <bit>
#include <cmath>
#include <limits>

namespace coli::storage {

using detail::nowMs;
using detail::sqliteStatus;
using detail::Stmt;
using detail::Transaction;

namespace {

// Seeds are the engine's uint64; SQLite integers are int64: the same 64 bits are stored.
void bindSeed(Stmt& s, int i, std::optional<uint64_t> seed) {
    if (seed)
        s.bind(i, std::bit_cast<int64_t>(*seed));
    else
        s.bindNull(i);
}

std::optional<uint64_t> columnSeed(const Stmt& s, int col) {
    if (s.isNull(col)) return std::nullopt;
    return std::bit_cast<uint64_t>(s.int64(col));
}

void bindOptional(Stmt& s, int i, std::optional<int64_t> v) {
    if (v)
        s.bind(i, *v);
    else
        s.bindNull(i);
}

std::string idText(const char* kind, int64_t id) {
    return std::string(kind) + " " + std::to_string(id);
}

// Runs a statement that returns no rows.
Status run(sqlite3* db, Stmt& s, const std::string& file, const std::string& what) {
    const int rc = s.step();
    if (rc != SQLITE_DONE) return sqliteStatus(db, rc, file, what);
    return {};
}

// What the user typed -> an FTS5 query: each white-space-separated word becomes a quoted string
// (a '"' inside doubled, the only escape FTS5 strings have) followed by '*' (a prefix match), so
// no word is ever read as an operator, column filter or syntax. Empty when there is no word.
std::string ftsQuery(const std::string& typed) {
    std::string out, word;
    auto flush = [&] {
        if (word.empty()) return;
        if (!out.empty()) out += ' ';
        out += '"';
        for (char c : word) {
            if (c == '"') out += '"';
            out += c;
        }
        out += "\"*";
        word.clear();
    };
    for (char c : typed) {
        const unsigned char u = static_cast<unsigned char>(c);
        if (u == 0 || u == ' ' || (u >= '\t' && u <= '\r'))
            flush();
        else
            word += c;
    }
    flush();
    return out;
}

const char* kSessionColumns = "s.id, s.title, s.model_identity, s.model_path, s.created, "
                              "s.updated, s.system_prompt, s.sampling, s.seed, "
                              "(SELECT count(*) FROM messages m WHERE m.session = s.id)";

Result<SessionInfo> readSession(const Stmt& s, const std::string& file) {
    SessionInfo info;
    info.id = s.int64(0);
    info.title = s.text(1);
    info.modelIdentity = s.text(2);
    info.modelPath = s.text(3);
    info.createdMs = s.int64(4);
    info.updatedMs = s.int64(5);
    info.systemPrompt = s.text(6);
    auto sampling = samplingFromJson(s.text(7));
    if (!sampling)
        return {ErrorCode::Malformed, file + ": session " + std::to_string(info.id) +
                                          " has sampling settings that are not a JSON object "
                                          "of numbers: " +
                                          s.text(7)};
    info.sampling = *sampling;
    info.seed = columnSeed(s, 8);
    info.messageCount = s.int64(9);
    return info;
}

const char* kMessageColumns =
    "id, session, position, role, text, created, stop_reason, seed, sampling, run";

Result<MessageRecord> readMessage(const Stmt& s, const std::string& file) {
    MessageRecord m;
    m.id = s.int64(0);
    m.session = s.int64(1);
    m.position = int(s.int64(2));
    const std::string where = file + ": message " + std::to_string(m.id) + " of session " +
                              std::to_string(m.session) + " ";
    auto role = parseRole(s.text(3));
    if (!role) return {ErrorCode::Malformed, where + "has the unknown role '" + s.text(3) + "'"};
    m.role = *role;
    m.text = s.text(4);
    m.createdMs = s.int64(5);
    if (!s.isNull(6)) {
        auto stop = parseStopReason(s.text(6));
        if (!stop)
            return {ErrorCode::Malformed,
                    where + "has the unknown stop reason '" + s.text(6) + "'"};
        m.stopReason = *stop;
    }
    m.seed = columnSeed(s, 7);
    if (!s.isNull(8)) {
        auto sampling = samplingFromJson(s.text(8));
        if (!sampling)
            return {ErrorCode::Malformed, where +
                                              "has sampling settings that are not a JSON object "
                                              "of numbers: " +
                                              s.text(8)};
        m.sampling = *sampling;
    }
    if (!s.isNull(9)) m.run = s.int64(9);
    return m;
}

} // namespace

bool isBusy(const Status& s) {
    return s.code() == ErrorCode::Io && s.message().find(detail::kLockedText) != std::string::npos;
}

Status SessionStore::requireSession(int64_t id, const std::string& what) {
    Stmt s;
    COLI_RETURN_IF_ERROR(s.prepare(conn(), "SELECT 1 FROM sessions WHERE id = ?", file()));
    s.bind(1, id);
    const int rc = s.step();
    if (rc == SQLITE_DONE)
        return {ErrorCode::NotFound, file() + ": " + what + ": no " + idText("session", id)};
    if (rc != SQLITE_ROW) return sqliteStatus(conn(), rc, file(), what);
    return {};
}

Status SessionStore::requireRunOf(int64_t run, int64_t session, const std::string& what) {
    Stmt s;
    COLI_RETURN_IF_ERROR(
        s.prepare(conn(), "SELECT 1 FROM runs WHERE id = ? AND session = ?", file()));
    s.bind(1, run);
    s.bind(2, session);
    const int rc = s.step();
    if (rc == SQLITE_DONE)
        return {ErrorCode::NotFound, file() + ": " + what + ": no " + idText("run", run) + " in " +
                                         idText("session", session)};
    if (rc != SQLITE_ROW) return sqliteStatus(conn(), rc, file(), what);
    return {};
}

// --- sessions ---------------------------------------------------------------------------------

Result<int64_t> SessionStore::createSession(const SessionInfo& info) {
    const std::string what = "creating a session";
    const int64_t created = info.createdMs != 0 ? info.createdMs : nowMs();
    const int64_t updated = info.updatedMs != 0 ? info.updatedMs : created;
    Stmt s;
    COLI_RETURN_IF_ERROR(
        s.prepare(conn(),
                  "INSERT INTO sessions(title, model_identity, model_path, created, updated, "
                  "system_prompt, sampling, seed) VALUES(?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                  file()));
    s.bind(1, info.title);
    s.bind(2, info.modelIdentity);
    s.bind(3, info.modelPath);
    s.bind(4, created);
    s.bind(5, updated);
    s.bind(6, info.systemPrompt);
    s.bind(7, samplingToJson(info.sampling));
    bindSeed(s, 8, info.seed);
    const int rc = s.step();
    if (rc != SQLITE_ROW) return sqliteStatus(conn(), rc, file(), what);
    const int64_t id = s.int64(0);
    COLI_RETURN_IF_ERROR(run(conn(), s, file(), what)); // runs the statement to its end: commits
    return id;
}

Result<SessionInfo> SessionStore::session(int64_t id) {
    const std::string what = "reading " + idText("session", id);
    Stmt s;
    const std::string sql =
        std::string("SELECT ") + kSessionColumns + " FROM sessions s WHERE " + "s.id = ?";
    COLI_RETURN_IF_ERROR(s.prepare(conn(), sql.c_str(), file()));
    s.bind(1, id);
    const int rc = s.step();
    if (rc == SQLITE_DONE) return {ErrorCode::NotFound, file() + ": " + what + ": no such session"};
    if (rc != SQLITE_ROW) return sqliteStatus(conn(), rc, file(), what);
    return readSession(s, file());
}

Result<std::vector<SessionInfo>> SessionStore::listSessions() {
    Stmt s;
    const std::string sql = std::string("SELECT ") + kSessionColumns +
                            " FROM sessions s ORDER BY s.updated DESC, s.id DESC";
    COLI_RETURN_IF_ERROR(s.prepare(conn(), sql.c_str(), file()));
    std::vector<SessionInfo> out;
    int rc;
    while ((rc = s.step()) == SQLITE_ROW) {
        auto info = readSession(s, file());
        if (!info) return info.status();
        out.push_back(std::move(info.value()));
    }
    if (rc != SQLITE_DONE) return sqliteStatus(conn(), rc, file(), "listing sessions");
    return out;
}

namespace {

// Runs an UPDATE/DELETE of one row by id; NotFound when no row has that id.
Status changeOne(sqlite3* db, Stmt& s, const std::string& file, const std::string& what,
                 const std::string& thing) {
    COLI_RETURN_IF_ERROR(run(db, s, file, what));
    if (sqlite3_changes(db) == 0)
        return {ErrorCode::NotFound, file + ": " + what + ": no " + thing};
    return {};
}

} // namespace

Status SessionStore::renameSession(int64_t id, const std::string& title) {
    Stmt s;
    COLI_RETURN_IF_ERROR(s.prepare(conn(), "UPDATE sessions SET title = ? WHERE id = ?", file()));
    s.bind(1, title);
    s.bind(2, id);
    return changeOne(conn(), s, file(), "renaming a session", idText("session", id));
}

Status SessionStore::setSessionModel(int64_t id, const std::string& modelIdentity,
                                     const std::string& modelPath) {
    Stmt s;
    COLI_RETURN_IF_ERROR(s.prepare(
        conn(), "UPDATE sessions SET model_identity = ?, model_path = ? WHERE id = ?", file()));
    s.bind(1, modelIdentity);
    s.bind(2, modelPath);
    s.bind(3, id);
    return changeOne(conn(), s, file(), "setting a session's model", idText("session", id));
}

Status SessionStore::setSessionSettings(int64_t id, const SessionSettings& settings) {
    Stmt s;
    COLI_RETURN_IF_ERROR(s.prepare(conn(),
                                   "UPDATE sessions SET system_prompt = ?, sampling = ?, seed = ?, "
                                   "updated = max(updated, ?) WHERE id = ?",
                                   file()));
    s.bind(1, settings.systemPrompt);
    s.bind(2, samplingToJson(settings.sampling));
    bindSeed(s, 3, settings.seed);
    s.bind(4, nowMs());
    s.bind(5, id);
    return changeOne(conn(), s, file(), "saving a session's settings", idText("session", id));
}

Status SessionStore::deleteSession(int64_t id) {
    // One statement: the cascade to messages and runs and the search triggers run inside it.
    Stmt s;
    COLI_RETURN_IF_ERROR(s.prepare(conn(), "DELETE FROM sessions WHERE id = ?", file()));
    s.bind(1, id);
    return changeOne(conn(), s, file(), "deleting a session", idText("session", id));
}

Result<std::vector<SearchHit>> SessionStore::searchSessions(const std::string& query,
                                                            size_t limit) {
    const std::string match = ftsQuery(query);
    std::vector<SearchHit> out;
    if (match.empty() || limit == 0) return out;
    // Each session's best match over its title (bm25 doubled: bm25 is negative, lower is better)
    // and its messages; SQLite takes the bare column `snip` from the row that gave min(rank).
    Stmt s;
    COLI_RETURN_IF_ERROR(s.prepare(
        conn(),
        "WITH hits(session, rank, snip) AS ("
        " SELECT rowid, 2.0 * bm25(sessions_fts), snippet(sessions_fts, 0, ?2, ?3, '…', 16)"
        " FROM sessions_fts WHERE sessions_fts MATCH ?1"
        " UNION ALL"
        " SELECT m.session, bm25(messages_fts), snippet(messages_fts, 0, ?2, ?3, '…', 16)"
        " FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid"
        " WHERE messages_fts MATCH ?1)"
        " SELECT session, min(rank) AS best, snip FROM hits GROUP BY session"
        " ORDER BY best, session DESC LIMIT ?4",
        file()));
    s.bind(1, match);
    s.bind(2, std::string(kMatchOpen));
    s.bind(3, std::string(kMatchClose));
    s.bind(4, int64_t(std::min<size_t>(limit, size_t(std::numeric_limits<int64_t>::max()))));
    int rc;
    while ((rc = s.step()) == SQLITE_ROW)
        out.push_back({s.int64(0), s.text(2), s.real(1)});
    if (rc != SQLITE_DONE) return sqliteStatus(conn(), rc, file(), "searching sessions");
    return out;
}

// --- messages ---------------------------------------------------------------------------------

Result<std::vector<MessageRecord>> SessionStore::loadMessages(int64_t session) {
    Stmt s;
    const std::string sql = std::string("SELECT ") + kMessageColumns +
                            " FROM messages WHERE session = ? ORDER BY position";
    COLI_RETURN_IF_ERROR(s.prepare(conn(), sql.c_str(), file()));
    s.bind(1, session);
    std::vector<MessageRecord> out;
    int rc;
    while ((rc = s.step()) == SQLITE_ROW) {
        auto m = readMessage(s, file());
        if (!m) return m.status();
        out.push_back(std::move(m.value()));
    }
    if (rc != SQLITE_DONE)
        return sqliteStatus(conn(), rc, file(),
                            "loading the messages of " + idText("session", session));
    return out;
}

Result<int64_t> SessionStore::appendMessage(const MessageRecord& m) {
    const std::string what = "saving a message of " + idText("session", m.session);
    if (m.position < 0)
        return {ErrorCode::InvalidArgument,
                file() + ": " + what + ": negative position " + std::to_string(m.position)};
    const int64_t created = m.createdMs != 0 ? m.createdMs : nowMs();
    Transaction tx(conn(), file());
    COLI_RETURN_IF_ERROR(tx.begin(what));
    COLI_RETURN_IF_ERROR(requireSession(m.session, what));
    if (m.run) COLI_RETURN_IF_ERROR(requireRunOf(*m.run, m.session, what));
    {
        Stmt taken;
        COLI_RETURN_IF_ERROR(taken.prepare(
            conn(), "SELECT 1 FROM messages WHERE session = ? AND position = ?", file()));
        taken.bind(1, m.session);
        taken.bind(2, int64_t(m.position));
        const int rc = taken.step();
        if (rc == SQLITE_ROW)
            return {ErrorCode::InvalidArgument, file() + ": " + what + ": position " +
                                                    std::to_string(m.position) +
                                                    " is taken (delete from it first)"};
        if (rc != SQLITE_DONE) return sqliteStatus(conn(), rc, file(), what);
    }
    Stmt s;
    COLI_RETURN_IF_ERROR(s.prepare(conn(),
                                   "INSERT INTO messages(session, position, role, text, created, "
                                   "stop_reason, seed, sampling, run) "
                                   "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                                   file()));
    s.bind(1, m.session);
    s.bind(2, int64_t(m.position));
    s.bind(3, std::string(roleName(m.role)));
    s.bind(4, m.text);
    s.bind(5, created);
    if (m.stopReason)
        s.bind(6, std::string(stopReasonName(*m.stopReason)));
    else
        s.bindNull(6);
    bindSeed(s, 7, m.seed);
    if (m.sampling)
        s.bind(8, samplingToJson(*m.sampling));
    else
        s.bindNull(8);
    bindOptional(s, 9, m.run);
    int rc = s.step();
    if (rc != SQLITE_ROW) return sqliteStatus(conn(), rc, file(), what);
    const int64_t id = s.int64(0);
    COLI_RETURN_IF_ERROR(run(conn(), s, file(), what));
    Stmt bump;
    COLI_RETURN_IF_ERROR(
        bump.prepare(conn(), "UPDATE sessions SET updated = max(updated, ?) WHERE id = ?", file()));
    bump.bind(1, created);
    bump.bind(2, m.session);
    COLI_RETURN_IF_ERROR(run(conn(), bump, file(), what));
    COLI_RETURN_IF_ERROR(tx.commit(what));
    return id;
}

Status SessionStore::updateMessageText(int64_t id, const std::string& text) {
    Stmt s;
    COLI_RETURN_IF_ERROR(s.prepare(conn(), "UPDATE messages SET text = ? WHERE id = ?", file()));
    s.bind(1, text);
    s.bind(2, id);
    return changeOne(conn(), s, file(), "saving the text of a message", idText("message", id));
}

Status SessionStore::finishMessage(int64_t id, const std::string& text, StopReason stopReason,
                                   std::optional<int64_t> runId) {
    return finishMessageImpl(id, text, stopReason, runId, true);
}

Result<int64_t> SessionStore::finishAnswer(int64_t id, const std::string& text,
                                           StopReason stopReason, const RunRecord& run) {
    const std::string what = "saving the end of " + idText("message", id) + " with its run";
    Transaction tx(conn(), file());
    COLI_RETURN_IF_ERROR(tx.begin(what));
    auto runId = addRunImpl(run, false);
    if (!runId) return runId.status();
    COLI_RETURN_IF_ERROR(finishMessageImpl(id, text, stopReason, *runId, false));
    COLI_RETURN_IF_ERROR(tx.commit(what));
    return *runId;
}

Status SessionStore::finishMessageImpl(int64_t id, const std::string& text, StopReason stopReason,
                                       std::optional<int64_t> runId, bool ownTransaction) {
    const std::string what = "saving the end of " + idText("message", id);
    Transaction tx(conn(), file());
    if (ownTransaction) COLI_RETURN_IF_ERROR(tx.begin(what));
    int64_t session = 0;
    {
        Stmt find;
        COLI_RETURN_IF_ERROR(
            find.prepare(conn(), "SELECT session FROM messages WHERE id = ?", file()));
        find.bind(1, id);
        const int rc = find.step();
        if (rc == SQLITE_DONE)
            return {ErrorCode::NotFound, file() + ": " + what + ": no such message"};
        if (rc != SQLITE_ROW) return sqliteStatus(conn(), rc, file(), what);
        session = find.int64(0);
    }
    if (runId) COLI_RETURN_IF_ERROR(requireRunOf(*runId, session, what));
    Stmt s;
    COLI_RETURN_IF_ERROR(s.prepare(
        conn(), "UPDATE messages SET text = ?, stop_reason = ?, run = ? WHERE id = ?", file()));
    s.bind(1, text);
    s.bind(2, std::string(stopReasonName(stopReason)));
    bindOptional(s, 3, runId);
    s.bind(4, id);
    COLI_RETURN_IF_ERROR(run(conn(), s, file(), what));
    Stmt bump;
    COLI_RETURN_IF_ERROR(
        bump.prepare(conn(), "UPDATE sessions SET updated = max(updated, ?) WHERE id = ?", file()));
    bump.bind(1, nowMs());
    bump.bind(2, session);
    COLI_RETURN_IF_ERROR(run(conn(), bump, file(), what));
    return ownTransaction ? tx.commit(what) : Status::ok();
}

Result<int64_t> SessionStore::deleteMessagesFrom(int64_t session, int position) {
    const std::string what = "deleting messages of " + idText("session", session);
    if (position < 0)
        return {ErrorCode::InvalidArgument,
                file() + ": " + what + ": negative position " + std::to_string(position)};
    Stmt s;
    COLI_RETURN_IF_ERROR(
        s.prepare(conn(), "DELETE FROM messages WHERE session = ? AND position >= ?", file()));
    s.bind(1, session);
    s.bind(2, int64_t(position));
    COLI_RETURN_IF_ERROR(run(conn(), s, file(), what));
    return int64_t(sqlite3_changes(conn()));
}

// --- runs -------------------------------------------------------------------------------------

Result<int64_t> SessionStore::addRun(const RunRecord& r) {
    return addRunImpl(r, true);
}

Result<int64_t> SessionStore::addRunImpl(const RunRecord& r, bool ownTransaction) {
    const std::string what = "saving the statistics of a turn of " + idText("session", r.session);
    auto bad = [&](const std::string& problem) -> Result<int64_t> {
        return {ErrorCode::InvalidArgument, file() + ": " + what + ": " + problem};
    };
    const std::pair<const char*, int64_t> counts[] = {{"prompt_tokens", r.promptTokens},
                                                      {"reused_tokens", r.reusedTokens},
                                                      {"generated_tokens", r.generatedTokens}};
    for (const auto& [name, v] : counts)
        if (v < 0) return bad(std::string(name) + " is negative (" + std::to_string(v) + ")");
    const std::pair<const char*, double> reals[] = {{"tokens_per_second", r.tokensPerSecond},
                                                    {"ttft_seconds", r.ttftSeconds},
                                                    {"prefill_seconds", r.prefillSeconds},
                                                    {"decode_seconds", r.decodeSeconds},
                                                    {"attention_s", r.split.attentionS},
                                                    {"expert_ffn_s", r.split.expertFfnS},
                                                    {"expert_wait_s", r.split.expertWaitS},
                                                    {"sampling_s", r.split.samplingS},
                                                    {"other_s", r.split.otherS}};
    for (const auto& [name, v] : reals)
        if (!std::isfinite(v) || v < 0)
            return bad(std::string(name) + " is not a finite value >= 0 (" + std::to_string(v) +
                       ")");
    const RunTierCounters& t = r.tiers;
    const std::pair<const char*, uint64_t> counters[] = {{"routed", t.routed},
                                                         {"hits_pinned", t.hitsPinned},
                                                         {"hits_cache", t.hitsCache},
                                                         {"in_flight_hits", t.inFlightHits},
                                                         {"misses", t.misses},
                                                         {"hits_vram", t.hitsVram},
                                                         {"bytes_read", t.bytesRead},
                                                         {"evictions", t.evictions},
                                                         {"prefetch_issued", t.prefetchIssued},
                                                         {"prefetch_used", t.prefetchUsed},
                                                         {"tier_tokens", t.tokens}};
    for (const auto& [name, v] : counters)
        if (v > uint64_t(std::numeric_limits<int64_t>::max()))
            return bad(std::string(name) + " " + std::to_string(v) + " exceeds 2^63 - 1");
    if (t.hitsVram > t.routed) // routed counts every access, the GPU's included
        return bad("hits_vram " + std::to_string(t.hitsVram) + " exceeds routed " +
                   std::to_string(t.routed));
    if (const auto& p = t.prefill) { // the prompt's part of the turn's counters
        if (p->bytesRead > t.bytesRead)
            return bad("prefill_bytes_read " + std::to_string(p->bytesRead) +
                       " exceeds bytes_read " + std::to_string(t.bytesRead));
        if (p->tokens > t.tokens)
            return bad("prefill_tier_tokens " + std::to_string(p->tokens) +
                       " exceeds tier_tokens " + std::to_string(t.tokens));
    }

    Transaction tx(conn(), file());
    if (ownTransaction) COLI_RETURN_IF_ERROR(tx.begin(what));
    COLI_RETURN_IF_ERROR(requireSession(r.session, what));
    Stmt s;
    COLI_RETURN_IF_ERROR(s.prepare(
        conn(),
        "INSERT INTO runs(session, created, prompt_tokens, reused_tokens, generated_tokens, "
        "tokens_per_second, ttft_seconds, prefill_seconds, decode_seconds, attention_s, "
        "expert_ffn_s, expert_wait_s, sampling_s, other_s, routed, hits_pinned, hits_cache, "
        "in_flight_hits, misses, hits_vram, bytes_read, evictions, prefetch_issued, "
        "prefetch_used, tier_tokens, prefill_bytes_read, prefill_tier_tokens) VALUES(?, ?, ?, ?, "
        "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        file()));
    int i = 1;
    s.bind(i++, r.session);
    s.bind(i++, r.createdMs != 0 ? r.createdMs : nowMs());
    for (const auto& [name, v] : counts)
        s.bind(i++, v);
    for (const auto& [name, v] : reals)
        s.bind(i++, v);
    for (const auto& [name, v] : counters)
        s.bind(i++, int64_t(v));
    if (t.prefill) {
        s.bind(i++, int64_t(t.prefill->bytesRead));
        s.bind(i++, int64_t(t.prefill->tokens));
    } else {
        s.bindNull(i++);
        s.bindNull(i++);
    }
    const int rc = s.step();
    if (rc != SQLITE_ROW) return sqliteStatus(conn(), rc, file(), what);
    const int64_t id = s.int64(0);
    COLI_RETURN_IF_ERROR(run(conn(), s, file(), what));
    if (ownTransaction) COLI_RETURN_IF_ERROR(tx.commit(what));
    return id;
}

Result<std::vector<RunRecord>> SessionStore::loadRuns(int64_t session) {
    Stmt s;
    COLI_RETURN_IF_ERROR(s.prepare(
        conn(),
        "SELECT id, session, created, prompt_tokens, reused_tokens, generated_tokens, "
        "tokens_per_second, ttft_seconds, prefill_seconds, decode_seconds, attention_s, "
        "expert_ffn_s, expert_wait_s, sampling_s, other_s, routed, hits_pinned, hits_cache, "
        "in_flight_hits, misses, hits_vram, bytes_read, evictions, prefetch_issued, "
        "prefetch_used, tier_tokens, prefill_bytes_read, prefill_tier_tokens FROM runs WHERE "
        "session = ? ORDER BY id",
        file()));
    s.bind(1, session);
    std::vector<RunRecord> out;
    int rc;
    while ((rc = s.step()) == SQLITE_ROW) {
        RunRecord r;
        int c = 0;
        r.id = s.int64(c++);
        r.session = s.int64(c++);
        r.createdMs = s.int64(c++);
        r.promptTokens = s.int64(c++);
        r.reusedTokens = s.int64(c++);
        r.generatedTokens = s.int64(c++);
        for (double* d : {&r.tokensPerSecond, &r.ttftSeconds, &r.prefillSeconds, &r.decodeSeconds,
                          &r.split.attentionS, &r.split.expertFfnS, &r.split.expertWaitS,
                          &r.split.samplingS, &r.split.otherS})
            *d = s.real(c++);
        RunTierCounters& t = r.tiers;
        for (uint64_t* u :
             {&t.routed, &t.hitsPinned, &t.hitsCache, &t.inFlightHits, &t.misses, &t.hitsVram,
              &t.bytesRead, &t.evictions, &t.prefetchIssued, &t.prefetchUsed, &t.tokens})
            *u = uint64_t(s.int64(c++));
        if (!s.isNull(c) && !s.isNull(c + 1))
            t.prefill = RunTierCounters::Prefill{uint64_t(s.int64(c)), uint64_t(s.int64(c + 1))};
        out.push_back(r);
    }
    if (rc != SQLITE_DONE)
        return sqliteStatus(conn(), rc, file(),
                            "loading the runs of " + idText("session", session));
    return out;
}

// --- the last session -------------------------------------------------------------------------

Status SessionStore::setLastSessionId(std::optional<int64_t> id) {
    const std::string what = "remembering the last session";
    Transaction tx(conn(), file());
    COLI_RETURN_IF_ERROR(tx.begin(what));
    Stmt s;
    if (id) {
        COLI_RETURN_IF_ERROR(requireSession(*id, what));
        COLI_RETURN_IF_ERROR(s.prepare(conn(),
                                       "INSERT INTO app_state(key, value) VALUES('last_session', "
                                       "?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                                       file()));
        s.bind(1, *id);
    } else {
        COLI_RETURN_IF_ERROR(
            s.prepare(conn(), "DELETE FROM app_state WHERE key = 'last_session'", file()));
    }
    COLI_RETURN_IF_ERROR(run(conn(), s, file(), what));
    return tx.commit(what);
}

Result<std::optional<int64_t>> SessionStore::lastSessionId() {
    auto v = detail::queryInt(conn(),
                              "SELECT s.id FROM app_state a JOIN sessions s ON s.id = a.value "
                              "WHERE a.key = 'last_session'",
                              file(), "reading the last session");
    if (!v) return v.status();
    return v.value();
}

} // namespace coli::storage
