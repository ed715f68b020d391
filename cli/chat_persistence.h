#pragma once
// `coli chat --session ID-or-TITLE`: the conversation kept in the app's database (sessions and
// messages, storage/sessions.h) and its KV cache in the session's KV file beside it
// (runtime/session_kv_file.h, runtime/session_kv_dir.h), so that a later `coli chat --session` or
// the app continues it with zero re-prefill. Every failure after the start is a warning: the chat
// goes on, and what was already saved stays.
// Thread-safety: one thread (the CLI's).
#include "runtime/session.h"
#include "runtime/session_kv_file.h"
#include "storage/database.h"

#include <memory>
#include <string>
#include <vector>

namespace coli::cli {

class ChatPersistence {
public:
    // Opens the database (dbPath, or the XDG default when empty) and the session `idOrTitle`: a
    // session id, else the most recently updated session with that title, else a new session with
    // that title. Loads its messages into *messages (a new session: the system message, when
    // given, is stored first) and restores `session` from its KV file when the file's key matches
    // this model and weights. Prints what it did to stderr. Returns null after printing an error
    // when the database or the session cannot be opened (the caller exits).
    static std::unique_ptr<ChatPersistence>
    open(const std::string& dbPath, const std::string& idOrTitle, const LoadedModel& lm,
         Session& session, const ChatMessage* system, std::vector<ChatMessage>* messages);
    ~ChatPersistence();

    // A turn ended: stores the user message and the answer (as shown), then makes the session's
    // KV cache durable in its file and keeps the KV files within their cap.
    void endTurn(const std::string& user, const std::string& answer, const Session& session);
    // /reset: the conversation starts over in the same session (its messages and KV are cleared;
    // `session` was reset).
    void reset(const ChatMessage* system, const Session& session);
    int64_t sessionId() const { return m_session; }

private:
    ChatPersistence() = default;
    void appendMessage(const std::string& role, const std::string& text);
    std::unique_ptr<storage::Storage> m_db;
    std::unique_ptr<SessionKvFile> m_kv;
    std::string m_kvDir;
    int64_t m_session = 0;
    int m_nextPosition = 0;
};

} // namespace coli::cli
