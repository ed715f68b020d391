#pragma once
// The GUI-thread face of the engine (docs/design.md threading contract). Owns one EngineWorker (the
// engine thread), the ChatModel, and the QML-visible state: load state/progress, errors,
// generating, live tok/s. The GUI thread never blocks on the engine: commands are posted, events
// come back through the worker's ring and are drained here in one go per queued wake-up; token
// pieces are appended to the ChatModel at most once per frame tick (kFlushIntervalMs); live
// telemetry is sampled by a ~30 Hz timer. Only shutdown() (quit) joins the engine thread, after
// cancelling whatever runs, so it returns within about one token's time.
// Thread-safety: GUI thread only (QObject affinity), except the wake-up the worker posts.
#include "brain_monitor.h"
#include "chat_model.h"
#include "engine_worker.h"
#include "probe_outcome.h"
#include "tier_monitor.h"

#include <QElapsedTimer>
#include <QObject>
#include <QPointer>
#include <QQuickWindow>
#include <QString>
#include <QTimer>
#include <QUrl>

#include <QVariantMap>

#include <functional>
#include <memory>
#include <optional>

namespace coli::app {

class EngineController : public QObject {
    Q_OBJECT
    Q_PROPERTY(QObject* chatModel READ chatModelObject CONSTANT)
    Q_PROPERTY(QObject* tiers READ tiersObject CONSTANT)
    // The Brain view's data: per-expert states and hits of the same tier status (issue 12).
    Q_PROPERTY(QObject* brain READ brainObject CONSTANT)
    // The model info panel: architecture, parameters (total, active), experts, quantisation
    // (storage), context length, size on disk; empty until a model is loaded.
    Q_PROPERTY(QVariantMap modelDetails READ modelDetails NOTIFY modelChanged)
    // The context meter: tokens the last turn used (prompt + answer) of contextLength, and how
    // many older messages its prompt left out (the rolling window).
    Q_PROPERTY(int contextUsed READ contextUsed NOTIFY contextChanged)
    Q_PROPERTY(int contextLength READ contextLength NOTIFY modelChanged)
    Q_PROPERTY(int contextDropped READ contextDropped NOTIFY contextChanged)
    // The chat's system prompt (first message of every prompt when not empty).
    Q_PROPERTY(QString systemPrompt READ systemPrompt WRITE setSystemPrompt NOTIFY paramsChanged)
    Q_PROPERTY(QString modelDir READ modelDir NOTIFY modelChanged)
    Q_PROPERTY(QString modelName READ modelName NOTIFY modelChanged)
    Q_PROPERTY(QString modelInfo READ modelInfo NOTIFY modelChanged)
    Q_PROPERTY(
        QString loadState READ loadState NOTIFY loadStateChanged) // empty|loading|ready|error
    Q_PROPERTY(double loadProgress READ loadProgress NOTIFY loadProgressChanged)
    Q_PROPERTY(QString loadStage READ loadStage NOTIFY loadProgressChanged)
    Q_PROPERTY(QString errorText READ errorText NOTIFY errorTextChanged)
    Q_PROPERTY(bool generating READ generating NOTIFY generatingChanged)
    Q_PROPERTY(
        double liveTokensPerSecond READ liveTokensPerSecond NOTIFY liveTokensPerSecondChanged)
    Q_PROPERTY(int maxNewTokens READ maxNewTokens WRITE setMaxNewTokens NOTIFY paramsChanged)
    // How the banner shows errorText: "error" (red) or "info" (neutral: a notice, not a failure).
    Q_PROPERTY(QString noticeKind READ noticeKind NOTIFY errorTextChanged)
    // The topic probe (runTopicProbe): "idle", "queued" (behind an answer), "running", "done",
    // "failed" or "cancelled"; tokens routed so far of the set's total; one line for the UI
    // ("Topic probe: 1,200 of 28,393 tokens", ...); answerWaiting: an answer sent while the probe
    // runs waits for it (the chat says so); probeFigures: the last run's table
    // {topics: [{id, label, prompts, tokens, specialists, agreement, purity}], specialists,
    // agreement, purity (-1: not measured)}.
    Q_PROPERTY(QString probeState READ probeState NOTIFY probeChanged)
    Q_PROPERTY(bool probeRunning READ probeRunning NOTIFY probeChanged)
    Q_PROPERTY(qint64 probeTokensDone READ probeTokensDone NOTIFY probeChanged)
    Q_PROPERTY(qint64 probeTokensTotal READ probeTokensTotal NOTIFY probeChanged)
    Q_PROPERTY(QString probeStatus READ probeStatus NOTIFY probeChanged)
    Q_PROPERTY(bool answerWaiting READ answerWaiting NOTIFY probeChanged)
    Q_PROPERTY(QVariantMap probeFigures READ probeFigures NOTIFY probeChanged)
    Q_PROPERTY(bool hasAtlasProbe READ hasAtlasProbe NOTIFY atlasProbeChanged)
public:
    explicit EngineController(WorkerOptions opt = {}, QObject* parent = nullptr);
    ~EngineController() override;

