#include "chat_persistence.h"

#include "options.h"

#include "runtime/session_kv_dir.h"
#include "storage/location.h"
#include "storage/model_identity.h"
#include "storage/sessions.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

namespace coli::cli {

namespace {

// The session named by `idOrTitle` (see ChatPersistence::open); created when none matches.
Result<storage::SessionInfo> findOrCreate(storage::SessionStore& store,
                                          const std::string& idOrTitle, const std::string& identity,
                                          const std::string& dir, bool* created) {
    *created = false;
    const bool numeric = !idOrTitle.empty() && idOrTitle.size() < 19 &&
                         std::all_of(idOrTitle.begin(), idOrTitle.end(),
                                     [](char c) { return c >= '0' && c <= '9'; });
    if (numeric) {
        auto s = store.session(std::stoll(idOrTitle));
        if (s) return s;
        if (s.status().code() != ErrorCode::NotFound) return s.status();
    }
    auto all = store.listSessions(); // most recently updated first
    if (!all) return all.status();
    for (const storage::SessionInfo& s : *all)
        if (s.title == idOrTitle) return s;
    storage::SessionInfo info;
    info.title = idOrTitle;
    info.modelIdentity = identity;
    info.modelPath = dir;
    auto id = store.createSession(info);
    if (!id) return id.status();
    *created = true;
    return store.session(*id);
}

} // namespace

ChatPersistence::~ChatPersistence() = default;

std::unique_ptr<ChatPersistence> ChatPersistence::open(const std::string& dbPath,
                                                       const std::string& idOrTitle,
                                                       const LoadedModel& lm, Session& session,
                                                       const ChatMessage* system,
                                                       std::vector<ChatMessage>* messages) {
    Result<std::string> path = dbPath.empty() ? storage::defaultDatabasePath() : dbPath;
    if (!path) {
        printError(path.status().message());
        return nullptr;
    }
    auto db = storage::Storage::open(*path);
    if (!db) {
        printError(db.status().message());
        return nullptr;
    }
    std::unique_ptr<ChatPersistence> p(new ChatPersistence());
    p->m_db = std::move(db.value());
    auto identity = storage::modelIdentity(lm.dir(), p->m_db.get());
    if (!identity) {
        printError(identity.status().message());
        return nullptr;
    }
    storage::SessionStore store(*p->m_db);
    bool created = false;
    auto info = findOrCreate(store, idOrTitle, *identity, lm.dir(), &created);
    if (!info) {
        printError(info.status().message());
        return nullptr;
    }
    p->m_session = info->id;
    if (!created) {
        if (system)
            printWarning("--system is ignored: session " + std::to_string(info->id) +
                         " keeps its own messages");
        auto stored = store.loadMessages(info->id);
        if (!stored) {
            printError(stored.status().message());
            return nullptr;
        }
        messages->clear();
        for (const storage::MessageRecord& m : *stored) {
            messages->push_back({storage::roleName(m.role), m.text});
            p->m_nextPosition = std::max(p->m_nextPosition, m.position + 1);
        }
        if (Status s = store.setSessionModel(info->id, *identity, lm.dir()); !s)
            printWarning(s.message());
    } else if (system) {
        p->appendMessage("system", system->content);
    }

    // The KV file: restored when it was written by these weights.
    p->m_kvDir = sessionKvDir(*path);
    std::error_code ec;
    std::filesystem::create_directories(p->m_kvDir, ec);
    // A new session's id may be a deleted one's (SQLite reuses row ids): never start from its file.
    if (created)
        if (Status s = removeSessionKv(p->m_kvDir, info->id); !s) printWarning(s.message());
    const ModelConfig& c = lm.model().config();
    const SessionKvKey key{*identity, lm.model().weightsDescription(), c.nLayers, kvShape(c)};
    SessionKvState state;
    std::vector<std::string> notes;
    auto kv = SessionKvFile::open(sessionKvPath(p->m_kvDir, info->id), key, &state, &notes);
    for (const std::string& n : notes)
        printWarning(n);
    if (!kv) {
        printWarning("the KV cache will not be kept: " + kv.status().message());
    } else {
        p->m_kv = std::move(kv.value());
        if (!state.tokens.empty()) {
            if (Status s = session.restore(state.tokens, state.rows); !s)
                printWarning(p->m_kv->path() + ": not restored: " + s.message());
        }
    }
    fmt::print(stderr, "session {} \"{}\": {} ({} messages, {} tokens of KV cache restored)\n",
               info->id, info->title, created ? "new" : "continued", messages->size(),
               session.tokens().size());
    return p;
}

void ChatPersistence::appendMessage(const std::string& role, const std::string& text) {
    storage::SessionStore store(*m_db);
    storage::MessageRecord m;
    m.session = m_session;
    m.position = m_nextPosition;
    m.role = storage::parseRole(role).value_or(storage::Role::User);
    m.text = text;
    if (auto id = store.appendMessage(m); !id)
        printWarning("message not saved: " + id.status().message());
    else
        ++m_nextPosition;
}

void ChatPersistence::endTurn(const std::string& user, const std::string& answer,
                              const Session& session) {
    appendMessage("user", user);
    appendMessage("assistant", answer);
    if (!m_kv) return;
    if (Status s = m_kv->save(session.tokens(), session.kv()); !s) {
        printWarning("KV cache not saved (the conversation's text is): " + s.message());
        return;
    }
    auto evicted = enforceSessionKvCap(m_kvDir, defaultSessionKvCap(m_kvDir), m_session);
    if (!evicted) printWarning(evicted.status().message());
}

void ChatPersistence::reset(const ChatMessage* system, const Session& session) {
    storage::SessionStore store(*m_db);
    if (auto n = store.deleteMessagesFrom(m_session, 0); !n)
        printWarning("messages not cleared: " + n.status().message());
    m_nextPosition = 0;
    if (system) appendMessage("system", system->content);
    if (m_kv)
        if (Status s = m_kv->save(session.tokens(), session.kv()); !s)
            printWarning("KV cache not cleared: " + s.message());
}

} // namespace coli::cli
