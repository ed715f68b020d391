#pragma once
// Commands from the GUI thread to the engine thread (threading contract rule 2): a small FIFO
// guarded by a mutex and a condition variable. Plain C++, no Qt.
//
// Each command carries its own cancel flag, which the engine passes to LoadedModel::load and
// Session::generate (read between tokens). Cancel and Quit are not queued behind running work:
//   - push(Cancel) sets the flag of the running command and of every queued one, and drops queued
//     Generate commands (a stopped answer must not start later); nothing is delivered.
//   - push(Quit) cancels everything the same way, drops all queued commands but SessionKvBind and
//     SessionKvDelete (quick file work that would otherwise leave a chat's KV cache unsaved or a
//     deleted chat's on disk) and delivers Quit right after those.
// Thread-safety: every member may be called from any thread.
#include "aio/io_pool.h"
#include "chat/chat_template.h"
#include "probe/topic_probe.h"
#include "runtime/sampling_defaults.h"
#include "runtime/session.h"
#include "user_pin_change.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace coli::learning {
struct LearnedUsage;
}

namespace coli::app {

// ApplySettings wakes an idle engine thread to apply the pending expert budget / prefetch switch
// (EngineWorker::requestBudget); during an answer they are applied between tokens instead. A
// pending VRAM budget (requestVramBudget) is applied only by this command, so between answers.
// ApplyUsage hands the learned expert usage of the loaded model (read by the storage thread) to
// the engine thread, which puts it into the expert cache before the first answer.
// UserPin changes a user pin or the exclusions (UserPinChange); queued like a Generate, it runs
// after the answer in progress: user pins change at turn boundaries, never mid-answer.
// TopicProbe runs the topic probe on the loaded model (engine/probe/topic_probe.h): queued like
// an answer, so an answer sent meanwhile waits for it; its own cancel flag stops it between
// chunks (EngineController::cancelTopicProbe), as does Cancel.
// SessionKvBind: the conversation the engine holds for the chat `kvFrom` (a provisional key, or
// the same id when the model's identity just became known) is the chat `kv.session`: its KV file
// is opened and saved now (docs/app.md "Sessions"). SessionKvDelete: the chat `kv.session` was
// deleted: its KV file goes. Both are queued behind the answer in progress (which saves first) and
// survive Cancel.
enum class CommandKind {
    Load,
    Generate,
    Cancel,
    Reset,
    Quit,
    ApplySettings,
    ApplyUsage,
    UserPin,
    TopicProbe,
    SessionKvBind,
    SessionKvDelete
};

// Load: what the Settings view chose for the next model load (ModelLoadOptions).
struct LoadSettings {
    int threads = 0;             // forward-pass threads; 0 = the worker's default
    uint64_t ramBudgetBytes = 0; // RAM for streamed experts; 0 = automatic (from MemAvailable)
    // Expert reads: Auto (the engine's rule), On (O_DIRECT always), Off (buffered).
    aio::DirectIo readMode = aio::DirectIo::Auto;
    bool prefetch = true;  // router-lookahead prefetch
    std::string mirrorDir; // a mirror of model files on a second disk; "" = none
    // The VRAM tier's device (ExpertTierOptions::gpu): "none", "auto" or part of a device name.
    std::string gpu = "none";
    // VRAM for experts, set after the load (Model::setVramBudget; ignored without a GPU tier);
    // 0 = the engine's default (docs/gpu.md "Budget"). A value the device refuses keeps the default
    // and says why in the load notice.
    uint64_t vramBudgetBytes = 0;
};

// Generate, SessionKvBind, SessionKvDelete: where the chat's KV cache persists
// (runtime/session_kv_file.h, runtime/session_kv_dir.h). Not persisted when dir or modelIdentity
// is empty or session is not a database id (> 0).
struct SessionKvTarget {
    std::string dir;           // the KV folder: sessionKvDir(database path); "" = no persistence
    int64_t session = 0;       // the chat's database id; < 0 a provisional key; 0 none (New chat)
    std::string modelIdentity; // of the loaded model (storage/model_identity.h); "" = not known yet
    uint64_t capBytes = 0;     // all the folder's KV files together; 0 = defaultSessionKvCap(dir)
};

struct Command {
    explicit Command(CommandKind k = CommandKind::Quit) : kind(k) {}
    CommandKind kind;
    uint64_t id = 0;                   // request id, echoed in the events it produces
    std::string dir;                   // Load: model directory
    LoadSettings load;                 // Load: options from the Settings view
    std::vector<ChatMessage> messages; // Generate: the whole conversation so far
    GenerateParams params;             // Generate (params.sampler is resolved by the engine
    SamplingOverrides sampling;        //   thread from these and the model's defaults)
    std::shared_ptr<std::atomic<bool>> cancel = std::make_shared<std::atomic<bool>>(false);
    std::shared_ptr<const learning::LearnedUsage> usage; // ApplyUsage (for the model in `dir`)
    UserPinChange pin;                                   // UserPin
    // Generate, "Continue": the answer so far, appended to the rendered prompt (after the
    // generation prompt) so the model goes on from it; `messages` end with the user message.
    std::string continueText;
    std::string topicsFile;           // TopicProbe: the topic set (`dir`: the model it is for)
    probe::ProbeOptions probeOptions; // TopicProbe (tests lower the minimum sizes)
    SessionKvTarget kv;               // Generate, SessionKvBind, SessionKvDelete
    int64_t kvFrom = 0;               // SessionKvBind: the key the engine knew the chat by
};

class CommandQueue {
public:
    void push(Command cmd) {
        std::lock_guard lock(m_mutex);
        switch (cmd.kind) {
        case CommandKind::Cancel:
            cancelAllLocked();
            std::erase_if(m_queue,
                          [](const Command& c) { return c.kind == CommandKind::Generate; });
            return; // nothing to deliver: the flags did the work
        case CommandKind::Quit:
            cancelAllLocked();
            std::erase_if(m_queue, [](const Command& c) {
                return c.kind != CommandKind::SessionKvBind &&
                       c.kind != CommandKind::SessionKvDelete;
            });
            m_queue.push_back(std::move(cmd));
            break;
        default:
            m_queue.push_back(std::move(cmd));
        }
        m_cv.notify_one();
    }