    ChatModel* chatModel() { return &m_chat; }
    QObject* chatModelObject() { return &m_chat; }
    TierMonitor* tiers() { return &m_tiers; }
    QObject* tiersObject() { return &m_tiers; }
    BrainMonitor* brain() { return &m_brain; }
    QObject* brainObject() { return &m_brain; }
    QString modelDir() const { return m_modelDir; }
    QString modelName() const { return m_modelName; }
    QString modelInfo() const { return m_modelInfo; }
    QString loadState() const { return m_loadState; }
    double loadProgress() const { return m_loadProgress; }
    QString loadStage() const { return m_loadStage; }
    QString errorText() const { return m_errorText; }
    bool generating() const { return m_generating; }
    double liveTokensPerSecond() const { return m_liveRate; }
    int maxNewTokens() const { return m_params.maxNewTokens; }
    void setMaxNewTokens(int n);

    // Stopping and sampling for the next answers (params.sampler is ignored: the engine thread
    // resolves it from `sampling` and the model's defaults; validated when it runs).
    void setGenerateParams(const GenerateParams& p, const SamplingOverrides& sampling);
    const GenerateParams& generateParams() const { return m_params; }
    const SamplingOverrides& samplingOverrides() const { return m_sampling; }

    // Loads a model folder (cancels whatever runs; the conversation is cleared).
    Q_INVOKABLE void loadModel(const QString& dir);
    // Loads a folder given as a URL or path (AppSettings remembers it once it has loaded).
    Q_INVOKABLE void openModelFolder(const QUrl& folder);
    // Sends a user message and starts streaming the answer. False (and nothing sent) when the
    // text is blank, an answer is still running, or no model is ready.
    Q_INVOKABLE bool send(const QString& text);
    Q_INVOKABLE void stop(); // cancels the running answer (its text so far stays)
    // The last answer again (its row is replaced), with a new seed unless the chat fixes one.
    // False when an answer runs, no model is ready or the last message is not an answer.
    Q_INVOKABLE bool regenerate();
    // The last answer goes on from where it stopped (token limit or Stop): the model gets the
    // conversation and the answer so far; new text is appended to the same row. False when it
    // cannot (see ChatModel's canContinue).
    Q_INVOKABLE bool continueAnswer();
    // Replaces the user message at `row` with `text`, drops everything after it and sends it.
    // False when an answer runs, `row` is not a user message or the text is blank or too long.
    Q_INVOKABLE bool editAndResend(int row, const QString& text);
    Q_INVOKABLE void copyToClipboard(const QString& text) const;
    // Cancels the running answer (a model load goes on), clears the conversation and the
    // engine's KV cache.
    Q_INVOKABLE void newChat();
    Q_INVOKABLE void clearError();
    // Shows a message in the window's banner (e.g. "the remembered folder is gone"); dismissable,
    // cleared by the next load or message like an error.
    Q_INVOKABLE void showNotice(const QString& text);
    // The same in the error style (something failed).
    Q_INVOKABLE void showError(const QString& text) { setError(text); }
    int contextLength() const { return m_contextLength; } // of the loaded model; 0: none
    // Cancels everything and joins the engine thread. Called at quit; idempotent.
    Q_INVOKABLE void shutdown();

