#include "engine_controller.h"

#include "runtime/context_fit.h"

#include "tiers/expert_cache.h"
#include "user_messages.h"

#include <QClipboard>
#include <QDir>
#include <QGuiApplication>
#include <QLocale>
#include <QMetaObject>
#include <QRandomGenerator>
#include <algorithm>
#include <vector>

#include <utility>

namespace coli::app {

EngineController::EngineController(WorkerOptions opt, QObject* parent) : QObject(parent) {
    m_params.maxNewTokens = 512;
    m_telemetryTimer.setInterval(33); // ~30 Hz, rule 4
    connect(&m_telemetryTimer, &QTimer::timeout, this, &EngineController::sampleTelemetry);
    m_flushTimer.setSingleShot(true);
    m_flushTimer.setTimerType(Qt::PreciseTimer); // a coarse timer may fire up to 5 % early
    m_flushTimer.setInterval(kFlushIntervalMs);
    connect(&m_flushTimer, &QTimer::timeout, this, &EngineController::flushTick);
    // The wake-up runs on the engine thread: it only posts a queued call (rule 3), once per
    // empty -> non-empty transition of the ring.
    m_worker = std::make_unique<EngineWorker>(opt, [this] {
        QMetaObject::invokeMethod(this, &EngineController::drainEvents, Qt::QueuedConnection);
    });
    m_tiers.setRequests(
        [this](uint64_t bytes) {
            if (m_worker) m_worker->requestBudget(bytes);
        },
        [this](bool on) {
            if (m_worker) m_worker->requestPrefetch(on);
        });
    m_tiers.setVramRequest([this](uint64_t bytes) {
        if (m_worker) m_worker->requestVramBudget(bytes);
    });
    // The Brain draws the same 30 Hz sample (unless the synthetic generator feeds it); "this
    // turn" starts with each answer.
    connect(&m_tiers, &TierMonitor::changed, this, [this] {
        if (!m_brain.synthetic()) m_brain.apply(m_tiers.status());
    });
    // A click on a Brain cell pins or unpins that expert (the synthetic generator takes its own).
    connect(&m_brain, &BrainMonitor::userPinRequested, this, [this](int layer, int expert) {
        if (!m_brain.synthetic()) toggleUserPin(layer, expert);
    });
    connect(this, &EngineController::generatingChanged, this, [this] {
        if (!m_generating || m_brain.synthetic() || !m_worker) return;
        m_tiers.apply(
            m_worker->tierStatus()); // the previous answer's last tokens are not this turn's
        m_brain.startTurn();
    });
    // The tier status changes between answers too (a load, a budget change, pins being read):
    // sampled all the time; a sample whose serial was seen costs one mutex copy.
    m_telemetryTimer.start();
}

EngineController::~EngineController() {
    shutdown();
}

void EngineController::shutdown() {
    if (!m_worker) return;
    m_telemetryTimer.stop();
    m_tokenizer.reset(); // the tokenizer goes with its model (it alone is shared)
    m_worker->quit();    // cancels the running command first, then joins
    m_worker.reset();
    if (m_turnRow >= 0) endTurn();
}

void EngineController::setMaxNewTokens(int n) {
    if (n == m_params.maxNewTokens) return;
    m_params.maxNewTokens = n;
    emit paramsChanged();
}

void EngineController::setGenerateParams(const GenerateParams& p,
                                         const SamplingOverrides& sampling) {
    m_params = p;
    m_sampling = sampling;
    emit paramsChanged();
}

void EngineController::loadModel(const QString& dir) {
    if (!m_worker) return;
    m_worker->post(Command{CommandKind::Cancel});
    if (m_turnRow >= 0) {
        m_chat.fail(m_turnRow, tr("stopped: another model was opened"));
        endTurn();
    }
    if (m_hooks.cleared) m_hooks.cleared();
    m_chat.clear();
    m_tokenizer.reset(); // the old model's: its memory goes with the model being replaced
    // The Cancel above stopped a probe too; its late events are ignored (id mismatch).
    m_probeId = 0;
    m_probeCancel.reset();
    m_answerWaiting = false;
    m_probeDone = m_probeTotal = 0;
    m_probeFigures.clear();
    m_probeError.clear();
    m_probeState = QStringLiteral("idle");
    emit probeChanged();
    m_probeTopics.clear(); // the glue sets the next model's default when it is ready
    if (m_atlasProbe) {
        m_atlasProbe.reset();
        emit atlasProbeChanged();
    }
    Command c{CommandKind::Load};
    c.id = m_loadId = m_nextId++;
    c.load = m_loadSettings;
    c.dir = QDir::cleanPath(dir).toStdString();
    m_modelDir = QDir::cleanPath(dir);
    m_modelName = QDir(m_modelDir).dirName();
    m_modelInfo.clear();
    m_contextLength = 0;
    m_modelDetails.clear();
    emit modelChanged();
    clearError();
    m_loadProgress = 0;
    m_loadStage = tr("starting");
    emit loadProgressChanged();
    setLoadState(QStringLiteral("loading"));
    m_worker->post(std::move(c));
}

void EngineController::openModelFolder(const QUrl& folder) {
    // Remembered by AppSettings once it has loaded (a folder that fails is not reopened).
    loadModel(folder.isLocalFile() ? folder.toLocalFile() : folder.toString());
}

bool EngineController::send(const QString& text) {
    if (!m_worker || text.trimmed().isEmpty() || m_generating || m_loadState != "ready")
        return false;
    // Refused before anything is committed: the composer keeps the text.
    if (const QString tooLong = checkMessageLength(text); !tooLong.isEmpty()) {
        setError(tooLong);
        return false;
    }
    clearError();
    const int userRow = m_chat.appendMessage(QStringLiteral("user"), text);
    if (m_hooks.userMessage) m_hooks.userMessage(userRow);
    return startTurn(-1, m_chatSeed);
}

std::vector<ChatMessage> EngineController::promptMessages(int endRow) const {
    std::vector<ChatMessage> out;
    if (!m_systemPrompt.trimmed().isEmpty())
        out.push_back({"system", m_systemPrompt.toStdString()});
    for (const ChatMessage& m : m_chat.conversation(endRow))
        out.push_back(m);
    return out;
}

bool EngineController::startTurn(int resumeRow, const std::optional<uint64_t>& seed) {
    Command c{CommandKind::Generate};
    c.id = m_turnId = m_nextId++;
    // The rows before the answer (the row being continued is not part of the conversation: its
    // text goes after the generation prompt).
    c.messages = promptMessages(resumeRow >= 0 ? resumeRow : m_chat.rowCount());
    c.params = m_params;
    if (m_chatMaxNewTokens > 0) c.params.maxNewTokens = m_chatMaxNewTokens;
    c.sampling = overlaySampling(m_sampling, m_chatSampling); // the chat's values win
    if (seed) c.sampling.seed = *seed;
    m_turnSampling = c.sampling;
    if (m_hooks.kvTarget) c.kv = m_hooks.kvTarget();
    if (resumeRow >= 0) {
        c.continueText = m_chat.at(resumeRow).text.toStdString();
        m_turnRow = resumeRow;
        m_chat.resume(resumeRow);
        if (m_hooks.answerResumed) m_hooks.answerResumed(resumeRow);
    } else {
        m_turnRow = m_chat.beginAssistant();
        if (m_hooks.answerStarted) m_hooks.answerStarted(m_turnRow);
    }
    m_liveRate = 0;
    emit liveTokensPerSecondChanged();
    setGenerating(true);
    if (probeRunning() && !m_answerWaiting) { // queued behind the probe: the chat says so
        m_answerWaiting = true;
        emit probeChanged();
    }
    m_worker->post(std::move(c));
    return true;
}

bool EngineController::regenerate() {
    const int last = m_chat.rowCount() - 1;
    if (!m_worker || m_generating || m_loadState != "ready" || last < 1 ||
        m_chat.at(last).role != QLatin1String("assistant"))
        return false;
    clearError();
    if (m_hooks.truncating) m_hooks.truncating(last);
    m_chat.truncate(last);
    // A new seed, so the new answer can differ, unless the chat fixes one.
    return startTurn(-1, m_chatSeed
                             ? m_chatSeed
                             : std::optional<uint64_t>(QRandomGenerator::global()->generate64()));
}

bool EngineController::continueAnswer() {
    const int last = m_chat.rowCount() - 1;
    if (!m_worker || m_generating || m_loadState != "ready" || last < 1 ||
        !m_chat.data(m_chat.index(last), ChatModel::CanContinueRole).toBool())
        return false;
    clearError();
    return startTurn(last, m_turnSampling.seed ? m_turnSampling.seed : m_chatSeed);
}

bool EngineController::editAndResend(int row, const QString& text) {
    if (!m_worker || m_generating || m_loadState != "ready" || row < 0 ||
        row >= m_chat.rowCount() || m_chat.at(row).role != QLatin1String("user") ||
        text.trimmed().isEmpty())
        return false;
    if (const QString tooLong = checkMessageLength(text); !tooLong.isEmpty()) {
        setError(tooLong);
        return false;
    }
    if (m_hooks.truncating) m_hooks.truncating(row);
    m_chat.truncate(row);
    return send(text);
}

void EngineController::copyToClipboard(const QString& text) const {
    if (QClipboard* cb = QGuiApplication::clipboard()) cb->setText(text);
}

void EngineController::setChatSettings(const QString& systemPrompt,
                                       const SamplingOverrides& sampling,
                                       std::optional<uint64_t> fixedSeed, int maxNewTokens) {
    m_systemPrompt = systemPrompt;
    m_chatSampling = sampling;
    m_chatSeed = fixedSeed;
    m_chatMaxNewTokens = maxNewTokens;
    emit paramsChanged();
}

void EngineController::setSystemPrompt(const QString& p) {
    if (p == m_systemPrompt) return;
    m_systemPrompt = p;
    emit paramsChanged();
}

void EngineController::stop() {
    // The answer ends when the engine reports it (Finished with stopReason Cancelled), so the
    // text already streamed is kept and the KV cache matches it.
    if (m_worker) m_worker->post(Command{CommandKind::Cancel});
}

void EngineController::newChat() {
    if (!m_worker) return;
    // Cancel stops whatever the engine runs: only an answer, never a model load in progress.
    if (m_turnId != 0) m_worker->post(Command{CommandKind::Cancel});
    if (m_turnRow >= 0) endTurn(); // late events of that turn are ignored (id mismatch)
    if (m_hooks.cleared) m_hooks.cleared();
    m_chat.clear();
    m_worker->post(Command{CommandKind::Reset});
    m_tiers.resetSession();
    resetContextMeter();
    clearError();
}

void EngineController::estimateContextMeter() {
    // A reopened chat: what its last turn held, counted with the tokenizer (the template's
    // wrapping estimated per message), so the meter does not read 0 over a full conversation;
    // with the rolling window's rule (runtime/context_fit.h: while the prompt and the answer's
    // reserve exceed the context, the oldest messages after a system message are left out, whole
    // exchanges, never the last), so a chat past its context reads as the live meter read after
    // that turn, not as the whole conversation capped at the context.
    const int rows = m_chat.rowCount();
    std::vector<int> before(size_t(std::max(rows, 0)) + 1, 0); // tokens of rows [0, i)
    for (int row = 0; row < rows; ++row) {
        const int n = countTokens(m_chat.at(row).text);
        if (n < 0) return resetContextMeter(); // no model loaded: nothing to count with
        before[size_t(row) + 1] = before[size_t(row)] + n + m_promptOverhead;
    }
    const auto sum = [&](size_t from, size_t to) { return before[to] - before[from]; };
    const auto isAssistant = [&](size_t row) {
        return m_chat.at(int(row)).role == QLatin1String("assistant");
    };
    // The last turn's prompt: every message before its answer (the last row, if it is one).
    const bool answered = rows > 0 && isAssistant(size_t(rows - 1));
    const size_t promptEnd = size_t(answered ? rows - 1 : rows);
    const size_t firstDroppable =
        promptEnd > 0 && m_chat.at(0).role == QLatin1String("system") ? 1 : 0;
    const int head = sum(0, firstDroppable);
    const int reserve = std::clamp(m_params.maxNewTokens, 0, std::max(m_contextLength / 2, 0));
    // Fewest dropped that fit, as fitChatToContext finds them (there by binary search).
    size_t kept = firstDroppable;
    for (size_t drop = 0; promptEnd > firstDroppable + drop; ++drop) {
        kept = drop == 0 ? firstDroppable
                         : firstKeptMessage(promptEnd, firstDroppable, drop, isAssistant);
        if (m_contextLength <= 0 || head + sum(kept, promptEnd) + reserve <= m_contextLength) break;
    }
    const int used = head + sum(kept, promptEnd) +
                     (answered ? sum(size_t(rows - 1), size_t(rows)) - m_promptOverhead : 0);
    const int dropped = int(kept - firstDroppable);
    const int capped = m_contextLength > 0 ? std::min(used, m_contextLength) : used;
    if (capped == m_contextUsed && dropped == m_contextDropped) return;
    m_contextUsed = capped;
    m_contextDropped = dropped;
    emit contextChanged();
}

void EngineController::resetContextMeter() {
    // Another conversation: the meter fills again with its next turn.
    if (m_contextUsed == 0 && m_contextDropped == 0) return;
    m_contextUsed = 0;
    m_contextDropped = 0;
    emit contextChanged();
}

void EngineController::applyLearnedUsage(const QString& dir,
                                         std::shared_ptr<const learning::LearnedUsage> usage) {
    if (!m_worker || !usage) return;
    Command c{CommandKind::ApplyUsage};
    c.dir = QDir::cleanPath(dir).toStdString();
    c.usage = std::move(usage);
    m_worker->post(std::move(c));
}

void EngineController::toggleUserPin(int layer, int expert) {
    if (!m_worker) return;
    const TierStatus s = m_worker->tierStatus();
    const tiers::ExpertMap& map = s.experts;
    if (m_loadState != QLatin1String("ready") || !s.streaming || map.nExperts <= 0) {
        emit pinMessage(tr("No model with streamed experts is loaded: nothing to pin."), false);
        return;
    }
    const size_t k = size_t(layer) * size_t(map.nExperts) + size_t(expert);
    if (layer < 0 || layer >= map.nLayers || expert < 0 || expert >= map.nExperts ||
        map.state[k] == uint8_t(tiers::ExpertState::None)) {
        emit pinMessage(
            tr("Layer %1 expert %2 is not a routed expert of this model.").arg(layer).arg(expert),
            false);
        return;
    }
    UserPinChange c;
    c.layer = layer;
    c.expert = expert;
    const uint8_t b = map.state[k];
    if (b & tiers::kUserPinFlag) {
        c.action = UserPinChange::Action::Unpin;
    } else if ((b & tiers::kExpertStateMask) == uint8_t(tiers::ExpertState::Pinned)) {
        c.action = UserPinChange::Action::Exclude; // a learned pin
    } else {
        int userPins = 0;
        for (uint8_t x : map.state)
            userPins += (x & tiers::kUserPinFlag) != 0;
        if (userPins >= s.pinCapacity) {
            emit pinMessage(QString::fromStdString(tiers::hotStoreFullMessage(s.pinCapacity)),
                            false);
            return;
        }
        c.action = UserPinChange::Action::Pin;
    }
    Command cmd{CommandKind::UserPin};
    cmd.id = m_nextId++;
    cmd.pin = c;
    m_worker->post(std::move(cmd));
    if (m_generating)
        emit pinMessage(QString::fromStdString(userPinMessage(c)).chopped(1) +
                            tr(" (applies when this answer ends)."),
                        true);
}

void EngineController::resetPinExclusions() {
    if (!m_worker) return;
    Command cmd{CommandKind::UserPin};
    cmd.id = m_nextId++;
    cmd.pin.action = UserPinChange::Action::ResetExclusions;
    m_worker->post(std::move(cmd));
}

void EngineController::bindSessionKv(int64_t from, const SessionKvTarget& to) {
    if (!m_worker) return;
    Command c{CommandKind::SessionKvBind};
    c.id = m_nextId++;
    c.kv = to;
    c.kvFrom = from;
    m_worker->post(std::move(c));
}

void EngineController::deleteSessionKv(const SessionKvTarget& t) {
    if (!m_worker) return;
    Command c{CommandKind::SessionKvDelete};
    c.id = m_nextId++;
    c.kv = t;
    m_worker->post(std::move(c));
}

void EngineController::showConversation(const QVector<ChatModel::Message>& rows) {
    if (!m_worker) return;
    // As newChat: the session restored at start arrives while the model loads.
    if (m_turnId != 0) m_worker->post(Command{CommandKind::Cancel});
    if (m_turnRow >= 0) endTurn();
    m_chat.replaceAll(rows);
    m_worker->post(Command{CommandKind::Reset});
    m_tiers.resetSession();
    estimateContextMeter(); // until its next turn measures it
    clearError();
}

void EngineController::showNotice(const QString& text) {
    setError(text);
    if (!text.isEmpty() && m_noticeKind != QStringLiteral("info")) {
        m_noticeKind = QStringLiteral("info");
        emit errorTextChanged();
    }
}

void EngineController::clearError() {
    setError({});
}

void EngineController::drainEvents() {
    if (!m_worker) return;
    // Batch (rule 5): pieces of the current answer are collected and applied once per frame
    // tick (flushPieces), or at once when the answer ends.
    const size_t n = m_worker->ring().drain([&](EngineEvent&& ev) {
        switch (ev.kind) {
        case EventKind::Piece:
            if (ev.id == m_turnId) {
                m_pendingText += QString::fromStdString(ev.text);
                ++m_pendingPieces;
                if (!m_flushTimer.isActive()) m_flushTimer.start();
            }
            break;
        case EventKind::Finished:
            flushPieces();
            if (ev.usage && m_hooks.usageSnapshot) m_hooks.usageSnapshot(ev.usage);
            if (ev.id == m_turnId && m_turnRow >= 0) {
                const GenerateStats& s = ev.stats;
                // The answer's figures are its decode steps'; the prompt's read is apart (a
                // prefill chunk reads each expert once for all its tokens).
                const tiers::TierCounters& d =
                    s.tiersDecode.routed > 0 ? s.tiersDecode : s.tiersPrefill;
                if (d.routed > 0)
                    m_chat.setTurnStats(m_turnRow, tiers::hitRate(d),
                                        tiers::bytesReadPerToken(d) / (1024.0 * 1024.0),
                                        s.tiersPrefill.tokens > 0
                                            ? tiers::bytesReadPerToken(s.tiersPrefill) /
                                                  (1024.0 * 1024.0)
                                            : -1.0);
                m_contextUsed = s.promptTokens + s.generatedTokens;
                m_contextDropped = ev.droppedMessages;
                emit contextChanged();
                m_chat.finish(m_turnRow, s.generatedTokens, s.decodeTokensPerSecond, s.ttftSeconds,
                              QString::fromLatin1(stopReasonName(s.stopReason)));
                // The context length as the model declares it (max_position_embeddings), as the
                // CLI reports it; the cache holds one token fewer than prompt + generated.
                // Not an error: the chat goes on, the next prompt leaves out the oldest messages.
                if (s.stopReason == StopReason::ContextFull)
                    showNotice(tr("The answer stopped when the conversation filled the model's "
                                  "context (%1 tokens). You can go on: the next answer leaves "
                                  "out the oldest messages to make room.")
                                   .arg(m_contextLength > 0 ? m_contextLength
                                                            : s.promptTokens + s.generatedTokens));
                const int row = m_turnRow;
                endTurn();
                if (m_hooks.answerEnded) m_hooks.answerEnded(row, &s);
                emit answerFinished(row);
            }
            break;
        case EventKind::SessionKv: // of whichever chat: a warning is worth showing anyway
            if (!ev.text.empty()) showNotice(QString::fromStdString(ev.text));
            if (ev.kvSession > 0) emit sessionKvChanged(ev.kvSession, qint64(ev.kvBytes));
            for (const int64_t gone : ev.kvDeleted)
                emit sessionKvChanged(gone, 0);
            break;
        case EventKind::UserPin:
            emit pinMessage(QString::fromStdString(ev.text), ev.pinApplied);
            if (ev.pinApplied && m_hooks.userPinChanged) m_hooks.userPinChanged(ev.pin);
            break;
        case EventKind::VramBudget: // a Tiers view (or Settings) request, for the model loaded
            if (ev.id != m_loadId) break;
            // The status published before the event, so the Tiers view agrees with it now.
            m_tiers.apply(m_worker->tierStatus());
            m_tiers.vramRequestDone();
            if (!ev.text.empty())
                showNotice(QString::fromStdString(ev.text));
            else
                emit vramBudgetApplied(double(ev.vramBudgetBytes));
            break;
        case EventKind::Notice: // of the current turn, or of the model just loaded
            if (ev.id == m_turnId || ev.id == m_loadId) showNotice(QString::fromStdString(ev.text));
            break;
        case EventKind::Failed:
            flushPieces();
            if (ev.id == m_turnId && m_turnRow >= 0) {
                const QString msg = QString::fromStdString(ev.text);
                m_chat.fail(m_turnRow, msg);
                setError(msg);
                const int row = m_turnRow;
                endTurn();
                if (m_hooks.answerEnded) m_hooks.answerEnded(row, nullptr);
                emit answerFinished(row);
            }
            break;
        case EventKind::ProbeProgress:
            if (ev.id == m_probeId) {
                m_probeDone = ev.tokensDone;
                m_probeTotal = ev.tokensTotal;
                m_probeState = QStringLiteral("running");
                emit probeChanged();
            }
            break;
        case EventKind::ProbeFinished:
            if (ev.id == m_probeId && ev.probe) {
                const atlas::ProbeAtlas& f = ev.probe->figures;
                QVariantList topics;
                for (const atlas::TopicFigures& t : f.topics)
                    topics.push_back(QVariantMap{{"id", QString::fromStdString(t.id)},
                                                 {"label", QString::fromStdString(t.label)},
                                                 {"prompts", t.prompts},
                                                 {"tokens", double(t.tokens)},
                                                 {"specialists", t.specialists},
                                                 {"agreement", t.agreement},
                                                 {"purity", f.purity ? t.purity : -1.0}});
                m_probeFigures = QVariantMap{{"topics", topics},
                                             {"specialists", f.specialists},
                                             {"agreement", f.agreement},
                                             {"purity", f.purity ? *f.purity : -1.0}};
                m_probeDone = m_probeTotal;
                m_probeId = 0;
                m_probeCancel.reset();
                m_answerWaiting = false;
                m_probeState = QStringLiteral("done");
                emit probeChanged();
                // The Atlas shows it now; the glue stores it (and hands back the saved row).
                m_atlasProbe =
                    std::shared_ptr<const storage::AtlasProbe>(ev.probe, &ev.probe->probe);
                emit atlasProbeChanged();
                if (m_probeHook) m_probeHook(ev.probe);
            }
            break;
        case EventKind::ProbeFailed:
            if (ev.id == m_probeId) {
                m_probeId = 0;
                m_probeCancel.reset();
                m_answerWaiting = false;
                m_probeError = QString::fromStdString(ev.text);
                m_probeState =
                    ev.cancelled ? QStringLiteral("cancelled") : QStringLiteral("failed");
                emit probeChanged();
                if (!ev.cancelled) setError(tr("The topic probe failed: %1").arg(m_probeError));
            }
            break;
        case EventKind::LoadProgress:
            if (ev.id == m_loadId) {
                m_loadProgress = ev.fraction;
                m_loadStage = QString::fromStdString(ev.text);
                emit loadProgressChanged();
            }
            break;
        case EventKind::Loaded:
            if (ev.id == m_loadId) {
                m_modelName = QString::fromStdString(ev.text);
                m_modelInfo = QString::fromStdString(ev.info);
                m_contextLength = ev.contextLength;
                const ModelSummary& sum = ev.summary;
                m_modelDetails =
                    QVariantMap{{"architecture", QString::fromStdString(ev.architecture)},
                                {"totalParams", double(sum.totalParams)},
                                {"activeParams", double(sum.activeParams)},
                                {"expertsPerLayer", sum.expertsPerLayer},
                                {"moeLayers", sum.moeLayers},
                                {"layers", ev.layers},
                                {"topK", ev.topK},
                                {"storage", QString::fromStdString(sum.storage)},
                                {"contextLength", ev.contextLength},
                                {"diskBytes", double(sum.denseBytes + sum.expertBytes)}};
                m_contextUsed = 0;
                m_contextDropped = 0;
                emit contextChanged();
                m_tokenizer = std::move(ev.tokenizer);
                m_promptOverhead = ev.promptOverheadTokens;
                emit modelChanged();
                m_loadProgress = 1;
                emit loadProgressChanged();
                setLoadState(QStringLiteral("ready"));
                // A chat shown while the model loaded (the restore at start) is counted now.
                if (m_chat.rowCount() > 0) estimateContextMeter();
            }
            break;
        case EventKind::LoadFailed:
            if (ev.id == m_loadId) {
                QString msg = QString::fromStdString(ev.text);
                // The engine names the file; make sure the folder the user chose is named too.
                if (!msg.contains(m_modelDir))
                    msg = tr("Could not load the model in %1: %2").arg(m_modelDir, msg);
                setError(msg);
                setLoadState(QStringLiteral("error"));
            }
            break;
        }
    });
    emit drained(int(n));
}

void EngineController::setFrameWindow(QQuickWindow* window) {
    m_frameWindow = window;
    if (!window) return;
    // Emitted on the render thread once a frame is on screen.
    connect(
        window, &QQuickWindow::frameSwapped, this, [this] { m_frameInFlight = false; },
        Qt::QueuedConnection);
}

void EngineController::flushTick() {
    // The previous flush is not on screen yet: wait for it (a frame at a time, within a limit;
    // a hidden window draws nothing, so it does not gate).
    if (m_frameInFlight && m_frameWindow && m_frameWindow->isExposed() &&
        m_sinceFlush.elapsed() < kFrameWaitLimitMs) {
        m_flushTimer.start();
        return;
    }
    flushPieces();
}

void EngineController::flushPieces() {
    m_flushTimer.stop();
    if (m_pendingPieces == 0) return;
    const int pieces = std::exchange(m_pendingPieces, 0);
    const QString text = std::exchange(m_pendingText, {});
    if (m_turnRow < 0) return;
    m_chat.appendText(m_turnRow, text);
    m_frameInFlight = true;
    m_sinceFlush.start();
    emit piecesFlushed(pieces);
}

void EngineController::sampleTelemetry() {
    if (!m_worker) return;
    m_tiers.apply(m_worker->tierStatus());
    if (m_turnRow < 0) return;
    const TelemetrySnapshot s = m_worker->telemetry();
    if (s.id != m_turnId || !s.generating) return;
    if (s.tokensPerSecond != m_liveRate) {
        m_liveRate = s.tokensPerSecond;
        emit liveTokensPerSecondChanged();
        m_chat.setLiveRate(m_turnRow, m_liveRate);
    }
}

void EngineController::setLoadState(const QString& s) {
    if (s == m_loadState) return;
    m_loadState = s;
    emit loadStateChanged();
}

void EngineController::setError(const QString& e) {
    if (e == m_errorText && m_noticeKind == QStringLiteral("error")) return;
    m_errorText = e;
    m_noticeKind = QStringLiteral("error");
    emit errorTextChanged();
}

void EngineController::setGenerating(bool g) {
    if (g == m_generating) return;
    m_generating = g;
    emit generatingChanged();
}

void EngineController::endTurn() {
    flushPieces(); // the text streamed so far stays with its answer
    if (m_turnRow >= 0 && m_chat.rowCount() > m_turnRow && m_chat.at(m_turnRow).streaming)
        m_chat.finish(m_turnRow, m_chat.at(m_turnRow).tokens, m_chat.at(m_turnRow).tokensPerSecond,
                      m_chat.at(m_turnRow).ttft);
    m_turnRow = -1;
    m_turnId = 0;
    setGenerating(false);
}

int EngineController::countTokens(const QString& text) const {
    if (!m_tokenizer || m_loadState != QStringLiteral("ready")) return -1;
    const QByteArray utf8 = text.toUtf8();
    if (utf8.size() <= kExactCountBytes)
        return int(m_tokenizer->encode(std::string_view(utf8.constData(), utf8.size())).size());
    // A prefix cut at a character boundary, its count scaled to the whole text.
    qsizetype cut = kExactCountBytes;
    while (cut > 0 && (uchar(utf8[cut]) & 0xC0) == 0x80)
        --cut;
    const size_t n = m_tokenizer->encode(std::string_view(utf8.constData(), size_t(cut))).size();
    return int(double(n) * double(utf8.size()) / double(cut));
}

int EngineController::maxMessageTokens() const {
    if (!m_tokenizer || m_contextLength <= 0) return -1;
    const int reserve = std::clamp(m_params.maxNewTokens, 0, m_contextLength / 2);
    return m_contextLength - reserve - m_promptOverhead;
}

QString EngineController::checkMessageLength(const QString& text) const {
    const int limit = maxMessageTokens();
    if (limit < 0) return {}; // no model: send() refuses anyway
    // Each token covers at least one byte: a text of no more bytes than the limit fits.
    if (text.toUtf8().size() <= limit) return {};
    const int n = countTokens(text);
    if (n <= limit) return {};
    return QString::fromStdString(tooLongForContext(n, limit));
}

void EngineController::runTopicProbe() {
    if (!m_worker || m_loadState != QLatin1String("ready")) {
        setError(tr("The topic probe needs a loaded model: open one first."));
        return;
    }
    if (probeRunning()) return; // one at a time (the button shows the running one)
    if (m_probeTopics.isEmpty()) {
        setError(tr("The topic probe has no topic set for this model yet (its files are still "
                    "being read); try again in a moment."));
        return;
    }
    Command c{CommandKind::TopicProbe};
    c.id = m_probeId = m_nextId++;
    c.dir = QDir::cleanPath(m_modelDir).toStdString();
    c.topicsFile = m_probeTopics.toStdString();
    c.probeOptions = m_probeOptions;
    m_probeCancel = c.cancel;
    m_probeDone = m_probeTotal = 0;
    m_probeError.clear();
    // Behind a running answer it waits (the queue is in order); else it starts at once.
    m_probeState = m_generating ? QStringLiteral("queued") : QStringLiteral("running");
    emit probeChanged();
    m_worker->post(std::move(c));
}

void EngineController::cancelTopicProbe() {
    // Only the probe's own flag: an answer waiting behind it then runs.
    if (m_probeCancel) m_probeCancel->store(true, std::memory_order_relaxed);
}

QString EngineController::probeStatus() const {
    const QLocale locale;
    if (m_probeState == QLatin1String("queued"))
        return tr("Topic probe: waiting for the answer to finish");
    if (m_probeState == QLatin1String("running")) {
        if (m_probeTotal <= 0) return tr("Topic probe: starting");
        return tr("Topic probe: %1 of %2 tokens")
            .arg(locale.toString(m_probeDone), locale.toString(m_probeTotal));
    }
    if (m_probeState == QLatin1String("done"))
        return tr("Topic probe done: %1 specialist experts")
            .arg(m_probeFigures.value(QStringLiteral("specialists")).toInt());
    if (m_probeState == QLatin1String("cancelled")) return tr("Topic probe cancelled");
    if (m_probeState == QLatin1String("failed"))
        return tr("Topic probe failed: %1").arg(m_probeError);
    return {};
}

void EngineController::setAtlasProbe(const QString& modelDir,
                                     std::shared_ptr<const storage::AtlasProbe> p) {
    if (QDir::cleanPath(modelDir) != QDir::cleanPath(m_modelDir)) return; // another model by now
    m_atlasProbe = std::move(p);
    emit atlasProbeChanged();
}

} // namespace coli::app
