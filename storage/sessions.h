#pragma once
// The chat history in the Colibri database (schema v2, docs/storage.md "Sessions"): sessions,
// their messages, the statistics of each answered turn (runs), full-text search over titles and
// message text (FTS5), and the last session shown.
//
// A SessionStore is a view over an open Storage's connection (database.h): it holds a reference,
// no handle of its own, and must not outlive the Storage.
//
// Thread-safety: like its Storage, a SessionStore is used only on the thread that opened the
// Storage (docs/design.md rule 6: the app's storage thread). Everything it returns is a plain value
// (session_types.h) that may cross threads.
//
// Failure policy: every function returns a Status / Result whose message names the database file
// and what was being done; nothing throws or aborts. Each write is ONE transaction (all or
// nothing). Errors common to all functions:
//   - Io, isBusy(status) true: the database is locked by another connection (after
//     OpenOptions::busyTimeoutMs). Nothing was written; the caller may retry the same call later.
//   - Io, isBusy(status) false: read-only file or folder, disk full, other I/O failures.
//   - Malformed: the file is damaged, or a stored value is not what this code writes (an unknown
//     role or stop reason, sampling text that is not a JSON object).
// Times given as 0 mean "now" (Unix milliseconds).
#include "core/status.h"
#include "storage/database.h"
#include "storage/session_types.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace coli::storage {

// True when `s` reports a database locked by another connection (SQLite BUSY/LOCKED): a write
// that did nothing and can be retried. False for OK and every other failure.
bool isBusy(const Status& s);

class SessionStore {
public:
    explicit SessionStore(Storage& storage) : m_db(storage) {}

    // --- sessions ---------------------------------------------------------------------------

    // Creates a session from `info` (id and messageCount ignored; createdMs/updatedMs 0 = now).
    // Returns its id (> 0). Errors: common ones.
    Result<int64_t> createSession(const SessionInfo& info);
    // The session with its messageCount. Errors: NotFound (no such session), common ones.
    Result<SessionInfo> session(int64_t id);
    // Every session, most recently updated first (ties: higher id first), each with its
    // messageCount. Errors: common ones.
    Result<std::vector<SessionInfo>> listSessions();
    // Sets the title (does not change updatedMs, so renaming does not reorder the list).
    // Errors: NotFound, common ones.
    Status renameSession(int64_t id, const std::string& title);
    // Records the model the session is now held with (identity from model_identity.h, folder).
    // Does not change updatedMs. Errors: NotFound, common ones.
    Status setSessionModel(int64_t id, const std::string& modelIdentity,
                           const std::string& modelPath);
    // Sets the system prompt, sampling settings and fixed seed (or none); updatedMs = now.
    // Errors: NotFound, common ones.
    Status setSessionSettings(int64_t id, const SessionSettings& settings);
    // Deletes the session with its messages and runs (foreign-key cascade) and its search
    // entries. Errors: NotFound, common ones.
    Status deleteSession(int64_t id);

    // Full-text search over session titles and message text. `query` is what the user typed: it
    // is split at white space and each word is matched as a quoted FTS5 prefix term (so `foo"bar`,
    // `AND`, `NEAR(` or `*` are words to find, never query syntax); a session matches when all
    // words appear in its title or in one of its messages. Matching ignores case and diacritics
    // (unicode61 remove_diacritics 2). Returns at most `limit` sessions, best match first (FTS5
    // bm25; a title match counts twice), each with a snippet of its best match. A query without
    // any word gives no hits. Errors: common ones.
    Result<std::vector<SearchHit>> searchSessions(const std::string& query, size_t limit = 50);

    // --- messages ---------------------------------------------------------------------------

    // The session's messages ordered by position. An unknown session has none.
    // Errors: common ones (Malformed for a stored value this code cannot read).
    Result<std::vector<MessageRecord>> loadMessages(int64_t session);
    // Appends `m` (id ignored; createdMs 0 = now) at m.position and sets the session's updatedMs
    // to its createdMs, in one transaction. Returns the message id.
    // Errors: NotFound (no such session, or m.run names no run of this session),
    // InvalidArgument (position < 0, or taken in this session), common ones.
    Result<int64_t> appendMessage(const MessageRecord& m);
    // Replaces the text of a message being streamed: one UPDATE of one row (and its search
    // entry), no other change; cheap enough every ~2 s. Errors: NotFound, common ones.
    Status updateMessageText(int64_t id, const std::string& text);
    // Saves an answer's final text, why it stopped and its run (or none), and sets the session's
    // updatedMs to now, in one transaction. Errors: NotFound (no such message, or a run not of
    // the message's session), common ones.
    Status finishMessage(int64_t id, const std::string& text, StopReason stopReason,
                         std::optional<int64_t> run = std::nullopt);
    // finishMessage and addRun in ONE transaction: the answer's end and its run are saved
    // together or not at all (a kill between two transactions would leave a run without its
    // answer). `run.session` must be the message's session. Returns the run id.
    // Errors: those of addRun and finishMessage.
    Result<int64_t> finishAnswer(int64_t id, const std::string& text, StopReason stopReason,
                                 const RunRecord& run);
    // Deletes the session's messages at positions >= `position` (edit and resend: what came
    // after the edited message is replaced). Runs stay (they are the session's turn history).
    // Returns the number of messages deleted (0 is not an error). Errors: InvalidArgument
    // (position < 0), common ones.
    Result<int64_t> deleteMessagesFrom(int64_t session, int position);

    // --- runs (one per answered turn) --------------------------------------------------------

    // Stores a turn's statistics (id ignored; createdMs 0 = now); returns the run id.
    // Errors: NotFound (no such session), InvalidArgument (a negative token count or duration,
    // a value that is not finite, counters above 2^63 - 1), common ones.
    Result<int64_t> addRun(const RunRecord& r);
    // The session's runs in the order they were added. Errors: common ones.
    Result<std::vector<RunRecord>> loadRuns(int64_t session);

    // --- the last session shown (kept in the database's app_state table, so it always names a
    // session of this file, also when the app is pointed at another database) ------------------

    // Remembers `id` (nullopt: none). Errors: NotFound (no such session), common ones.
    Status setLastSessionId(std::optional<int64_t> id);
    // The remembered session; nullopt when none was set or it has been deleted since.
    // Errors: common ones.
    Result<std::optional<int64_t>> lastSessionId();

private:
    sqlite3* conn() const { return m_db.m_db; }
    const std::string& file() const { return m_db.m_path; }
    Status requireSession(int64_t id, const std::string& what);
    Status finishMessageImpl(int64_t id, const std::string& text, StopReason stopReason,
                             std::optional<int64_t> runId, bool ownTransaction);
    Result<int64_t> addRunImpl(const RunRecord& r, bool ownTransaction);
    Status requireRunOf(int64_t run, int64_t session, const std::string& what);

    Storage& m_db;
};

} // namespace coli::storage