    static QString settingsKeyLastDir() { return QStringLiteral("model/lastDir"); }
    // Pieces drained from the ring are appended to the answer by a single-shot timer of one frame
    // (60 Hz), started by the first pending piece: however fast tokens come, the ChatModel and
    // the answer's blocks change at most once per frame, and a piece waits at most one frame.
    static constexpr int kFlushIntervalMs = 16;
    // The window that shows the chat (optional; set by createMainWindow). A flush then also waits
    // until the window has put the previous one on screen (frameSwapped), at most
    // kFrameWaitLimitMs: with a slow renderer (Mesa's llvmpipe) a new update while the render
    // thread still draws the last one makes the GUI thread block in the next sync.
    void setFrameWindow(QQuickWindow* window);
    static constexpr int kFrameWaitLimitMs = 100;

    // What happens to the conversation, for the sessions glue (SessionManager) that saves it.
    // Plain callbacks on the GUI thread, called after the ChatModel changed (except `cleared`).
    struct TurnHooks {
        std::function<void(int row)> userMessage;   // a user message was added at `row`
        std::function<void(int row)> answerStarted; // an empty streaming answer row was added
        std::function<void(int row)> answerResumed; // "Continue": the answer at `row` streams again
        // Rows >= `row` are about to be removed (Regenerate, edit and resend).
        std::function<void(int row)> truncating;
        // The answer at `row` ended (finished, stopped or failed: stats null when failed).
        std::function<void(int row, const GenerateStats* stats)> answerEnded;
        // The heat and pins after a turn of a learning model (learning::endTurnSnapshot).
        std::function<void(std::shared_ptr<const learning::UsageSnapshot>)> usageSnapshot;
        // A user-pin change the expert cache applied (the storage thread saves it).
        std::function<void(const UserPinChange&)> userPinChanged;
        std::function<void()> cleared; // New chat or another model: called just before the
                                       // conversation is cleared (its rows still readable)
        // Where the chat whose turn starts persists its KV cache (called by every turn, after
        // userMessage); empty: not persisted.
        std::function<SessionKvTarget()> kvTarget;
    };
    void setTurnHooks(TurnHooks hooks) { m_hooks = std::move(hooks); }
    // Hands the learned usage read for the model folder `dir` to the engine thread, which applies
    // it to the expert cache (dropped there when another model is loaded by then; applied also
    // after the first answers, its token clock never going back: EngineWorker::doApplyUsage).
    void applyLearnedUsage(const QString& dir, std::shared_ptr<const learning::LearnedUsage> usage);
    // The chat the engine knew by the key `from` (a provisional one, or the same id once the
    // model's identity is known) persists at `to`: the engine thread opens its KV file and saves
    // the conversation it holds, after the answer in progress (EngineWorker::doSessionKvBind).
    void bindSessionKv(int64_t from, const SessionKvTarget& to);
    // Deletes the KV file of the chat `t.session` on the engine thread, after the answer in
    // progress (which saves first); sessionKvChanged(id, 0) follows.
    void deleteSessionKv(const SessionKvTarget& t);
    // Shows a saved conversation (the engine's KV cache is cleared; the next turn restores the
    // chat's saved KV cache, or prefills it when it has none).
    // Cancels the running answer, never a model load (the last session is restored during one).
    void showConversation(const QVector<ChatModel::Message>& rows);
    // The sampling of the next answers (what a session stores with each answer).
    const SamplingOverrides& sampling() const { return m_sampling; }
    // The sampling the running (or last) answer was started with, its seed included.
    const SamplingOverrides& turnSampling() const { return m_turnSampling; }
    // A chat's own settings over the app's: system prompt, sampling values set, a fixed seed
    // (nullopt: the app's seed for answers, a new one for Regenerate), max new tokens (0: app's).
    void setChatSettings(const QString& systemPrompt, const SamplingOverrides& sampling,
                         std::optional<uint64_t> fixedSeed, int maxNewTokens);
    QString systemPrompt() const { return m_systemPrompt; }
    void setSystemPrompt(const QString& p);
    QVariantMap modelDetails() const { return m_modelDetails; }
    int contextUsed() const { return m_contextUsed; }
    int contextDropped() const { return m_contextDropped; }

