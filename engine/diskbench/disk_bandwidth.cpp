#include "diskbench/disk_bandwidth.h"

#include <fmt/core.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sys/stat.h>

namespace coli::diskbench {

Result<std::vector<ReadFile>> statFiles(const std::vector<std::string>& paths) {
    std::vector<ReadFile> files;
    for (const std::string& p : paths) {
        struct stat st {};
        if (::stat(p.c_str(), &st) != 0)
            return Status(errno == ENOENT ? ErrorCode::NotFound : ErrorCode::Io,
                          fmt::format("{}: cannot stat: {}", p, std::strerror(errno)));
        files.push_back({p, uint64_t(st.st_size)});
    }
    return files;
}

Result<DiskBandwidth> measureReadBandwidth(const std::vector<ReadFile>& files,
                                           const BandwidthOptions& o) {
    constexpr uint64_t kAlign = aio::kDirectIoAlign;
    if (o.queueDepth < 1 || o.queueDepth > 64 || o.totalBytes == 0)
        return Status(ErrorCode::InvalidArgument,
                      fmt::format("bandwidth measurement: queue depth {} (1..64), {} bytes",
                                  o.queueDepth, o.totalBytes));
    uint64_t largest = 0, total = 0;
    for (const ReadFile& f : files) {
        largest = std::max(largest, f.bytes);
        total += f.bytes;
    }
    if (largest < kAlign)
        return Status(ErrorCode::InvalidArgument,
                      fmt::format("no file of at least {} bytes to measure the disk with{}{}",
                                  kAlign, files.empty() ? "" : " (first: ",
                                  files.empty() ? "" : files[0].path + ")"));
    const uint64_t request = std::max(kAlign, std::min(o.requestBytes, largest) / kAlign * kAlign);
    const uint64_t bytes = std::max(request, std::min(o.totalBytes, total));
    auto reads = randomReads(files, request, (bytes + request - 1) / request, o.seed);
    if (!reads) return reads.status();
    if (Status s = dropCaches(files); !s.isOk()) return s;
    aio::IoOptions io;
    io.queueDepth = o.queueDepth;
    io.directIo = aio::DirectIo::On;
    auto run = runReads(files, ReadBatches{*reads}, io, false);
    if (!run && run.status().code() == ErrorCode::Unsupported) { // O_DIRECT refused (tmpfs)
        io.directIo = aio::DirectIo::Off;
        (void)dropCaches(files);
        run = runReads(files, ReadBatches{*reads}, io, false);
    }
    if (!run) return run.status();
    DiskBandwidth d;
    d.bytes = run->stats.bytes;
    d.seconds = run->stats.busySeconds;
    d.bytesPerSecond = run->bytesPerSecond();
    d.directIo = io.directIo == aio::DirectIo::On;
    d.backend = run->backend;
    return d;
}

} // namespace coli::diskbench
