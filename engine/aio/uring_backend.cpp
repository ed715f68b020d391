// IoBackend::Uring: one thread owns an io_uring with queueDepth read entries plus one poll on an
// eventfd that submit() writes to, so the thread sleeps in io_uring_wait_cqe() both for
// completions and for new work. Short reads are resubmitted for the rest of the range.
#include "aio/pool_core.h"
#include "aio/read_range.h"

#include <liburing.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <poll.h>
#include <sys/eventfd.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace coli::aio {
namespace {

struct UringRead {
    PendingRead read;
    ResolvedRead file;
    uint64_t got = 0; // bytes already read (short reads continue from here)
};

class Uring final : public Backend {
public:
    Uring(PoolCore& core, int eventFd) : m_core(core), m_eventFd(eventFd) {}
    ~Uring() override {
        join();
        if (m_ringReady) io_uring_queue_exit(&m_ring);
        ::close(m_eventFd);
    }

    // One entry per read in flight plus the eventfd poll. Returns 0 or -errno.
    int init() {
        const int rc = io_uring_queue_init(unsigned(m_core.queueDepth() + 1), &m_ring, 0);
        m_ringReady = rc == 0;
        return rc;
    }
    void start() {
        m_thread = std::thread([this] { run(); });
    }

    void wake() override {
        const uint64_t one = 1;
        // Cannot fail short of a bug: the counter is far from overflow and the fd is open.
        (void)!::write(m_eventFd, &one, sizeof one);
    }
    void join() override {
        if (!m_thread.joinable()) return;
        wake(); // the core is stopping: let the thread see it
        m_thread.join();
    }

private:
    void armWake() {
        io_uring_sqe* sqe = io_uring_get_sqe(&m_ring);
        io_uring_prep_poll_add(sqe, m_eventFd, POLLIN);
        io_uring_sqe_set_data(sqe, nullptr);
    }

    void prepRead(UringRead* op) {
        io_uring_sqe* sqe = io_uring_get_sqe(&m_ring);
        const ReadRequest& r = op->read.request;
        // The SQE's length is 32 bits: a longer read goes in 1 GiB pieces (short-read path).
        const uint64_t piece = std::min<uint64_t>(r.length - op->got, uint64_t(1) << 30);
        io_uring_prep_read(sqe, op->file.fd, static_cast<unsigned char*>(r.dst) + op->got,
                           unsigned(piece), r.offset + op->got);
        io_uring_sqe_set_data(sqe, op);
    }

    void finish(UringRead* op, Status s) {
        const ReadRequest& r = op->read.request;
        if (s.isOk() && !op->file.direct) dropCachedRange(op->file.fd, r.offset, r.length);
        --m_inKernel;
        m_core.complete(op->read, std::move(s), true);
        delete op;
    }

    // One completion of a read: done, failed, or resubmitted for the rest of a short read.
    void onCompletion(UringRead* op, int res) {
        const ReadRequest& r = op->read.request;
        if (res == -EINTR || res == -EAGAIN) return prepRead(op);
        if (res < 0)
            return finish(op,
                          readError(op->file.file->path, r.offset, r.length, std::strerror(-res)));
        if (res == 0)
            return finish(op,
                          op->got >= op->file.need
                              ? Status::ok()
                              : endOfFileError(op->file.file->path, r.offset, r.length, op->got));
        op->got += uint64_t(res);
        if (op->got < r.length) return prepRead(op);
        finish(op, Status::ok());
    }

    // Starts queued reads until queueDepth are in the kernel or the queue is empty (invalid
    // requests complete at once and take no room).
    void startQueued() {
        std::vector<PendingRead> batch;
        while (m_inKernel < m_core.queueDepth()) {
            batch.clear();
            if (m_core.takeBatch(batch, size_t(m_core.queueDepth() - m_inKernel)) == 0) return;
            for (PendingRead& read : batch) {
                auto resolved = m_core.resolve(read.request);
                if (!resolved) {
                    m_core.complete(read, resolved.status(), false);
                    continue;
                }
                auto* op = new UringRead{std::move(read), *resolved, 0};
                m_core.startRead();
                ++m_inKernel;
                prepRead(op);
            }
        }
    }

    void run() {
        armWake();
        for (;;) {
            startQueued();
            io_uring_submit(&m_ring);
            if (m_inKernel == 0 && m_core.drained()) break;
            io_uring_cqe* cqe = nullptr;
            const int rc = io_uring_wait_cqe(&m_ring, &cqe);
            if (rc == -EINTR) continue;
            if (rc < 0) {
                // Cannot happen with a valid ring; stop this backend's loop rather than spin.
                failAllInKernel(rc);
                break;
            }
            unsigned head = 0, seen = 0;
            io_uring_for_each_cqe(&m_ring, head, cqe) {
                ++seen;
                auto* op = static_cast<UringRead*>(io_uring_cqe_get_data(cqe));
                if (op == nullptr) {
                    uint64_t count = 0;
                    (void)!::read(m_eventFd, &count, sizeof count);
                    armWake();
                } else {
                    onCompletion(op, cqe->res);
                }
            }
            io_uring_cq_advance(&m_ring, seen);
        }
    }

    void failAllInKernel(int rc) {
        // Reads still owned by the kernel cannot be completed safely: leave their memory (a
        // leak beats a use-after-free) and report the ring error for what is still queued.
        std::vector<PendingRead> rest;
        m_core.takeBatch(rest, size_t(-1));
        for (PendingRead& read : rest)
            m_core.complete(read,
                            Status(ErrorCode::Io,
                                   std::string("io_uring_wait_cqe failed: ") + std::strerror(-rc)),
                            false);
    }

    PoolCore& m_core;
    int m_eventFd;
    io_uring m_ring{};
    bool m_ringReady = false;
    std::thread m_thread;
    int m_inKernel = 0; // reads submitted and not completed (this thread only)
};

} // namespace

Result<std::unique_ptr<Backend>> startUring(PoolCore& core) {
    const int efd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (efd < 0)
        return Status(ErrorCode::Unsupported,
                      std::string("io_uring: eventfd failed: ") + std::strerror(errno));
    auto backend = std::make_unique<Uring>(core, efd); // owns efd from here
    if (const int rc = backend->init(); rc < 0)
        return Status(ErrorCode::Unsupported,
                      std::string("io_uring_queue_init failed: ") + std::strerror(-rc));
    backend->start();
    return std::unique_ptr<Backend>(std::move(backend));
}

} // namespace coli::aio
