#include "session_manager.h"

#include "app_settings.h"
#include "learning/learned_usage.h"
#include "runtime/session_kv_dir.h"
#include "storage/model_identity.h"
#include "storage/session_export.h"
#include "storage/user_pins.h"

#include <QDir>
#include <QMetaObject>
#include <QPointer>
#include <QSaveFile>
#include <QStandardPaths>

#include <cmath>
#include <limits>
#include <utility>

namespace coli::app {

namespace {
using storage::MessageRecord;
using storage::Role;
using storage::SessionInfo;

std::string utf8(const QString& s) {
    return s.toStdString();
}

// The engine's stop reasons and how a session stores them; the ChatModel shows the engine's
// spelling (stopReasonName), also for a reopened chat.
constexpr std::pair<StopReason, storage::StopReason> kStopReasons[] = {
    {StopReason::Eos, storage::StopReason::Eos},
    {StopReason::StopString, storage::StopReason::StopString},
    {StopReason::MaxTokens, storage::StopReason::MaxTokens},
    {StopReason::Cancelled, storage::StopReason::Cancelled},
    {StopReason::ContextFull, storage::StopReason::ContextFull},
    {StopReason::Error, storage::StopReason::Failed},
};

storage::StopReason storedStop(StopReason r) {
    for (const auto& [engine, stored] : kStopReasons)
        if (engine == r) return stored;
    return storage::StopReason::Failed;
}

QString shownStop(std::optional<storage::StopReason> r) {
    if (r)
        for (const auto& [engine, stored] : kStopReasons)
            if (stored == *r) return QString::fromLatin1(stopReasonName(engine));
    return {};
}

storage::SamplingSettings samplingOf(const SamplingOverrides& o, int maxNewTokens) {
    storage::SamplingSettings s;
    if (o.temperature) s.temperature = *o.temperature;
    if (o.topK) s.topK = *o.topK;
    if (o.topP) s.topP = *o.topP;
    if (o.minP) s.minP = *o.minP;
    if (o.repeatPenalty) s.repeatPenalty = *o.repeatPenalty;
    if (o.repeatLastN) s.repeatLastN = *o.repeatLastN;
    s.maxNewTokens = maxNewTokens;
    return s;
}

storage::RunRecord runOf(const GenerateStats& s) {
    storage::RunRecord r;
    r.promptTokens = s.promptTokens;
    r.reusedTokens = s.reusedTokens;
    r.generatedTokens = s.generatedTokens;
    r.tokensPerSecond = s.decodeTokensPerSecond;
    r.ttftSeconds = s.ttftSeconds;
    r.prefillSeconds = s.prefillSeconds;
    r.decodeSeconds = s.decodeSeconds;
    r.split.attentionS = s.time.attention;
    r.split.expertFfnS = s.time.expertFfn;
    r.split.expertWaitS = s.time.expertWait;
    r.split.samplingS = s.time.sampling;
    r.split.otherS = s.time.other;
    r.tiers.routed = s.tiers.routed;
    r.tiers.hitsPinned = s.tiers.hitsPinned;
    r.tiers.hitsCache = s.tiers.hitsCache;
    r.tiers.inFlightHits = s.tiers.inFlightHits;
    r.tiers.misses = s.tiers.misses;
    r.tiers.hitsVram = s.tiers.hitsVram; // computed on the GPU (schema version 6)
    r.tiers.bytesRead = s.tiers.bytesRead;
    r.tiers.evictions = s.tiers.evictions;
    r.tiers.prefetchIssued = s.tiers.prefetchIssued;
    r.tiers.prefetchUsed = s.tiers.prefetchUsed;
    r.tiers.tokens = s.tiers.tokens;
    r.tiers.prefill =
        storage::RunTierCounters::Prefill{s.tiersPrefill.bytesRead, s.tiersPrefill.tokens};
    return r;
}
} // namespace

SessionManager::SessionManager(EngineController* controller, StorageWorkerOptions options,
                               QObject* parent)
    : QObject(parent), m_controller(controller), m_path(options.path),
      m_kvDir(options.path.empty() ? std::string() : sessionKvDir(options.path)) {
    m_streamSave.setInterval(2000); // the most of an answer a killed app may lose
    connect(&m_streamSave, &QTimer::timeout, this, &SessionManager::saveStreamingText);
    EngineController::TurnHooks hooks;
    hooks.userMessage = [this](int row) { onUserMessage(row); };
    hooks.answerStarted = [this](int row) { onAnswerStarted(row); };
    hooks.answerResumed = [this](int row) { onAnswerResumed(row); };
    hooks.truncating = [this](int row) { onTruncating(row); };
    hooks.answerEnded = [this](int row, const GenerateStats* s) { onAnswerEnded(row, s); };
    hooks.cleared = [this] { onCleared(); };
    hooks.usageSnapshot = [this](std::shared_ptr<const learning::UsageSnapshot> s) {
        saveUsage(std::move(s));
    };
    hooks.userPinChanged = [this](const UserPinChange& c) { saveUserPin(c); };
    hooks.kvTarget = [this] { return kvTarget(m_current); };
    m_controller->setTurnHooks(std::move(hooks));
    // A chat's KV file saved, opened, deleted or deleted by the cap: its size in the list.
    connect(m_controller, &EngineController::sessionKvChanged, this,
            [this](qint64 session, qint64 bytes) {
                m_list.setKvBytes(session, bytes);
                if (session == m_current) emit currentKvChanged();
            });
    connect(this, &SessionManager::currentSessionChanged, this, &SessionManager::currentKvChanged);
    connect(m_controller, &EngineController::loadStateChanged, this, [this] {
        if (m_controller->loadState() == QLatin1String("ready")) onModelReady();
    });
    // The callback runs on the storage thread: it only posts the value to this (GUI) thread.
    QPointer<SessionManager> self(this);
    m_worker = std::make_unique<StorageWorker>(std::move(options), [self](StorageEvent ev) {
        if (!self) return;
        QMetaObject::invokeMethod(
            self.data(),
            [self, ev = std::move(ev)]() mutable {
                if (self) self->onStorageEvent(std::move(ev));
            },
            Qt::QueuedConnection);
    });
    refreshList();
    // The last session shown comes back at start.
    m_worker->post("Reading the last chat", [self](StorageContext& ctx) -> Status {
        auto last = ctx.sessions().lastSessionId();
        if (!last) return last.status();
        if (*last) {
            const qint64 id = **last;
            ctx.notify([self, id] {
                if (self && self->m_current == 0 &&
                    self->m_controller->chatModel()->rowCount() == 0)
                    self->openSession(id);
            });
        }
        return Status::ok();
    });
}

SessionManager::~SessionManager() {
    shutdown();
    if (m_controller) m_controller->setTurnHooks({});
}

QString SessionManager::titleFrom(const QString& firstMessage) {
    QString line = firstMessage.trimmed().section(QLatin1Char('\n'), 0, 0).simplified();
    constexpr int kMax = 60;
    if (line.size() > kMax) line = line.left(kMax - 1).trimmed() + QStringLiteral("…");
    return line.isEmpty() ? tr("New chat") : line;
}

QString SessionManager::currentTitle() const {
    const int at = m_list.indexOf(m_current);
    return at >= 0 ? m_list.at(at).title : tr("New chat");
}

qint64 SessionManager::realId(qint64 key) const {
    return key < 0 ? m_rekeyed.value(key, key) : key;
}

SessionKvTarget SessionManager::kvTarget(qint64 session) const {
    SessionKvTarget t;
    t.dir = m_kvDir;
    t.session = session;
    t.modelIdentity = utf8(m_modelIdentity);
    t.capBytes = m_kvCap;
    return t;
}

QString SessionManager::currentKvText() const {
    const int at = m_current > 0 ? m_list.indexOf(m_current) : -1;
    const QString size = at >= 0 ? SessionListModel::kvSizeText(m_list.at(at).kvBytes) : QString();
    return size.isEmpty() ? QString() : tr("KV cache %1 on disk").arg(size);
}

void SessionManager::onStorageEvent(StorageEvent ev) {
    switch (ev.kind) {
    case StorageEvent::Kind::Opened:
        break;
    case StorageEvent::Kind::Unavailable:
        setProblem(tr("Chats and learned expert usage are not being saved: %1")
                       .arg(QString::fromStdString(ev.text)));
        break;
    case StorageEvent::Kind::Failed: // "<what> failed: <why, naming the file>"
        setProblem(QString::fromStdString(ev.text));
        break;
    case StorageEvent::Kind::Result:
        if (ev.apply) ev.apply();
        break;
    }
}

void SessionManager::setProblem(const QString& text) {
    if (text == m_problem) return;
    m_problem = text;
    emit storageProblemChanged();
}

void SessionManager::dismissStorageProblem() {
    setProblem({});
}

void SessionManager::refreshList() {
    QPointer<SessionManager> self(this);
    const quint64 edits = m_listEdits;
    const std::string kvDir = m_kvDir;
    m_worker->post("Listing the chats", [self, edits, kvDir](StorageContext& ctx) -> Status {
        auto list = ctx.sessions().listSessions();
        if (!list) return list.status();
        QVector<SessionListModel::Row> rows;
        for (const SessionInfo& s : *list) {
            rows.append(SessionListModel::fromInfo(s));
            if (!kvDir.empty()) rows.back().kvBytes = qint64(sessionKvBytes(kvDir, s.id));
        }
        ctx.notify([self, edits, rows] {
            if (self) self->showList(edits, rows);
        });
        return Status::ok();
    });
}

void SessionManager::showList(quint64 edits, const QVector<SessionListModel::Row>& rows) {
    if (!m_search.isEmpty()) return;
    if (edits != m_listEdits) return refreshList(); // read before a local change: read again
    m_list.setRows(rows);
    emit currentSessionChanged(); // the title may have arrived
    emit listLoaded();
}

void SessionManager::onModelReady() {
    m_modelDir = m_controller->modelDir();
    m_modelIdentity.clear();
    if (m_learnedModel != 0) {
        m_learnedModel = 0;
        emit learningChanged();
    }
    QPointer<SessionManager> self(this);
    const QString qdir = m_modelDir;
    const std::string dir = utf8(m_modelDir);
    // On the storage thread: the model's identity (a checkpoint's shards are hashed once, the
    // digests cached in the database), then what was learned about it; both come back as values.
    m_worker->post(
        "Reading the learned expert usage", [self, qdir, dir](StorageContext& ctx) -> Status {
            auto id = storage::modelIdentity(dir, &ctx.db());
            if (!id)
                return Status::ok(); // not a database problem: sessions still record the folder
            // Every learned pin is offered; the cache keeps those its hot-store can hold.
            auto usage =
                learning::loadLearnedUsage(ctx.db(), *id, dir, std::numeric_limits<int>::max());
            if (!usage) return usage.status();
            auto shared = std::make_shared<const learning::LearnedUsage>(std::move(usage.value()));
            const QString identity = QString::fromStdString(*id);
            ctx.notify([self, qdir, identity, shared] {
                if (!self || qdir != self->m_controller->modelDir()) return; // another model by now
                self->m_modelIdentity = identity;
                // A chat begun before the identity was known records it now.
                if (self->m_current != 0 && self->m_sessionIdentity.isEmpty())
                    self->recordSessionModel();
                // Its turns that ran meanwhile go into its KV file now.
                if (self->m_current > 0)
                    self->m_controller->bindSessionKv(self->m_current,
                                                      self->kvTarget(self->m_current));
                self->m_learnedModel = shared->modelId;
                emit self->learningChanged();
                self->m_controller->applyLearnedUsage(qdir, shared);
                self->updateModelNotice();
            });
            return Status::ok();
        });
    updateModelNotice();
}

void SessionManager::forgetUsage(const QString& modelDir,
                                 std::function<void(const QString&)> done) {
    if (QDir::cleanPath(modelDir) == QDir::cleanPath(m_modelDir) && m_learnedModel != 0) {
        m_learnedModel = 0;
        emit learningChanged();
    }
    QPointer<SessionManager> self(this);
    m_worker->post("Forgetting the learned usage", [self, modelDir, done](StorageContext& ctx) {
        const QString msg = AppSettings::forgetUsageIn(ctx.db(), modelDir);
        ctx.notify([self, msg, done] {
            if (self && done) done(msg);
        });
        return Status::ok();
    });
}

void SessionManager::saveUsage(std::shared_ptr<const learning::UsageSnapshot> snapshot) {
    if (m_learnedModel == 0 || !snapshot) return;
    const int64_t model = m_learnedModel;
    m_worker->post("Saving the learned expert usage", [model, snapshot](StorageContext& ctx) {
        return learning::saveUsage(ctx.db(), model, *snapshot);
    });
}

void SessionManager::saveUserPin(const UserPinChange& c) {
    // Without the model's row (no database, identity unknown) the change holds for this load.
    if (m_learnedModel == 0) return;
    const int64_t model = m_learnedModel;
    m_worker->post("Saving a user pin", [model, c](StorageContext& ctx) -> Status {
        storage::UserPinStore store(ctx.db());
        using Action = UserPinChange::Action;
        switch (c.action) {
        case Action::Pin:
            return store.pin(model, c.layer, c.expert).status();
        case Action::Unpin:
            return store.unpin(model, c.layer, c.expert).status();
        case Action::Exclude:
            return store.exclude(model, c.layer, c.expert).status();
        case Action::ResetExclusions:
            return store.resetExclusions(model).status();
        }
        return Status::ok();
    });
}

void SessionManager::recordSessionModel() {
    m_sessionIdentity = m_modelIdentity;
    const qint64 session = m_current;
    const std::string identity = utf8(m_modelIdentity), dir = utf8(m_modelDir);
    m_worker->post("Saving the chat's model", [session, identity, dir](StorageContext& ctx) {
        const int64_t id = ctx.resolve(session);
        return id == 0 ? Status::ok() : ctx.sessions().setSessionModel(id, identity, dir);
    });
}

void SessionManager::updateModelNotice() {
    QString notice, dir;
    const int at = m_list.indexOf(m_current);
    if (m_current != 0 && at >= 0 && !m_sessionIdentity.isEmpty() && !m_modelIdentity.isEmpty() &&
        m_sessionIdentity != m_modelIdentity) {
        const QString folder = m_list.at(at).modelPath;
        if (QDir(folder).exists()) {
            notice =
                tr("This chat was held with the model in %1, not the one loaded now.").arg(folder);
            dir = folder;
        } else {
            notice = tr("This chat was held with a model whose folder (%1) is gone; answers "
                        "now come from the loaded model.")
                         .arg(folder);
        }
    }
    if (notice == m_modelNotice && dir == m_sessionModelDir) return;
    m_modelNotice = notice;
    m_sessionModelDir = dir;
    emit modelNoticeChanged();
}

void SessionManager::loadSessionModel() {
    if (m_sessionModelDir.isEmpty()) return;
    const qint64 keep = m_current;
    const QString dir = m_sessionModelDir;
    m_controller->loadModel(dir); // clears the conversation: reopen the session after it
    QPointer<SessionManager> self(this);
    auto conn = std::make_shared<QMetaObject::Connection>();
    *conn = connect(m_controller, &EngineController::loadStateChanged, this, [self, keep, conn] {
        if (!self || self->m_controller->loadState() == QLatin1String("loading")) return;
        QObject::disconnect(*conn);
        self->openSession(keep);
    });
}

void SessionManager::ensureSession(const QString& firstText) {
    if (m_current != 0) return;
    const qint64 key = m_worker->newKey();
    m_current = key;
    SessionInfo info;
    info.title = utf8(titleFrom(firstText));
    info.modelIdentity = utf8(m_modelIdentity);
    info.modelPath = utf8(m_modelDir);
    info.systemPrompt = utf8(m_settings.systemPrompt);
    info.sampling = m_settings.sampling;
    info.seed = m_settings.seed;
    m_sessionIdentity = m_modelIdentity;
    SessionListModel::Row row = SessionListModel::fromInfo(info);
    row.id = key;
    row.updated = QDateTime::currentDateTime();
    touchList();
    m_list.upsertTop(row);
    QPointer<SessionManager> self(this);
    m_worker->post("Saving the new chat", [self, key, info](StorageContext& ctx) -> Status {
        auto id = ctx.sessions().createSession(info);
        if (!id) return id.status();
        ctx.bind(key, *id);
        const qint64 real = *id;
        ctx.notify([self, key, real] {
            if (!self) return;
            self->m_rekeyed.insert(key, real);
            // The engine holds the chat's first turn under the key: it saves it as `real`.
            self->m_controller->bindSessionKv(key, self->kvTarget(real));
            self->touchList();
            self->m_list.rekey(key, real);
            if (self->m_current == key) {
                self->m_current = real;
                emit self->currentSessionChanged();
            }
            for (qint64& k : self->m_rowKeys)
                if (k == key) k = real;
        });
        return ctx.sessions().setLastSessionId(*id);
    });
    emit currentSessionChanged();
}

void SessionManager::onUserMessage(int row) {
    const ChatModel::Message& m = m_controller->chatModel()->at(row);
    ensureSession(m.text);
    MessageRecord rec;
    rec.position = row;
    rec.role = Role::User;
    rec.text = utf8(m.text);
    appendRow(row, std::move(rec), "Saving your message");
    const int at = m_list.indexOf(m_current);
    if (at >= 0) {
        SessionListModel::Row r = m_list.at(at);
        r.updated = QDateTime::currentDateTime();
        r.messageCount = row + 1;
        touchList();
        m_list.upsertTop(r);
    }
}

void SessionManager::onAnswerStarted(int row) {
    m_streamRow = row;
    m_savedText.clear();
    MessageRecord rec;
    rec.position = row;
    rec.role = Role::Assistant;
    const SamplingOverrides& o = m_controller->turnSampling(); // the seed this answer uses
    rec.sampling = samplingOf(o, m_controller->maxNewTokens());
    if (o.seed) rec.seed = *o.seed;
    appendRow(row, std::move(rec), "Saving the answer");
    m_streamSave.start();
}

void SessionManager::appendRow(int row, storage::MessageRecord rec, const char* what) {
    // The row gets a provisional key now; the storage thread binds it to the message's id.
    const qint64 session = m_current;
    const qint64 key = m_worker->newKey();
    m_rowKeys.resize(row);
    m_rowKeys.append(key);
    m_worker->post(what, [session, key, rec](StorageContext& ctx) mutable {
        rec.session = ctx.resolve(session);
        auto id = ctx.sessions().appendMessage(rec);
        if (!id) return id.status();
        ctx.bind(key, *id);
        ctx.ack(*id, rec.text);
        return Status::ok();
    });
}

void SessionManager::onAnswerResumed(int row) {
    // "Continue": the same message row streams again; saved like a new answer's text.
    if (row < 0 || row >= m_rowKeys.size()) return;
    m_streamRow = row;
    m_savedText = m_controller->chatModel()->at(row).text;
    m_streamSave.start();
}

void SessionManager::onTruncating(int row) {
    // Regenerate, edit and resend: what comes from `row` on is replaced.
    if (m_current == 0 || row < 0) return;
    m_rowKeys.resize(std::min<qsizetype>(row, m_rowKeys.size()));
    const qint64 session = m_current;
    m_worker->post("Replacing the chat's last messages",
                   [session, row](StorageContext& ctx) -> Status {
                       const int64_t id = ctx.resolve(session);
                       if (id == 0) return Status::ok();
                       auto n = ctx.sessions().deleteMessagesFrom(id, row);
                       return n ? Status::ok() : n.status();
                   });
}

QVariantMap SessionManager::chatSettings() const {
    QVariantMap m;
    m["systemPrompt"] = m_settings.systemPrompt;
    const storage::SamplingSettings& s = m_settings.sampling;
    if (s.temperature) m["temperature"] = *s.temperature;
    if (s.topK) m["topK"] = *s.topK;
    if (s.topP) m["topP"] = *s.topP;
    if (s.minP) m["minP"] = *s.minP;
    if (s.repeatPenalty) m["repeatPenalty"] = *s.repeatPenalty;
    if (s.maxNewTokens) m["maxNewTokens"] = *s.maxNewTokens;
    if (m_settings.seed) m["seed"] = QString::number(*m_settings.seed);
    return m;
}

void SessionManager::setChatSettings(const QVariantMap& m) {
    ChatSettings c;
    c.systemPrompt = m.value("systemPrompt").toString();
    auto real = [&](const char* key, std::optional<double>& out) {
        bool ok = false;
        const double v = m.value(key).toDouble(&ok);
        if (m.contains(key) && ok && std::isfinite(v)) out = v;
    };
    auto integer = [&](const char* key, std::optional<int>& out) {
        bool ok = false;
        const int v = m.value(key).toInt(&ok);
        if (m.contains(key) && ok) out = v;
    };
    real("temperature", c.sampling.temperature);
    integer("topK", c.sampling.topK);
    real("topP", c.sampling.topP);
    real("minP", c.sampling.minP);
    real("repeatPenalty", c.sampling.repeatPenalty);
    integer("maxNewTokens", c.sampling.maxNewTokens);
    bool ok = false;
    const qulonglong seed = m.value("seed").toString().toULongLong(&ok);
    if (ok) c.seed = seed;
    applyChatSettings(c);
    if (m_current == 0) return; // saved with the chat when its first message is sent
    const qint64 session = m_current;
    storage::SessionSettings st{utf8(c.systemPrompt), c.sampling, c.seed};
    m_worker->post("Saving the chat's settings", [session, st](StorageContext& ctx) -> Status {
        const int64_t id = ctx.resolve(session);
        return id == 0 ? Status::ok() : ctx.sessions().setSessionSettings(id, st);
    });
}

void SessionManager::applyChatSettings(const ChatSettings& c) {
    m_settings = c;
    SamplingOverrides o;
    const storage::SamplingSettings& s = c.sampling;
    if (s.temperature) o.temperature = float(*s.temperature);
    if (s.topK) o.topK = *s.topK;
    if (s.topP) o.topP = float(*s.topP);
    if (s.minP) o.minP = float(*s.minP);
    if (s.repeatPenalty) o.repeatPenalty = float(*s.repeatPenalty);
    if (s.repeatLastN) o.repeatLastN = *s.repeatLastN;
    m_controller->setChatSettings(c.systemPrompt, o, c.seed, s.maxNewTokens.value_or(0));
    emit chatSettingsChanged();
}

void SessionManager::saveStreamingText() {
    ChatModel* chat = m_controller->chatModel();
    if (m_streamRow < 0 || m_streamRow >= chat->rowCount() || m_streamRow >= m_rowKeys.size())
        return;
    const QString text = chat->at(m_streamRow).text;
    if (text == m_savedText) return;
    m_savedText = text;
    const qint64 key = m_rowKeys[m_streamRow];
    m_worker->post("Saving the answer", [key, t = utf8(text)](StorageContext& ctx) -> Status {
        const int64_t id = ctx.resolve(key);
        if (id == 0) return Status::ok(); // its row was never created (reported already)
        COLI_RETURN_IF_ERROR(ctx.sessions().updateMessageText(id, t));
        ctx.ack(id, t);
        return Status::ok();
    });
}

void SessionManager::onAnswerEnded(int row, const GenerateStats* stats) {
    m_streamSave.stop();
    m_streamRow = -1;
    ChatModel* chat = m_controller->chatModel();
    if (row < 0 || row >= chat->rowCount() || row >= m_rowKeys.size()) return;
    const storage::StopReason stop =
        stats ? storedStop(stats->stopReason) : storage::StopReason::Failed;
    std::optional<storage::RunRecord> run;
    if (stats) run = runOf(*stats);
    if (run) emit runAdded(*run);
    postFinish(row, stop, std::move(run));
}

void SessionManager::postFinish(int row, storage::StopReason stop,
                                std::optional<storage::RunRecord> run) {
    const qint64 session = m_current;
    const qint64 key = m_rowKeys[row];
    const std::string text = utf8(m_controller->chatModel()->at(row).text);
    auto job = [session, key, text, stop, run](StorageContext& ctx) mutable -> Status {
        const int64_t id = ctx.resolve(key);
        if (id == 0) return Status::ok(); // its row was never created (reported already)
        if (run) { // the end and its run in one transaction: a kill cannot split them
            run->session = ctx.resolve(session);
            auto r = ctx.sessions().finishAnswer(id, text, stop, *run);
            if (!r) return r.status();
        } else {
            COLI_RETURN_IF_ERROR(ctx.sessions().finishMessage(id, text, stop));
        }
        ctx.ack(id, text);
        return Status::ok();
    };
    m_worker->post("Saving the answer", std::move(job));
}

void SessionManager::finishStreamingAsStopped() {
    // An answer cut short (New chat, another chat or model, quit): what was written is kept, as
    // stopped.
    ChatModel* chat = m_controller->chatModel();
    if (m_streamRow >= 0 && m_streamRow < m_rowKeys.size() && m_streamRow < chat->rowCount())
        postFinish(m_streamRow, storage::StopReason::Cancelled, std::nullopt);
    m_streamSave.stop();
    m_streamRow = -1;
}

void SessionManager::onCleared() {
    finishStreamingAsStopped();
    m_rowKeys.clear();
    emit conversationCleared();
    if (m_current != 0) {
        m_current = 0;
        m_sessionIdentity.clear();
        emit currentSessionChanged();
        updateModelNotice();
    }
}

void SessionManager::newSession() {
    m_controller->newChat(); // -> onCleared
    applyChatSettings({});   // a new chat starts from the app's settings
    m_worker->post("Saving the chat list", [](StorageContext& ctx) {
        return ctx.sessions().setLastSessionId(std::nullopt);
    });
}

void SessionManager::openSession(qint64 id) {
    id = realId(id);
    if (id <= 0) return; // not created yet: it is the one on screen
    QPointer<SessionManager> self(this);
    const std::string kvDir = m_kvDir;
    m_worker->post("Opening the chat", [self, id, kvDir](StorageContext& ctx) -> Status {
        auto info = ctx.sessions().session(id);
        if (!info) return info.status();
        auto messages = ctx.sessions().loadMessages(id);
        if (!messages) return messages.status();
        auto runs = ctx.sessions().loadRuns(id);
        if (!runs) return runs.status();
        COLI_RETURN_IF_ERROR(ctx.sessions().setLastSessionId(id));
        QVector<ChatModel::Message> rows;
        QVector<qint64> keys;
        for (const MessageRecord& m : *messages) {
            ChatModel::Message r;
            r.role = QString::fromLatin1(storage::roleName(m.role));
            r.text = QString::fromStdString(m.text);
            r.stopReason = shownStop(m.stopReason);
            if (m.role == Role::Assistant && !m.stopReason)
                r.stopReason = QStringLiteral("cancelled");
            if (m.run)
                for (const storage::RunRecord& run : *runs)
                    if (run.id == *m.run) {
                        r.tokens = int(run.generatedTokens);
                        r.tokensPerSecond = run.tokensPerSecond;
                        r.ttft = run.ttftSeconds;
                        if (run.tiers.routed > 0) {
                            r.hitRate = run.expertHitRate();
                            r.mibPerToken = run.mibReadPerDecodeToken();
                            r.prefillMibPerToken = run.mibReadPerPromptToken();
                        }
                    }
            rows.append(r);
            keys.append(m.id);
        }
        SessionListModel::Row row = SessionListModel::fromInfo(*info);
        if (!kvDir.empty()) row.kvBytes = qint64(sessionKvBytes(kvDir, id));
        const QVector<storage::RunRecord> turnRuns(runs->begin(), runs->end());
        const ChatSettings settings{QString::fromStdString(info->systemPrompt), info->sampling,
                                    info->seed};
        ctx.notify([self, id, rows, keys, row, turnRuns, settings] {
            if (!self) return;
            self->finishStreamingAsStopped(); // an answer being written is kept, stopped
            self->m_controller->showConversation(rows);
            self->applyChatSettings(settings);
            emit self->runsLoaded(turnRuns);
            self->m_rowKeys = keys;
            self->m_streamRow = -1;
            self->m_current = id;
            self->m_sessionIdentity = row.modelIdentity;
            if (self->m_list.indexOf(id) < 0 && self->m_search.isEmpty()) {
                self->touchList();
                self->m_list.upsertTop(row);
            }
            self->m_list.setKvBytes(id, row.kvBytes); // as on disk now
            emit self->currentSessionChanged();
            self->updateModelNotice();
            emit self->sessionOpened(id);
        });
        return Status::ok();
    });
}

void SessionManager::renameSession(qint64 id, const QString& title) {
    const QString t = title.simplified();
    if (t.isEmpty()) return;
    touchList();
    m_list.rename(id, t);
    if (realId(id) == m_current || id == m_current) emit currentSessionChanged();
    m_worker->post("Renaming the chat", [id, t = utf8(t)](StorageContext& ctx) -> Status {
        const int64_t real = ctx.resolve(id);
        return real == 0 ? Status::ok() : ctx.sessions().renameSession(real, t);
    });
}

void SessionManager::deleteSession(qint64 id) {
    const bool current = realId(id) == m_current || id == m_current;
    touchList();
    m_list.remove(id);
    m_list.remove(realId(id));
    if (current) m_controller->newChat(); // -> onCleared
    // Its KV file goes on the engine thread, after the answer in progress saved it (a chat not
    // created yet has none: the engine saves a chat's turns only once it has its id).
    if (const qint64 real = realId(id); real > 0 && !m_kvDir.empty())
        m_controller->deleteSessionKv(kvTarget(real));
    m_worker->post("Deleting the chat", [id](StorageContext& ctx) -> Status {
        const int64_t real = ctx.resolve(id);
        return real == 0 ? Status::ok() : ctx.sessions().deleteSession(real);
    });
}

void SessionManager::setSearchText(const QString& text) {
    if (text == m_search) return;
    m_search = text;
    emit searchTextChanged();
    if (text.trimmed().isEmpty()) {
        refreshList();
        return;
    }
    const quint64 serial = ++m_searchSerial;
    const quint64 edits = m_listEdits;
    QPointer<SessionManager> self(this);
    auto job = [self, serial, edits, q = utf8(text),
                kvDir = m_kvDir](StorageContext& ctx) -> Status {
        auto hits = ctx.sessions().searchSessions(q);
        if (!hits) return hits.status();
        QVector<SessionListModel::Row> rows;
        for (const storage::SearchHit& h : *hits) {
            auto info = ctx.sessions().session(h.session);
            if (!info) continue; // deleted meanwhile
            SessionListModel::Row r = SessionListModel::fromInfo(*info);
            if (!kvDir.empty()) r.kvBytes = qint64(sessionKvBytes(kvDir, h.session));
            r.snippet = QString::fromStdString(h.snippet)
                            .replace(QChar(0x02), QStringLiteral("«"))
                            .replace(QChar(0x03), QStringLiteral("»"));
            rows.append(r);
        }
        ctx.notify([self, serial, edits, rows] {
            if (self) self->showSearch(serial, edits, rows);
        });
        return Status::ok();
    };
    m_worker->post("Searching the chats", std::move(job));
}

void SessionManager::showSearch(quint64 serial, quint64 edits,
                                const QVector<SessionListModel::Row>& rows) {
    if (serial != m_searchSerial || m_search.isEmpty()) return; // a newer search runs
    if (edits != m_listEdits) {                                 // stale: search again
        const QString q = m_search;
        m_search.clear();
        return setSearchText(q);
    }
    m_list.setRows(rows);
}

void SessionManager::exportSession(qint64 id, const QUrl& file, const QString& format) {
    const QString path = file.isLocalFile() ? file.toLocalFile() : file.toString();
    const bool json = format.compare(QLatin1String("json"), Qt::CaseInsensitive) == 0;
    QPointer<SessionManager> self(this);
    m_worker->post("Exporting the chat", [self, id, path, json](StorageContext& ctx) -> Status {
        auto report = [&](const QString& error) {
            ctx.notify([self, path, error] {
                if (self) emit self->exported(path, error);
            });
        };
        const int64_t real = ctx.resolve(id);
        auto info = ctx.sessions().session(real);
        if (!info) {
            report(QString::fromStdString(info.status().message()));
            return Status::ok();
        }
        auto messages = ctx.sessions().loadMessages(real);
        auto runs = ctx.sessions().loadRuns(real);
        if (!messages || !runs) {
            report(
                QString::fromStdString((!messages ? messages.status() : runs.status()).message()));
            return Status::ok();
        }
        const std::string text = json ? storage::exportJson(*info, *messages, *runs)
                                      : storage::exportMarkdown(*info, *messages);
        // QSaveFile: the old file stays whole if the write fails half way, and the failure has
        // a reason to show (a missing folder, no permission, a full disk).
        QSaveFile out(path);
        const bool written = out.open(QIODevice::WriteOnly) &&
                             out.write(text.data(), qint64(text.size())) == qint64(text.size()) &&
                             out.commit();
        report(written ? QString() : tr("could not write %1: %2").arg(path, out.errorString()));
        return Status::ok();
    });
}

QUrl SessionManager::exportFolder() const {
    const QString docs = QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation);
    return QUrl::fromLocalFile(!docs.isEmpty() && QDir(docs).exists() ? docs : QDir::homePath());
}

QUrl SessionManager::exportFile(const QString& title, const QString& format) const {
    return QUrl::fromLocalFile(
        QDir(exportFolder().toLocalFile()).filePath(exportFileName(title, format)));
}

QString SessionManager::exportFileName(const QString& title, const QString& format) const {
    QString name;
    for (const QChar c : title) {
        if (c.category() == QChar::Other_Control || QStringLiteral("/\\:*?\"<>|").contains(c))
            continue;
        name += c.isSpace() ? QChar(u' ') : c;
    }
    name = name.simplified();
    while (name.startsWith(u'.')) // not a hidden file
        name.remove(0, 1);
    if (name.isEmpty()) name = QStringLiteral("chat");
    const bool json = format.compare(QLatin1String("json"), Qt::CaseInsensitive) == 0;
    return name + (json ? QStringLiteral(".json") : QStringLiteral(".md"));
}

size_t SessionManager::shutdown() {
    if (!m_worker) return 0;
    if (m_streamRow >= 0) {
        onCleared(); // quitting mid-answer: the text so far is kept as a stopped answer
    }
    const size_t lost = m_worker->shutdown();
    return lost;
}

} // namespace coli::app
