// IoBackend::PreadThreads: queueDepth threads, each taking the oldest queued read and doing
// blocking pread()s, so at most queueDepth reads are in flight. Works wherever pread does.
#include "aio/pool_core.h"
#include "aio/read_range.h"

#include <thread>
#include <vector>

namespace coli::aio {
namespace {

class PreadThreads final : public Backend {
public:
    explicit PreadThreads(PoolCore& core) : m_core(core) {
        for (int i = 0; i < core.queueDepth(); ++i)
            m_threads.emplace_back([this] { run(); });
    }
    ~PreadThreads() override { join(); }

    void wake() override {} // push() already notified the core's condition variable
    void join() override {
        for (auto& t : m_threads)
            if (t.joinable()) t.join();
    }

private:
    void run() {
        PendingRead read;
        while (m_core.waitForWork(read)) {
            auto resolved = m_core.resolve(read.request);
            if (!resolved) {
                m_core.complete(read, resolved.status(), false);
                continue;
            }
            const ReadRequest& r = read.request;
            m_core.startRead();
            Status s = preadFully(resolved->fd, resolved->file->path, r.offset, r.length, r.dst,
                                  resolved->need);
            if (!resolved->direct) dropCachedRange(resolved->fd, r.offset, r.length);
            m_core.complete(read, std::move(s), true);
        }
    }

    PoolCore& m_core;
    std::vector<std::thread> m_threads;
};

} // namespace

Result<std::unique_ptr<Backend>> startPreadThreads(PoolCore& core) {
    return std::unique_ptr<Backend>(std::make_unique<PreadThreads>(core));
}

} // namespace coli::aio
