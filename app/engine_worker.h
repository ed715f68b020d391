#pragma once
// The engine thread (threading contract rule 1): one std::thread that pops commands from the
// CommandQueue and runs them against the engine (load, generate, reset, the topic probe), pushing
// events into the EventRing and telemetry into the TelemetrySlot. Plain C++, no Qt:
// EngineController adapts it.
//
// The worker owns the LoadedModel and the Session; they are touched only by the engine thread.
// OpenMP teams exist only inside the engine's forward pass; the piece callback runs on this thread.
//
// Persisted chats (docs/app.md "Sessions"): a Generate names its chat (Command::kv). When the
// Session does not hold that chat yet, the engine thread opens the chat's KV file and restores the
// Session from it before generating, so the answer reuses the stored tokens as if the process had
// never stopped; the file's repairs come back as a Notice. After every turn (finished, stopped or
// failed) it saves the Session into the file, keeps the folder within its cap (the current chat's
// file is never deleted) and reports the sizes (EventKind::SessionKv). Every KV file problem is a
// warning: the chat goes on.
//
// Backpressure: when the ring is full, the engine thread waits (sleeping 1 ms at a time) until the
// GUI drains it; events are never dropped, except once quit was requested (nobody will read them).
//
// Thread-safety: the constructor starts the thread; post() and requestQuit() may be called from
// any thread; ring()/telemetry() are for the single consumer (the GUI thread). The destructor
// requests quit and joins (the engine checks cancel between tokens and during loading, so this
// returns within about one token's time).
#include "command_queue.h"
#include "engine_events.h"
#include "event_ring.h"
#include "telemetry.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace coli {
class SessionKvFile;
struct SessionKvState;
} // namespace coli

namespace coli::app {

struct WorkerOptions {
    int threads = 0;            // OpenMP threads for the forward pass; 0 = all cores
    size_t ringCapacity = 1024; // events
    // RAM budget of the streamed experts at load, bytes; 0 = from MemAvailable within the memory
    // cgroup's room (availableMemory, defaultExpertBudget), clamped to [minimum working set, every
    // expert + working set].
    uint64_t expertBudgetBytes = 0;
    bool prefetch = true; // router-lookahead prefetch at load
    // Tests and the GUI stall benchmark: when set, every Generate is answered by replaying this
    // recording (token_replay.h: pieces with their delays) through the same ring, telemetry and
    // Finished event as a real answer, without running the model (the conversation is ignored;
    // maxNewTokens and cancel are honoured). Delays are divided by replaySpeed; 0 = no delays.
    std::string replayFile;
    double replaySpeed = 1.0;
};

class EngineWorker {
public:
    // `wake` is called on the engine thread when the ring turns non-empty (see EventRing); it
    // must only post a notification, never block or call back into the worker.
    EngineWorker(WorkerOptions opt, std::function<void()> wake);
    ~EngineWorker();
    EngineWorker(const EngineWorker&) = delete;
    EngineWorker& operator=(const EngineWorker&) = delete;

    void post(Command cmd) { m_queue.push(std::move(cmd)); }
    // Cancels everything, asks the thread to exit and joins it. Idempotent.
    void quit();

    EventRing<EngineEvent>& ring() { return m_ring; }
    TelemetrySnapshot telemetry() const { return m_telemetry.sample(); }
    TierStatus tierStatus() const { return m_tiers.sample(); }

