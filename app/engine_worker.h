#pragma once
// The engine thread (threading contract rule 1): one std::thread that pops commands from the
// CommandQueue and runs them against the engine (load, generate, reset), pushing events into the
// EventRing and telemetry into the TelemetrySlot. Plain C++, no Qt: EngineController adapts it.
//
// The worker owns the LoadedModel and the Session; they are touched only by the engine thread.
// OpenMP teams exist only inside the engine's forward pass; the piece callback runs on this thread.
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
#include <functional>
#include <memory>
#include <thread>

namespace coli::app {

struct WorkerOptions {
    int threads = 0;            // OpenMP threads for the forward pass; 0 = all cores
    size_t ringCapacity = 1024; // events
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

private:
    void run();
    void publish(EngineEvent ev);
    void doLoad(const Command& c);
    void doGenerate(const Command& c);

    WorkerOptions m_opt;
    std::function<void()> m_wake;
    CommandQueue m_queue;
    EventRing<EngineEvent> m_ring;
    TelemetrySlot m_telemetry;
    std::atomic<bool> m_quitting{false};
    std::unique_ptr<LoadedModel> m_model; // engine thread only
    std::unique_ptr<Session> m_session;   // engine thread only
    std::thread m_thread;                 // last: starts after everything above exists
};

} // namespace coli::app
