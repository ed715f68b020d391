#include "storage_worker.h"

#include "convert/sha256.h"

#include <cerrno>
#include <unistd.h>

namespace coli::app {

int64_t StorageContext::resolve(int64_t key) const {
    if (key > 0) return key;
    auto it = m_ids.find(key);
    return it == m_ids.end() ? 0 : it->second;
}

void StorageContext::bind(int64_t key, int64_t id) {
    if (key < 0) m_ids[key] = id;
}

void StorageContext::notify(std::function<void()> apply) {
    if (!m_notify) return;
    StorageEvent ev;
    ev.kind = StorageEvent::Kind::Result;
    ev.apply = std::move(apply);
    m_notify(std::move(ev));
}

void StorageContext::ack(int64_t messageId, const std::string& text) {
    if (m_ackFd < 0) return;
    convert::Sha256 h;
    h.update(text.data(), text.size());
    const std::string line = "ack " + std::to_string(messageId) + " " + h.finishHex() + "\n";
    // One write per line (under PIPE_BUF: atomic on a pipe), retried on EINTR / short writes.
    size_t done = 0;
    while (done < line.size()) {
        const ssize_t n = ::write(m_ackFd, line.data() + done, line.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return; // the reader went away: acknowledgements are only for tests
        done += size_t(n);
    }
}

StorageWorker::StorageWorker(StorageWorkerOptions opt, std::function<void(StorageEvent)> notify)
    : m_opt(std::move(opt)) {
    m_ctx.m_notify = std::move(notify);
    m_ctx.m_ackFd = m_opt.ackFd;
    m_thread = std::thread([this] { run(); });
}

StorageWorker::~StorageWorker() {
    shutdown();
}

void StorageWorker::post(std::string what, Job job) {
    {
        std::lock_guard lock(m_mutex);
        if (m_stopping) {
            ++m_dropped;
            return;
        }
        m_queue.push_back({std::move(what), std::move(job)});
    }
    m_cv.notify_one();
}

size_t StorageWorker::pending() const {
    std::lock_guard lock(m_mutex);
    return m_queue.size();
}

size_t StorageWorker::shutdown() {
    {
        std::lock_guard lock(m_mutex);
        m_stopping = true;
    }
    m_cv.notify_one();
    if (m_thread.joinable()) m_thread.join();
    std::lock_guard lock(m_mutex);
    return m_dropped;
}

void StorageWorker::run() {
    using Clock = std::chrono::steady_clock;
    auto report = [&](StorageEvent::Kind kind, std::string text) {
        if (!m_ctx.m_notify) return;
        StorageEvent ev;
        ev.kind = kind;
        ev.text = std::move(text);
        m_ctx.m_notify(std::move(ev));
    };
    storage::OpenOptions oo;
    oo.busyTimeoutMs = int(m_opt.busyTimeout.count());
    // Opening migrates under a write lock: another process holding it is waited for like a write.
    for (;;) {
        auto opened = storage::Storage::open(m_opt.path, oo);
        if (opened) {
            m_ctx.m_db = std::move(opened.value());
            m_ctx.m_sessions = std::make_unique<storage::SessionStore>(*m_ctx.m_db);
            m_available.store(true, std::memory_order_release);
            report(StorageEvent::Kind::Opened, m_opt.path);
            break;
        }
        std::unique_lock lock(m_mutex);
        if (!storage::isBusy(opened.status()) || m_stopping) {
            lock.unlock();
            report(StorageEvent::Kind::Unavailable, opened.status().message());
            break;
        }
        m_cv.wait_for(lock, m_opt.retryInterval, [&] { return m_stopping; });
    }

    Clock::time_point deadline = Clock::time_point::max();
    for (;;) {
        Item item;
        {
            std::unique_lock lock(m_mutex);
            m_cv.wait(lock, [&] { return m_stopping || !m_queue.empty(); });
            if (m_stopping && deadline == Clock::time_point::max())
                deadline = Clock::now() + m_opt.shutdownLimit;
            if (m_queue.empty()) break; // stopping with nothing left
            if (!m_ctx.m_db || Clock::now() > deadline) {
                // Unavailable: nothing can be saved (the banner said so). Past the limit at quit:
                // what is left is lost, and counted.
                if (m_ctx.m_db) m_dropped += m_queue.size();
                m_queue.clear();
                if (m_stopping) break;
                continue;
            }
            item = std::move(m_queue.front());
            m_queue.pop_front();
        }
        const Status st = item.job(m_ctx);
        if (st.isOk()) continue;
        if (storage::isBusy(st)) { // nothing was written: run it again, first
            std::unique_lock lock(m_mutex);
            m_queue.push_front(std::move(item));
            m_cv.wait_for(lock, m_opt.retryInterval, [] { return false; });
            continue;
        }
        std::string msg = item.what.empty() ? st.message() : item.what + " failed: " + st.message();
        if (msg != m_lastFailure) {
            m_lastFailure = msg;
            report(StorageEvent::Kind::Failed, msg);
        }
    }
    m_ctx.m_sessions.reset();
    m_ctx.m_db.reset(); // closed on the thread that opened it
}

} // namespace coli::app