    // ---- User pins (the Brain view's clicks; docs/tiers.md "User pins") ----
    // Pins (layer, expert) as a user pin, or unpins it: a user pin is dropped; a learned pin is
    // unpinned and excluded from learned pins until resetPinExclusions(). Decided from the latest
    // TierStatus; applied by the engine thread at the next turn boundary (after the answer in
    // progress, at once when idle), then saved for the model when its usage is learned. The
    // outcome arrives as pinMessage: refused at once (not a routed expert, no model, the
    // hot-store full: "the hot-store is full: N of N places are pinned; unpin an expert or raise
    // the RAM budget"), "... applies when this answer ends" while one runs, then the applied
    // change ("Pinned layer 3 expert 17.") or the engine's refusal.
    Q_INVOKABLE void toggleUserPin(int layer, int expert);
    // Learned pins may choose every expert again (the model's exclusions are deleted); applied
    // like toggleUserPin.
    Q_INVOKABLE void resetPinExclusions();

    // ---- The topic probe (issue 12; docs/visualisation.md "Topic probe") ----
    // Runs the probe on the loaded model with probeTopicsFile() on the engine thread, queued
    // behind a running answer; answers sent meanwhile wait for it. Refused (errorText) when no
    // model is ready, no topic set is known or a probe already runs.
    Q_INVOKABLE void runTopicProbe();
    // Stops the running (or queued) probe between two chunks; nothing is stored.
    Q_INVOKABLE void cancelTopicProbe();
    QString probeState() const { return m_probeState; }
    bool probeRunning() const {
        return m_probeState == QLatin1String("queued") || m_probeState == QLatin1String("running");
    }
    qint64 probeTokensDone() const { return m_probeDone; }
    qint64 probeTokensTotal() const { return m_probeTotal; }
    QString probeStatus() const;
    bool answerWaiting() const { return m_answerWaiting; }
    QVariantMap probeFigures() const { return m_probeFigures; }
    // The topic set the next probe uses (the glue sets the model's default at load:
    // default_topics.h); tests set their own, and lower the minimum sizes with the options.
    void setProbeTopicsFile(const QString& file) { m_probeTopics = file; }
    QString probeTopicsFile() const { return m_probeTopics; }
    void setProbeOptions(const probe::ProbeOptions& o) { m_probeOptions = o; }
    // Called on the GUI thread with each finished run (for the storage thread to save it).
    void setProbeHook(std::function<void(std::shared_ptr<const ProbeOutcome>)> hook) {
        m_probeHook = std::move(hook);
    }
    // The newest probe data of the loaded model, for the Atlas view: read from the database
    // after a load (by the glue, setAtlasProbe) or from a run just finished. Null: none yet.
    // A plain value (storage/atlas_store.h), immutable once shared.
    std::shared_ptr<const storage::AtlasProbe> atlasProbe() const { return m_atlasProbe; }
    bool hasAtlasProbe() const { return m_atlasProbe != nullptr; }
    // Sets it for the model in `modelDir` (ignored when another model is loaded by now).
    void setAtlasProbe(const QString& modelDir, std::shared_ptr<const storage::AtlasProbe> p);

signals:
    void probeChanged();
    void atlasProbeChanged();
    void modelChanged();
    void loadStateChanged();
    void loadProgressChanged();
    void errorTextChanged();
    void generatingChanged();
    void liveTokensPerSecondChanged();
    void paramsChanged();
    void contextChanged();
    void answerFinished(int row); // an answer ended (finished, stopped or failed)
    // The KV file of the chat `session` (a database id) holds `bytes` on disk now (0: none):
    // saved after a turn, opened, deleted, or deleted by the cap (docs/app.md "Sessions").
    void sessionKvChanged(qint64 session, qint64 bytes);
    void drained(int events); // one wake-up's batch was applied (for tests)
    // One frame tick's pending pieces went to the ChatModel in one appendText (for tests).
    void piecesFlushed(int pieces);
    // The outcome of toggleUserPin / resetPinExclusions in words; `ok` false: refused.
    void pinMessage(const QString& text, bool ok);
    // A VRAM budget asked for through tiers() is in force: `bytes` (whole experts). A refused one
    // shows its reason in the banner instead (a notice, as the RAM budget's) and keeps the old.
    void vramBudgetApplied(double bytes);

public:
    // ---- Settings and the message-length check (issue 11) ----
    QString noticeKind() const { return m_noticeKind; }
    // Options for the next loads (threads, RAM budget, direct I/O, prefetch).
    void setLoadSettings(const LoadSettings& s) { m_loadSettings = s; }
    const LoadSettings& loadSettings() const { return m_loadSettings; }
    // Tokens of `text` as the loaded model reads it (-1: no model ready). Runs on the GUI thread
    // with the tokenizer the engine shared at load (Tokenizer's const functions are thread-safe);
    // texts longer than kExactCountBytes are counted on their first kExactCountBytes and scaled,
    // so a huge paste cannot stall the window.
    Q_INVOKABLE int countTokens(const QString& text) const;
    // Most tokens one message may have to fit the context alone: the context less the room kept
    // for the answer (maxNewTokens, at most half the context) and the chat template's wrapping.
    // -1: no model ready.
    int maxMessageTokens() const;
    // "" when `text` fits the context as a message of its own, else what to do, in words
    // ("This message is about 900 tokens; ... Shorten it or split it into parts."). send()
    // refuses such a message before anything is sent (the composer keeps it).
    Q_INVOKABLE QString checkMessageLength(const QString& text) const;
    static constexpr qsizetype kExactCountBytes = 256 * 1024;

private:
    void drainEvents();
    void flushPieces();
    void flushTick();
    void sampleTelemetry();
    void setLoadState(const QString& s);
    void setError(const QString& e);
    void setGenerating(bool g);
    void endTurn();

