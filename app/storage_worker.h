#pragma once
// The app's storage thread (threading contract rule 6): one std::thread that opens the database
// (storage/database.h) and uses that connection only; values cross threads, never handles. The
// GUI posts jobs; a job runs on this thread against the StorageContext and reports back through
// the `notify` callback (called on this thread: the Qt adapter, SessionManager, posts the value
// to the GUI thread).
//
// Order and retries: jobs run one at a time in the order posted. A job whose Status says the
// database is locked by another connection (storage::isBusy: nothing was written) stays at the
// head of the queue and runs again after `retryInterval`, so later jobs never overtake it and
// nothing is lost. Any other failure is reported once per distinct message (a banner: chats are
// not being saved) and the job is dropped; the app keeps working. When the database cannot be
// opened (damaged, read-only folder, a newer schema) every job is dropped unrun and the file is
// left untouched; `available()` says so.
//
// Keys: the GUI names sessions and messages before the database has given them ids. A key > 0 is
// a database id; a key < 0 is provisional (allocated by newKey()) and bound to the id the
// database assigns when the job that creates the row runs (StorageContext::bind / resolve).
//
// Acknowledgements (for the kill test): with ackFd >= 0, every committed write of a message's
// text appends "ack <message id> <sha256 hex of the text>\n" to that descriptor after the commit.
//
// Thread-safety: post(), newKey(), available() and pending() may be called from any thread;
// shutdown() from the owner's thread. The destructor calls shutdown().
#include "core/status.h"
#include "storage/database.h"
#include "storage/sessions.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

namespace coli::app {

struct StorageEvent {
    enum class Kind {
        Opened,      // the database is open (text = its path)
        Unavailable, // it could not be opened (text = why, naming the file); nothing is saved
        Failed,      // a job failed (text = what and why); later jobs still run
        Result,      // a job's own result (posted by the job through StorageContext::notify)
    };
    Kind kind = Kind::Result;
    std::string text;
    std::function<void()> apply; // Result: runs on the receiving (GUI) thread
};

struct StorageWorkerOptions {
    std::string path; // the database file (storage/location.h gives the default)
    int ackFd = -1;   // see the header comment; -1: none
    std::chrono::milliseconds retryInterval{250};
    std::chrono::milliseconds busyTimeout{1000};    // SQLite's own wait per attempt
    std::chrono::milliseconds shutdownLimit{15000}; // the longest shutdown() waits for writes
};

class StorageContext {
public:
    storage::Storage& db() { return *m_db; }
    storage::SessionStore& sessions() { return *m_sessions; }
    // The database id of a key (see the header comment); 0 when a provisional key is not bound.
    int64_t resolve(int64_t key) const;
    void bind(int64_t key, int64_t id);
    // Sends a result to the GUI: `apply` runs there (capture values only).
    void notify(std::function<void()> apply);
    // After a committed write of a message's text (no-op without an ack descriptor).
    void ack(int64_t messageId, const std::string& text);

private:
    friend class StorageWorker;
    std::unique_ptr<storage::Storage> m_db;
    std::unique_ptr<storage::SessionStore> m_sessions;
    std::unordered_map<int64_t, int64_t> m_ids;
    std::function<void(StorageEvent)> m_notify;
    int m_ackFd = -1;
};

class StorageWorker {
public:
    using Job = std::function<Status(StorageContext&)>;

    StorageWorker(StorageWorkerOptions opt, std::function<void(StorageEvent)> notify);
    ~StorageWorker();
    StorageWorker(const StorageWorker&) = delete;
    StorageWorker& operator=(const StorageWorker&) = delete;

    // Queues `job`; `what` names it in failure messages ("Saving the answer" -> "Saving the
    // answer failed: FILE: ...").
    void post(std::string what, Job job);
    int64_t newKey() { return m_nextKey.fetch_sub(1, std::memory_order_relaxed); }
    bool available() const { return m_available.load(std::memory_order_acquire); }
    size_t pending() const;
    // Runs the queued jobs that are left (a locked database is retried until shutdownLimit),
    // then closes the database and joins the thread. Returns the number of jobs not run
    // (0 normally). Idempotent.
    size_t shutdown();

private:
    struct Item {
        std::string what;
        Job job;
    };
    void run();

    StorageWorkerOptions m_opt;
    StorageContext m_ctx; // storage thread only (after start)
    mutable std::mutex m_mutex;
    std::condition_variable m_cv;
    std::deque<Item> m_queue;
    bool m_stopping = false;
    size_t m_dropped = 0;
    std::atomic<bool> m_available{false};
    std::atomic<int64_t> m_nextKey{-1};
    std::string m_lastFailure; // storage thread: one report per distinct message
    std::thread m_thread;      // last: starts after everything above exists
};

} // namespace coli::app
