#pragma once
// The asynchronous read pool of the expert tiers (docs/design.md "Expert tiers", step 4 "overlap"):
// whole-expert reads are submitted by the compute thread (or the prefetcher) and complete on the
// pool's own threads while resident experts compute. Two backends behind one interface:
//   IoBackend::Uring        - io_uring through liburing: one submission thread, up to queueDepth
//                             reads in flight in the kernel.
//   IoBackend::PreadThreads - queueDepth threads, each doing blocking pread()s.
// IoBackend::Auto picks Uring when liburing is compiled in and io_uring_queue_init succeeds (a
// container's seccomp filter often refuses it), else PreadThreads; backend() says which ran.
// Buffered reads are followed by posix_fadvise(POSIX_FADV_DONTNEED) on the range read, so the page
// cache does not keep a second copy of what the expert cache already holds (RSS stays honest).
// Under DirectIo::Auto or On each file is checked (aio/direct_probe.h) and, when it passes,
// opened a second time with O_DIRECT; every read of such a file goes through that handle: offset,
// length and destination must then be multiples of / aligned to kDirectIoAlign. Under Auto a
// file that fails the check is read buffered, with one note (fileNote); under On it is an error.
// The rule for which mode the engine picks is in docs/tiers.md "Buffered or O_DIRECT". No mmap.
// Thread-safety: all member functions may be called from any thread; completion callbacks run on
// a pool thread (never inside submit()), one at a time per read, and must not call submit() of a
// pool being destroyed. Under io_uring every callback runs on the one submission thread, so a slow
// callback delays the next submissions: keep callbacks short (hand work to another thread).
#include "core/status.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace coli::aio {

// O_DIRECT alignment (bytes) of offsets, lengths and buffers; 4096 covers the logical block size
// of current disks and matches the container's expert alignment (docs/container.md).
constexpr uint64_t kDirectIoAlign = 4096;

enum class IoBackend { Auto, Uring, PreadThreads };
const char* ioBackendName(IoBackend b); // "auto", "io_uring", "pread-threads"

// Buffered or O_DIRECT reads (docs/tiers.md "Buffered or O_DIRECT").
enum class DirectIo {
    Off,  // every file buffered (+ POSIX_FADV_DONTNEED after each read)
    Auto, // O_DIRECT for each file that passes the check (direct_probe.h), else buffered + a note
    On,   // O_DIRECT for every file; openFile fails (Unsupported) for a file that does not pass
};
const char* directIoName(DirectIo d); // "buffered", "auto", "O_DIRECT"

struct IoOptions {
    IoBackend backend = IoBackend::Auto;
    int queueDepth = 4; // reads in flight at most (1..64): pread threads, or io_uring entries
    DirectIo directIo = DirectIo::Off;
    // Test hook (aio/direct_probe.h): files whose path contains this text fail the O_DIRECT check
    // as if the file system refused it. "" = the environment variable COLI_TEST_REFUSE_DIRECT_IO,
    // else none.
    std::string testRefuseDirect;
};

struct ReadRequest {
    int file = -1;       // an index returned by IoPool::openFile
    uint64_t offset = 0; // bytes from the file's start
    // Bytes to read (> 0); all of them must exist (a short file is an error), except that a
    // read with offset and length multiples of kDirectIoAlign may run past the file's end by less
    // than kDirectIoAlign (an O_DIRECT read of a range rounded out to whole blocks): the bytes past
    // the end are left as they were in dst.
    uint64_t length = 0;
    void* dst = nullptr; // length bytes, owned by the caller until `done` has run
};

// Called exactly once per submitted read, on a pool thread: OK when all `length` bytes were read;
// Io naming the file, offset and errno text otherwise (also for end of file before `length`).
using ReadDone = std::function<void(const Status&)>;

struct IoStats {
    uint64_t reads = 0;     // completed reads (failed ones included)
    uint64_t bytes = 0;     // bytes read by successful reads
    uint64_t failed = 0;    // reads completed with an error
    double busySeconds = 0; // wall seconds with at least one read in flight (steady clock)
    int maxInFlight = 0;    // the most reads in flight at once so far
};

// What a pool did between two snapshots of its stats() (earlier taken first): the counts and busy
// seconds subtracted; maxInFlight is later's (a high-water mark since the pool's creation, not a
// count of the interval). Pure; no checks (an earlier snapshot of another pool gives nonsense).
inline IoStats operator-(const IoStats& later, const IoStats& earlier) {
    IoStats d = later;
    d.reads -= earlier.reads;
    d.bytes -= earlier.bytes;
    d.failed -= earlier.failed;
    d.busySeconds -= earlier.busySeconds;
    return d;
}

class IoPool {
public:
    // Errors: InvalidArgument (queueDepth outside 1..64); Unsupported when backend is Uring and
    // io_uring cannot be set up here (the message gives the errno text).
    static Result<std::unique_ptr<IoPool>> create(const IoOptions& options);
    // Waits for every submitted read to complete (callbacks run) before returning.
    ~IoPool();
    IoPool(const IoPool&) = delete;
    IoPool& operator=(const IoPool&) = delete;

    // Opens `path` read-only and returns its index for ReadRequest::file. Under DirectIo::Auto and
    // On (and `buffered` false) the file is checked for O_DIRECT (direct_probe.h) and, when it
    // passes, opened a second time with O_DIRECT. `buffered` true reads this file buffered
    // whatever the mode (a source's choice, docs/tiers.md). Blocks for the check's one read.
    // Errors: NotFound / Io naming the path; under On, Unsupported naming the path, the file
    // system and the reason when the file does not pass the check (under Auto it is read
    // buffered and fileNote() says why).
    Result<int> openFile(const std::string& path, bool buffered = false);
    // Size in bytes of an opened file. InvalidArgument for an unknown index.
    Result<uint64_t> fileSize(int file) const;
    // Whether reads of an opened file go through O_DIRECT (false for an unknown index).
    bool fileDirect(int file) const;
    // Under DirectIo::Auto, for a file that failed the O_DIRECT check: one line naming the file,
    // its file system and the reason, saying it is read buffered. "" otherwise (also for an
    // unknown index).
    std::string fileNote(int file) const;

    // Queues a read; never blocks on I/O (requests beyond queueDepth wait in a FIFO queue).
    // Invalid requests (unknown file, zero length, null dst, misaligned under directIo) complete
    // with InvalidArgument through `done`, still on a pool thread.
    void submit(const ReadRequest& request, ReadDone done);
    // Reads synchronously on the calling thread with the same handles and fadvise rules; for
    // loading outside the pool. Not counted in stats() and never hit by injectFailure().
    // Errors: InvalidArgument as for submit(), else as ReadDone's.
    Status readNow(const ReadRequest& request);

    IoBackend backend() const;     // the backend actually running (never Auto)
    DirectIo directIoMode() const; // as created
    // True when the mode is not Off and every file opened so far reads through O_DIRECT.
    bool directIo() const;
    // "O_DIRECT", "buffered", or "O_DIRECT (N of M files buffered)" for the files opened so far;
    // for load summaries.
    std::string readModeText() const;
    int queueDepth() const;
    IoStats stats() const; // a consistent snapshot

    // Test hook (fault injection): the read that completes `afterReads` completions from now
    // (0 = the next one; refused requests count) fails with Io "injected read failure" instead of
    // its real result. A later call replaces an injection that has not fired yet.
    void injectFailure(uint64_t afterReads);

private:
    IoPool();
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

} // namespace coli::aio