    // Starts an answer at a new row (`resumeRow` < 0) or continuing `resumeRow`.
    bool startTurn(int resumeRow, const std::optional<uint64_t>& seed);
    void resetContextMeter();
    void estimateContextMeter();
    std::vector<ChatMessage> promptMessages(int endRow) const;

    TurnHooks m_hooks;
    QString m_systemPrompt;
    SamplingOverrides m_chatSampling; // the chat's own values (set ones win)
    std::optional<uint64_t> m_chatSeed;
    int m_chatMaxNewTokens = 0;
    SamplingOverrides m_turnSampling;
    QVariantMap m_modelDetails;
    int m_contextUsed = 0, m_contextDropped = 0;
    ChatModel m_chat;
    TierMonitor m_tiers;
    BrainMonitor m_brain;
    GenerateParams m_params;
    SamplingOverrides m_sampling;
    QString m_modelDir, m_modelName, m_modelInfo;
    QString m_loadState = QStringLiteral("empty");
    double m_loadProgress = 0;
    QString m_loadStage;
    QString m_errorText;
    bool m_generating = false;
    double m_liveRate = 0;
    int m_contextLength = 0; // max_position_embeddings of the loaded model
    uint64_t m_nextId = 1;
    uint64_t m_loadId = 0; // request id of the latest Load
    uint64_t m_turnId = 0; // request id of the running Generate (0: none)
    int m_turnRow = -1;    // ChatModel row being streamed
    QTimer m_telemetryTimer;
    QString m_noticeKind = QStringLiteral("error");
    LoadSettings m_loadSettings;
    std::shared_ptr<const Tokenizer> m_tokenizer; // of the loaded model (null: none ready)
    int m_promptOverhead = 0;                     // template tokens around one message
    // Token pieces wait here for the next frame tick (at most one ChatModel update per frame).
    QTimer m_flushTimer;
    QString m_pendingText;
    int m_pendingPieces = 0;
    QPointer<QQuickWindow> m_frameWindow;
    bool m_frameInFlight = false; // a flush not yet on screen
    QElapsedTimer m_sinceFlush;
    // The topic probe.
    QString m_probeState = QStringLiteral("idle");
    uint64_t m_probeId = 0; // request id of the probe being run (0: none)
    std::shared_ptr<std::atomic<bool>> m_probeCancel;
    qint64 m_probeDone = 0, m_probeTotal = 0;
    bool m_answerWaiting = false;
    QString m_probeError;
    QVariantMap m_probeFigures;
    QString m_probeTopics;
    probe::ProbeOptions m_probeOptions;
    std::function<void(std::shared_ptr<const ProbeOutcome>)> m_probeHook;
    std::shared_ptr<const storage::AtlasProbe> m_atlasProbe;
    std::unique_ptr<EngineWorker> m_worker; // last member: its thread stops before the rest dies
};

} // namespace coli::app
