#include "engine_controller.h"

#include <QDir>
#include <QMetaObject>
#include <QSettings>

namespace coli::app {

EngineController::EngineController(WorkerOptions opt, QObject* parent) : QObject(parent) {
    m_params.maxNewTokens = 512;
    m_telemetryTimer.setInterval(33); // ~30 Hz, rule 4
    connect(&m_telemetryTimer, &QTimer::timeout, this, &EngineController::sampleTelemetry);
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
    m_worker->quit(); // cancels the running command first, then joins
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
    Command c{CommandKind::Load};
    c.id = m_loadId = m_nextId++;
    c.dir = QDir::cleanPath(dir).toStdString();
    m_modelDir = QDir::cleanPath(dir);
    m_modelName = QDir(m_modelDir).dirName();
    m_modelInfo.clear();
    m_contextLength = 0;
    emit modelChanged();
    clearError();
    m_loadProgress = 0;
    m_loadStage = tr("starting");
    emit loadProgressChanged();
    setLoadState(QStringLiteral("loading"));
    m_worker->post(std::move(c));
}

void EngineController::openModelFolder(const QUrl& folder) {
    const QString dir = folder.isLocalFile() ? folder.toLocalFile() : folder.toString();
    QSettings settings(QStringLiteral("Colibri"), QStringLiteral("Colibri Desktop"));
    settings.setValue(settingsKeyLastDir(), dir);
    loadModel(dir);
}

bool EngineController::send(const QString& text) {
    if (!m_worker || text.trimmed().isEmpty() || m_generating || m_loadState != "ready")
        return false;
    clearError();
    const int userRow = m_chat.appendMessage(QStringLiteral("user"), text);
    if (m_hooks.userMessage) m_hooks.userMessage(userRow);
    Command c{CommandKind::Generate};
    c.id = m_turnId = m_nextId++;
    c.messages = m_chat.conversation(); // before the empty answer row exists
    c.params = m_params;
    c.sampling = m_sampling;
    m_turnRow = m_chat.beginAssistant();
    if (m_hooks.answerStarted) m_hooks.answerStarted(m_turnRow);
    m_liveRate = 0;
    emit liveTokensPerSecondChanged();
    setGenerating(true);
    m_worker->post(std::move(c));
    return true;
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
    clearError();
}

void EngineController::applyLearnedUsage(const QString& dir,
                                         std::shared_ptr<const learning::LearnedUsage> usage) {
    if (!m_worker || !usage) return;
    Command c{CommandKind::ApplyUsage};
    c.dir = QDir::cleanPath(dir).toStdString();
    c.usage = std::move(usage);
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
    clearError();
}

void EngineController::showNotice(const QString& text) {
    setError(text);
}

void EngineController::clearError() {
    setError({});
}

void EngineController::drainEvents() {
    if (!m_worker) return;
    // Batch (rule 5): pieces of the current answer are concatenated and applied once per drain.
    QString pending;
    auto flush = [&] {
        if (!pending.isEmpty() && m_turnRow >= 0) m_chat.appendText(m_turnRow, pending);
        pending.clear();
    };
    const size_t n = m_worker->ring().drain([&](EngineEvent&& ev) {
        switch (ev.kind) {
        case EventKind::Piece:
            if (ev.id == m_turnId) pending += QString::fromStdString(ev.text);
            break;
        case EventKind::Finished:
            flush();
            if (ev.usage && m_hooks.usageSnapshot) m_hooks.usageSnapshot(ev.usage);
            if (ev.id == m_turnId && m_turnRow >= 0) {
                const GenerateStats& s = ev.stats;
                m_chat.finish(m_turnRow, s.generatedTokens, s.decodeTokensPerSecond, s.ttftSeconds,
                              QString::fromLatin1(stopReasonName(s.stopReason)));
                // The context length as the model declares it (max_position_embeddings), as the
                // CLI reports it; the cache holds one token fewer than prompt + generated.
                if (s.stopReason == StopReason::ContextFull)
                    setError(tr("The conversation filled the model's context (%1 tokens): start a "
                                "new chat to continue.")
                                 .arg(m_contextLength > 0 ? m_contextLength
                                                          : s.promptTokens + s.generatedTokens));
                const int row = m_turnRow;
                endTurn();
                if (m_hooks.answerEnded) m_hooks.answerEnded(row, &s);
                emit answerFinished(row);
            }
            break;
        case EventKind::Notice: // of the current turn, or of the model just loaded
            if (ev.id == m_turnId || ev.id == m_loadId) showNotice(QString::fromStdString(ev.text));
            break;
        case EventKind::Failed:
            flush();
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
                emit modelChanged();
                m_loadProgress = 1;
                emit loadProgressChanged();
                setLoadState(QStringLiteral("ready"));
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
    flush();
    emit drained(int(n));
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
    if (e == m_errorText) return;
    m_errorText = e;
    emit errorTextChanged();
}

void EngineController::setGenerating(bool g) {
    if (g == m_generating) return;
    m_generating = g;
    emit generatingChanged();
}

void EngineController::endTurn() {
    if (m_turnRow >= 0 && m_chat.rowCount() > m_turnRow && m_chat.at(m_turnRow).streaming)
        m_chat.finish(m_turnRow, m_chat.at(m_turnRow).tokens, m_chat.at(m_turnRow).tokensPerSecond,
                      m_chat.at(m_turnRow).ttft);
    m_turnRow = -1;
    m_turnId = 0;
    setGenerating(false);
}

} // namespace coli::app