    // Engine thread: blocks until a command arrives. The popped command becomes "running" (its
    // cancel flag is reachable by a later Cancel/Quit) until the next pop.
    Command pop() {
        std::unique_lock lock(m_mutex);
        m_cv.wait(lock, [this] { return !m_queue.empty(); });
        Command c = std::move(m_queue.front());
        m_queue.pop_front();
        m_running = c.cancel;
        return c;
    }

    // Like pop() but gives up after `timeout` (used by tests).
    std::optional<Command> popFor(std::chrono::milliseconds timeout) {
        std::unique_lock lock(m_mutex);
        if (!m_cv.wait_for(lock, timeout, [this] { return !m_queue.empty(); })) return std::nullopt;
        Command c = std::move(m_queue.front());
        m_queue.pop_front();
        m_running = c.cancel;
        return c;
    }

    size_t size() const {
        std::lock_guard lock(m_mutex);
        return m_queue.size();
    }

private:
    void cancelAllLocked() {
        // relaxed is enough: the flag carries no data, the engine only needs to see it eventually
        // (it polls between tokens), and the mutex orders it with the queue contents anyway.
        if (m_running) m_running->store(true, std::memory_order_relaxed);
        for (auto& c : m_queue)
            c.cancel->store(true, std::memory_order_relaxed);
    }

    mutable std::mutex m_mutex;
    std::condition_variable m_cv;
    std::deque<Command> m_queue;
    std::shared_ptr<std::atomic<bool>> m_running;
};

} // namespace coli::app
