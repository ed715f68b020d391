#include "aio/io_pool.h"

#include "aio/direct_probe.h"
#include "aio/pool_core.h"
#include "aio/read_range.h"

namespace coli::aio {

#ifndef COLI_HAVE_LIBURING
Result<std::unique_ptr<Backend>> startUring(PoolCore&) {
    return Status(ErrorCode::Unsupported,
                  "io_uring: this build has no liburing (install liburing-dev and reconfigure)");
}
#endif

const char* directIoName(DirectIo d) {
    switch (d) {
    case DirectIo::Off:
        return "buffered";
    case DirectIo::Auto:
        return "auto";
    case DirectIo::On:
        return "O_DIRECT";
    }
    return "unknown";
}

const char* ioBackendName(IoBackend b) {
    switch (b) {
    case IoBackend::Auto:
        return "auto";
    case IoBackend::Uring:
        return "io_uring";
    case IoBackend::PreadThreads:
        return "pread-threads";
    }
    return "unknown";
}

struct IoPool::Impl {
    Impl(int queueDepth, DirectIo directIo, std::string refusePattern)
        : core(queueDepth, directIo, std::move(refusePattern)) {}
    ~Impl() {
        core.stop();
        if (backend) backend->join();
        backend.reset(); // before core's destructor closes the files
    }
    PoolCore core;
    std::unique_ptr<Backend> backend;
    IoBackend kind = IoBackend::PreadThreads;
};

IoPool::IoPool() = default;
IoPool::~IoPool() = default;

Result<std::unique_ptr<IoPool>> IoPool::create(const IoOptions& options) {
    if (options.queueDepth < 1 || options.queueDepth > 64)
        return Status(ErrorCode::InvalidArgument,
                      "I/O queue depth " + std::to_string(options.queueDepth) + " outside 1..64");
    std::unique_ptr<IoPool> pool(new IoPool());
    pool->m_impl = std::make_unique<Impl>(options.queueDepth, options.directIo,
                                          refuseDirectPattern(options.testRefuseDirect));
    Impl& impl = *pool->m_impl;
    if (options.backend != IoBackend::PreadThreads) {
        auto uring = startUring(impl.core);
        if (uring) {
            impl.backend = std::move(uring).value();
            impl.kind = IoBackend::Uring;
        } else if (options.backend == IoBackend::Uring) {
            return uring.status();
        }
    }
    if (!impl.backend) {
        auto threads = startPreadThreads(impl.core);
        if (!threads) return threads.status();
        impl.backend = std::move(threads).value();
        impl.kind = IoBackend::PreadThreads;
    }
    return pool;
}

Result<int> IoPool::openFile(const std::string& path, bool buffered) {
    return m_impl->core.openFile(path, buffered);
}

bool IoPool::fileDirect(int file) const {
    return m_impl->core.fileDirect(file);
}

std::string IoPool::fileNote(int file) const {
    return m_impl->core.fileNote(file);
}

Result<uint64_t> IoPool::fileSize(int file) const {
    return m_impl->core.fileSize(file);
}

void IoPool::submit(const ReadRequest& request, ReadDone done) {
    m_impl->core.push(PendingRead{request, std::move(done)});
    m_impl->backend->wake();
}

Status IoPool::readNow(const ReadRequest& request) {
    auto resolved = m_impl->core.resolve(request);
    if (!resolved) return resolved.status();
    Status s = preadFully(resolved->fd, resolved->file->path, request.offset, request.length,
                          request.dst, resolved->need);
    if (!resolved->direct) dropCachedRange(resolved->fd, request.offset, request.length);
    return s;
}

IoBackend IoPool::backend() const {
    return m_impl->kind;
}
DirectIo IoPool::directIoMode() const {
    return m_impl->core.directIoMode();
}
bool IoPool::directIo() const {
    int all = 0, direct = 0;
    m_impl->core.countFiles(&all, &direct);
    return m_impl->core.directIoMode() != DirectIo::Off && direct == all;
}
std::string IoPool::readModeText() const {
    int all = 0, direct = 0;
    m_impl->core.countFiles(&all, &direct);
    if (direct == 0) return "buffered";
    if (direct == all) return "O_DIRECT";
    return "O_DIRECT (" + std::to_string(all - direct) + " of " + std::to_string(all) +
           " files buffered)";
}
int IoPool::queueDepth() const {
    return m_impl->core.queueDepth();
}
IoStats IoPool::stats() const {
    return m_impl->core.stats();
}
void IoPool::injectFailure(uint64_t afterReads) {
    m_impl->core.injectFailure(afterReads);
}

} // namespace coli::aio
