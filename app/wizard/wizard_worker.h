#pragma once
// The wizard's worker thread (docs/design.md, threading contract): one std::thread that runs the
// wizard's long jobs one at a time, in the order posted (inspecting a folder, asking free space,
// converting; later downloading, planning, doctor and mirror staging), so the GUI thread never
// reads weights, hashes or waits for a disk. A job gets its own cancel flag; results go back to
// the GUI thread as values (the job posts them with QMetaObject::invokeMethod, queued), progress
// as latest-wins snapshots sampled by the GUI.
// Thread-safety: post() and cancelAll() from any thread; shutdown() (also the destructor) from
// the owner's thread: it cancels every job, drops the queued ones and joins.
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace coli::app::wizard {

class WizardWorker {
public:
    using Cancel = std::shared_ptr<std::atomic<bool>>;
    using Job = std::function<void(const std::atomic<bool>& cancel)>;

    WizardWorker();
    ~WizardWorker();
    WizardWorker(const WizardWorker&) = delete;
    WizardWorker& operator=(const WizardWorker&) = delete;

    // Queues `job`; the returned flag cancels it (the job reads it between steps).
    Cancel post(Job job);
    // Sets the flags of the running and queued jobs.
    void cancelAll();
    void shutdown();

private:
    struct Item {
        Job job;
        Cancel cancel;
    };
    void run();

    std::mutex m_mutex;
    std::condition_variable m_cv;
    std::deque<Item> m_queue;
    Cancel m_running;
    bool m_stopping = false;
    std::thread m_thread; // last: starts after everything above exists
};

} // namespace coli::app::wizard
