#include "aio/pool_core.h"

#include "aio/direct_probe.h"
#include "core/regular_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace coli::aio {

PoolCore::~PoolCore() {
    for (auto& f : m_files) {
        if (f->fd >= 0) ::close(f->fd);
        if (f->directFd >= 0) ::close(f->directFd);
    }
}

Result<int> PoolCore::openFile(const std::string& path, bool buffered) {
    auto file = std::make_unique<OpenedFile>();
    file->path = path;
    Result<int> fd = openRegularFile(path, &file->size); // never blocks on a named pipe
    if (!fd) return fd.status();
    file->fd = fd.value();
    // Whole-expert reads need no readahead: it would read past the blob (more disk bytes per
    // expert) and leave the neighbours' pages cached, which DONTNEED of the range read misses.
    (void)::posix_fadvise(file->fd, 0, 0, POSIX_FADV_RANDOM);
    if (m_directIo != DirectIo::Off && !buffered) {
        Result<DirectProbe> probe = probeDirectRead(path, m_refusePattern);
        if (!probe) {
            ::close(file->fd);
            return probe.status();
        }
        if (probe->fd >= 0) {
            file->directFd = probe->fd;
        } else if (m_directIo == DirectIo::On) {
            ::close(file->fd);
            return Status(ErrorCode::Unsupported,
                          path + ": O_DIRECT refused on this file system (" + probe->fsName +
                              "): " + probe->reason +
                              "; without --direct-io (in the app: Direct I/O off) such a file is "
                              "read buffered, as with --buffered");
        } else {
            file->note = path + ": read buffered: O_DIRECT refused on this file system (" +
                         probe->fsName + "): " + probe->reason;
        }
    }
    std::lock_guard lock(m_mu);
    m_files.push_back(std::move(file));
    return int(m_files.size() - 1);
}

Result<uint64_t> PoolCore::fileSize(int file) const {
    std::lock_guard lock(m_mu);
    if (file < 0 || size_t(file) >= m_files.size())
        return Status(ErrorCode::InvalidArgument, "unknown file index " + std::to_string(file));
    return m_files[size_t(file)]->size;
}

bool PoolCore::fileDirect(int file) const {
    std::lock_guard lock(m_mu);
    return file >= 0 && size_t(file) < m_files.size() && m_files[size_t(file)]->directFd >= 0;
}

std::string PoolCore::fileNote(int file) const {
    std::lock_guard lock(m_mu);
    return file >= 0 && size_t(file) < m_files.size() ? m_files[size_t(file)]->note : "";
}

void PoolCore::countFiles(int* all, int* direct) const {
    std::lock_guard lock(m_mu);
    *all = int(m_files.size());
    *direct = 0;
    for (const auto& f : m_files)
        if (f->directFd >= 0) ++*direct;
}

Result<ResolvedRead> PoolCore::resolve(const ReadRequest& r) const {
    const OpenedFile* f = nullptr;
    {
        std::lock_guard lock(m_mu);
        if (r.file < 0 || size_t(r.file) >= m_files.size())
            return Status(ErrorCode::InvalidArgument,
                          "read from unknown file index " + std::to_string(r.file));
        f = m_files[size_t(r.file)].get();
    }
    const std::string where = f->path + ": read at offset " + std::to_string(r.offset) + ": ";
    if (r.length == 0) return Status(ErrorCode::InvalidArgument, where + "zero length");
    if (r.dst == nullptr) return Status(ErrorCode::InvalidArgument, where + "null destination");
    const bool direct = f->directFd >= 0;
    const bool alignedRange = r.offset % kDirectIoAlign == 0 && r.length % kDirectIoAlign == 0;
    if (direct && !(alignedRange && reinterpret_cast<uintptr_t>(r.dst) % kDirectIoAlign == 0))
        return Status(ErrorCode::InvalidArgument, where + "O_DIRECT needs offset, length (" +
                                                      std::to_string(r.length) +
                                                      ") and destination aligned to " +
                                                      std::to_string(kDirectIoAlign) + " bytes");
    uint64_t need = r.length;
    // An aligned range may end inside the file's last block (a range rounded out for O_DIRECT).
    if (alignedRange && r.offset < f->size && r.offset + r.length > f->size &&
        r.offset + r.length - f->size < kDirectIoAlign)
        need = f->size - r.offset;
    return ResolvedRead{f, direct ? f->directFd : f->fd, direct, need};
}

void PoolCore::push(PendingRead read) {
    {
        std::lock_guard lock(m_mu);
        m_queue.push_back(std::move(read));
    }
    m_work.notify_one();
}

size_t PoolCore::takeBatch(std::vector<PendingRead>& out, size_t max) {
    std::lock_guard lock(m_mu);
    size_t n = 0;
    while (n < max && !m_queue.empty()) {
        out.push_back(std::move(m_queue.front()));
        m_queue.pop_front();
        ++n;
    }
    return n;
}

bool PoolCore::waitForWork(PendingRead& out) {
    std::unique_lock lock(m_mu);
    m_work.wait(lock, [&] { return !m_queue.empty() || m_stopping; });
    if (m_queue.empty()) return false;
    out = std::move(m_queue.front());
    m_queue.pop_front();
    return true;
}

bool PoolCore::drained() const {
    std::lock_guard lock(m_mu);
    return m_stopping && m_queue.empty();
}

void PoolCore::stop() {
    {
        std::lock_guard lock(m_mu);
        m_stopping = true;
    }
    m_work.notify_all();
}

void PoolCore::startRead() {
    std::lock_guard lock(m_mu);
    if (m_inFlight++ == 0) m_busySince = Clock::now();
    if (m_inFlight > m_stats.maxInFlight) m_stats.maxInFlight = m_inFlight;
}

void PoolCore::complete(PendingRead& read, Status status, bool wasInFlight) {
    {
        std::lock_guard lock(m_mu);
        if (wasInFlight && --m_inFlight == 0)
            m_stats.busySeconds +=
                std::chrono::duration<double>(Clock::now() - m_busySince).count();
        if (m_injectArmed && m_completions == m_injectAt) {
            m_injectArmed = false;
            status = Status(ErrorCode::Io, "injected read failure (file " +
                                               std::to_string(read.request.file) + ", offset " +
                                               std::to_string(read.request.offset) + ")");
        }
        ++m_completions;
        ++m_stats.reads;
        if (status.isOk())
            m_stats.bytes += read.request.length;
        else
            ++m_stats.failed;
    }
    if (read.done) read.done(status);
    read.done = nullptr; // release what the callback captured on this pool thread
}

void PoolCore::injectFailure(uint64_t afterReads) {
    std::lock_guard lock(m_mu);
    m_injectArmed = true;
    m_injectAt = m_completions + afterReads;
}

IoStats PoolCore::stats() const {
    std::lock_guard lock(m_mu);
    IoStats s = m_stats;
    if (m_inFlight > 0)
        s.busySeconds += std::chrono::duration<double>(Clock::now() - m_busySince).count();
    return s;
}

} // namespace coli::aio