    // The expert cache's RAM budget (bytes, clamped to [minimumBudget, maximumBudget] of
    // TierStatus) and the prefetch switch, from any thread. Applied by the engine thread between
    // two forward steps while an answer runs (so the next token already runs under it), or at
    // once when idle; the latest request wins. A later TierStatus shows the value in force.
    // Changing them never changes a token (placement invariance), only speed.
    void requestBudget(uint64_t bytes);
    void requestPrefetch(bool on);
    // The VRAM tier's budget (bytes; Model::setVramBudget), from any thread. Applied by the engine
    // thread between two answers (never during one: the GPU's slots change), at once when idle;
    // the latest request wins. A VramBudget event follows with the budget in force, or why the
    // request was refused (no GPU tier, below one expert, the device holds no more: the tier
    // keeps its size); the next TierStatus shows it. Placement only: never changes a token.
    void requestVramBudget(uint64_t bytes);

private:
    void run();
    void publish(EngineEvent ev);
    void doLoad(const Command& c);
    void doGenerate(const Command& c);
    void applyPendingSettings(); // engine thread
    void applyPendingVram();     // engine thread, between commands only
    // Engine thread: Model::setVramBudget, and the RAM budget's limits that follow it.
    Status setVramBudget(uint64_t bytes);
    void doApplyUsage(const Command& c);
    void doUserPin(const Command& c);
    void publishTiers(int tokens, const tiers::TierTelemetry* after); // engine thread
    void updatePlan(); // engine thread: m_tierState.plan at the budget in force
    void doReplay(const Command& c);
    void doTopicProbe(const Command& c); // engine/probe/topic_probe.h on the loaded model
    // Persisted chats (engine thread). openSessionKv: before a turn, the Session takes the chat's
    // stored conversation when it does not hold the chat yet. saveSessionKv: after a turn that ran
    // the model (m_kvDirty), the file gets the Session's conversation. closeSessionKv: the Session
    // no longer holds a known chat (New chat, another chat shown, another model).
    void openSessionKv(const Command& c);
    void saveSessionKv(uint64_t id);
    void closeSessionKv();
    void doSessionKvBind(const Command& c);
    void doSessionKvDelete(const Command& c);
    // Opens m_kvTarget's file (its folder is created); notes and failures go to *warnings.
    bool openKvFile(std::vector<std::string>* warnings, SessionKvState* state);
    // Saves, keeps the cap and publishes the SessionKv event (warnings first, as its text).
    void persistKv(uint64_t id, std::vector<std::string> warnings);

    WorkerOptions m_opt;
    std::function<void()> m_wake;
    CommandQueue m_queue;
    EventRing<EngineEvent> m_ring;
    TelemetrySlot m_telemetry;
    TierStatusSlot m_tiers;
    static constexpr uint64_t kNoRequest = ~uint64_t(0);
    // relaxed: a request carries only its own value; the engine thread exchanges it out.
    std::atomic<uint64_t> m_pendingBudget{kNoRequest};
    std::atomic<int> m_pendingPrefetch{-1}; // -1: none, 0 off, 1 on
    std::atomic<uint64_t> m_pendingVram{kNoRequest};
    // engine thread only: the last publication's counters and the time spent generating
    TierStatus m_tierState;
    PlanRates m_planRates;   // measured once per load (plan_figures.h)
    double m_busyBefore = 0; // seconds generating in earlier answers
    std::chrono::steady_clock::time_point m_generateStart{};
    bool m_inGenerate = false;
    bool m_decoding = false;           // a turn's prompt has run: forward steps are decode steps
    bool m_learning = false;           // the loaded model's usage was applied
    bool m_generatedSinceLoad = false; // a turn ran before the learned usage arrived
    bool m_mirrorNoticed = false;      // the mirror's switch-off was told (one notice per load)
    std::atomic<bool> m_quitting{false};
    std::unique_ptr<LoadedModel> m_model; // engine thread only
    std::string m_loadedDir;              // engine thread only: the folder of m_model
    uint64_t m_loadId = 0;                // engine thread only: the Load that loaded m_model
    std::unique_ptr<Session> m_session;   // engine thread only
    // engine thread only: the chat whose conversation m_session holds (0: none known) and where it
    // persists; its open KV file (null until the chat has a database id and the model an identity)
    SessionKvTarget m_kvTarget;
    std::unique_ptr<SessionKvFile> m_kvFile;
    std::string m_kvWeights; // the loaded model's weightsDescription (part of the file's key)
    bool m_kvDirty = false;  // a turn ran the model since the last save
    std::thread m_thread;    // last: starts after everything above exists
};

} // namespace coli::app
