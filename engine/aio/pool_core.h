#pragma once
// What both IoPool backends share (private to coli_aio): the opened files, the FIFO of reads not
// yet started, the in-flight count with its statistics, request validation and completion
// (failure injection included). A backend takes requests with takeBatch() or waitForWork(),
// marks each started read with startRead(), and ends every request with complete().
// Thread-safety: every member takes `mu`; complete() runs the callback without holding it.
#include "aio/io_pool.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace coli::aio {

struct OpenedFile {
    std::string path;
    int fd = -1;       // O_RDONLY
    int directFd = -1; // O_RDONLY | O_DIRECT when the file passed the check, else -1
    uint64_t size = 0; // bytes at openFile time
    std::string note;  // why a file is buffered under DirectIo::Auto ("" otherwise)
};

struct PendingRead {
    ReadRequest request;
    ReadDone done;
};

// The handle a started read uses.
struct ResolvedRead {
    const OpenedFile* file = nullptr;
    int fd = -1;         // directFd when the file has one, else fd
    bool direct = false; // fd is the O_DIRECT handle (no DONTNEED after the read)
    uint64_t need = 0; // bytes that must be read: length, less an aligned read's tail past the end
};

class PoolCore {
public:
    PoolCore(int queueDepth, DirectIo directIo, std::string refusePattern)
        : m_queueDepth(queueDepth), m_directIo(directIo),
          m_refusePattern(std::move(refusePattern)) {}
    ~PoolCore(); // closes the files; the backend must have stopped
    PoolCore(const PoolCore&) = delete;
    PoolCore& operator=(const PoolCore&) = delete;

    int queueDepth() const { return m_queueDepth; }
    DirectIo directIoMode() const { return m_directIo; }

    Result<int> openFile(const std::string& path, bool buffered);
    Result<uint64_t> fileSize(int file) const;
    bool fileDirect(int file) const;
    std::string fileNote(int file) const;
    // Files opened so far, and how many of them read through O_DIRECT.
    void countFiles(int* all, int* direct) const;
    // The handle for `r`, or InvalidArgument (unknown file, zero length, null dst, misaligned
    // for an O_DIRECT file). The OpenedFile stays valid until the PoolCore is destroyed.
    Result<ResolvedRead> resolve(const ReadRequest& r) const;

    void push(PendingRead read);
    // Moves up to `max` queued reads into `out` without waiting; returns how many.
    size_t takeBatch(std::vector<PendingRead>& out, size_t max);
    // Blocks until a read is queued (true, the read moved into `out`) or stop() was called and
    // the queue is empty (false).
    bool waitForWork(PendingRead& out);
    // True once stop() was called and the queue is empty.
    bool drained() const;
    void stop();

    // Counts one read as in flight (busy time starts when the count leaves 0).
    void startRead();
    // Ends a request: applies an injected failure, updates the statistics, leaves the in-flight
    // count when `wasInFlight`, then runs `done` (after releasing the lock).
    void complete(PendingRead& read, Status status, bool wasInFlight);

    void injectFailure(uint64_t afterReads);
    IoStats stats() const;

private:
    using Clock = std::chrono::steady_clock;
    const int m_queueDepth;
    const DirectIo m_directIo;
    const std::string m_refusePattern; // the test hook's (direct_probe.h)
    mutable std::mutex m_mu;
    std::condition_variable m_work;
    std::vector<std::unique_ptr<OpenedFile>> m_files;
    std::deque<PendingRead> m_queue;
    bool m_stopping = false;
    int m_inFlight = 0;
    Clock::time_point m_busySince;
    IoStats m_stats;
    uint64_t m_completions = 0;
    bool m_injectArmed = false;
    uint64_t m_injectAt = 0;
};

// A running backend: its threads take work from the PoolCore until it is drained.
class Backend {
public:
    virtual ~Backend() = default;
    // A read was queued (the pread workers wait on the core's condition variable instead).
    virtual void wake() = 0;
    // Returns once every queued and in-flight read has completed and the threads have exited;
    // PoolCore::stop() must have been called.
    virtual void join() = 0;
};

Result<std::unique_ptr<Backend>> startPreadThreads(PoolCore& core);
// Unsupported when liburing is not compiled in or io_uring_queue_init is refused (errno text).
Result<std::unique_ptr<Backend>> startUring(PoolCore& core);

} // namespace coli::aio
