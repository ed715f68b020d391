#include "diskbench/io_bench.h"

#include <fmt/core.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <unistd.h>

namespace coli::diskbench {
namespace {

constexpr uint64_t kAlign = aio::kDirectIoAlign;

// Destination buffers handed out to reads and returned by their callbacks; take() blocks while
// all are in use, which keeps the submitting thread at most `count` reads ahead.
class BufferRing {
public:
    BufferRing(size_t count, uint64_t bytes) {
        const uint64_t n = (bytes + kAlign - 1) / kAlign * kAlign;
        for (size_t i = 0; i < count; ++i) {
            m_owned.emplace_back(static_cast<unsigned char*>(std::aligned_alloc(kAlign, n)));
            m_free.push_back(m_owned.back().get());
        }
    }
    void* take() {
        std::unique_lock lock(m_mu);
        m_cv.wait(lock, [&] { return !m_free.empty(); });
        void* p = m_free.back();
        m_free.pop_back();
        return p;
    }
    void give(void* p) {
        std::lock_guard lock(m_mu);
        m_free.push_back(p);
        m_cv.notify_all();
    }
    // Blocks until every buffer is back (every read completed).
    void waitAllFree() {
        std::unique_lock lock(m_mu);
        m_cv.wait(lock, [&] { return m_free.size() == m_owned.size(); });
    }

private:
    struct Free {
        void operator()(unsigned char* p) const { std::free(p); }
    };
    std::vector<std::unique_ptr<unsigned char, Free>> m_owned;
    std::vector<void*> m_free;
    std::mutex m_mu;
    std::condition_variable m_cv;
};

} // namespace

std::vector<ReadFile> shardFiles(const convert::Container& c) {
    std::vector<ReadFile> files;
    for (const auto& s : c.shards)
        files.push_back({c.dir + "/" + s.file, s.bytes});
    return files;
}

Result<ReadBatches> replayBatches(const convert::Container& c,
                                  const cachesim::RoutingTraceFile& trace, int64_t maxTokens) {
    auto shardIndex = [&](const std::string& file) {
        for (size_t i = 0; i < c.shards.size(); ++i)
            if (c.shards[i].file == file) return int(i);
        return -1; // parseManifest guarantees every entry's file is a shard
    };
    const int64_t tokens = maxTokens > 0 ? std::min(maxTokens, trace.nTokens()) : trace.nTokens();
    ReadBatches batches;
    for (int64_t t = 0; t < tokens; ++t) {
        for (int i = 0; i < trace.nMoeLayers(); ++i) {
            const int layer = trace.moeLayers[size_t(i)];
            const auto ids = trace.expertsAt(t, i);
            const std::set<int32_t> distinct(ids.begin(), ids.end());
            std::vector<ShardRead> batch;
            for (const int32_t e : distinct) {
                const convert::ExpertEntry* entry = c.expert(layer, e);
                if (entry == nullptr)
                    return Status(ErrorCode::InvalidArgument,
                                  fmt::format("{}: token {} routes layer {} to expert {}, which "
                                              "the container {} does not hold (a trace of "
                                              "another model?)",
                                              trace.name, t, layer, e, c.dir));
                batch.push_back({shardIndex(entry->file), entry->offset, entry->length});
            }
            batches.push_back(std::move(batch));
        }
    }
    return batches;
}

Result<std::vector<ShardRead>> randomReads(const std::vector<ReadFile>& files, uint64_t length,
                                           uint64_t count, uint32_t seed) {
    std::vector<double> weights;
    for (const auto& f : files)
        weights.push_back(f.bytes >= length ? double(f.bytes - length + 1) : 0.0);
    if (std::all_of(weights.begin(), weights.end(), [](double w) { return w == 0; }))
        return Status(ErrorCode::InvalidArgument,
                      fmt::format("no file of {} holds {} bytes",
                                  files.empty() ? std::string("(no files)") : files[0].path,
                                  length));
    std::mt19937_64 rng(seed);
    std::discrete_distribution<int> pickShard(weights.begin(), weights.end());
    std::vector<ShardRead> reads;
    reads.reserve(count);
    for (uint64_t i = 0; i < count; ++i) {
        const int s = pickShard(rng);
        const uint64_t slots = (files[size_t(s)].bytes - length) / kAlign + 1;
        reads.push_back({s, rng() % slots * kAlign, length});
    }
    return reads;
}

std::vector<ShardRead> sequentialReads(const std::vector<ReadFile>& files, uint64_t request,
                                       uint64_t totalBytes) {
    std::vector<ShardRead> reads;
    uint64_t covered = 0;
    bool progress = true;
    while (covered < totalBytes && progress) {
        progress = false;
        for (size_t s = 0; s < files.size() && covered < totalBytes; ++s) {
            const uint64_t end = files[s].bytes / kAlign * kAlign; // O_DIRECT: whole blocks
            for (uint64_t off = 0; off < end && covered < totalBytes; off += request) {
                const uint64_t len = std::min(request, end - off);
                reads.push_back({int(s), off, len});
                covered += len;
                progress = true;
            }
        }
    }
    return reads;
}

Status dropCaches(const std::vector<ReadFile>& files) {
    for (const ReadFile& f : files) {
        const std::string& path = f.path;
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return Status(ErrorCode::Io,
                          fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
        (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        ::close(fd);
    }
    return Status::ok();
}

Result<IoRunResult> runReads(const std::vector<ReadFile>& readFiles, const ReadBatches& batches,
                             const aio::IoOptions& options, bool barrier) {
    uint64_t largest = kAlign;
    for (const auto& b : batches)
        for (const ShardRead& r : b)
            largest = std::max(largest, r.length);
    BufferRing buffers(size_t(2 * options.queueDepth), largest);
    std::mutex errorMu;
    Status firstError;
    IoRunResult result;
    {
        auto pool = aio::IoPool::create(options);
        if (!pool) return pool.status();
        std::vector<int> files;
        for (const ReadFile& rf : readFiles) {
            auto f = pool.value()->openFile(rf.path);
            if (!f) return f.status();
            files.push_back(f.value());
        }
        for (const auto& batch : batches) {
            for (const ShardRead& r : batch) {
                void* dst = buffers.take();
                pool.value()->submit({files[size_t(r.file)], r.offset, r.length, dst},
                                     [&, dst](const Status& s) {
                                         if (!s.isOk()) {
                                             std::lock_guard lock(errorMu);
                                             if (firstError.isOk()) firstError = s;
                                         }
                                         buffers.give(dst);
                                     });
            }
            if (barrier) buffers.waitAllFree();
        }
        buffers.waitAllFree();
        result.stats = pool.value()->stats();
        result.backend = pool.value()->backend();
    }
    if (!firstError.isOk()) return firstError;
    return result;
}

} // namespace coli::diskbench
