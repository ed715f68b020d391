#pragma once
// The measurements of `coli bench io` (docs/cli.md, docs/perf-io.md): expert-shaped reads of a
// colibri container through aio::IoPool, either as the disk's limit (random or sequential
// O_DIRECT ranges of the shard files) or as the replay of a routing trace (every token's distinct
// experts per MoE layer, one read of the whole blob each, no cache and no compute).
// Thread-safety: each call builds its own pool; calls must not overlap (they measure the disk).
#include "aio/io_pool.h"
#include "cachesim/trace_reader.h"
#include "convert/manifest.h"

#include <cstdint>
#include <string>
#include <vector>

namespace coli::diskbench {

// A file the reads address (ShardRead::file indexes a list of these).
struct ReadFile {
    std::string path;
    uint64_t bytes = 0; // its size
};
// The container's shard files, in Container::shards order.
std::vector<ReadFile> shardFiles(const convert::Container& c);

// One read of a shard range.
struct ShardRead {
    int file = 0;        // index into the ReadFile list (for a container: Container::shards)
    uint64_t offset = 0; // bytes
    uint64_t length = 0; // bytes
};

// Reads in order; with a barrier between batches, a batch starts when the previous one has
// completed (the engine cannot route layer L+1 before layer L is computed).
using ReadBatches = std::vector<std::vector<ShardRead>>;

struct IoRunResult {
    aio::IoStats stats;       // of the run's own pool: reads, bytes, busySeconds, maxInFlight
    aio::IoBackend backend{}; // the backend that ran
    double bytesPerSecond() const {
        return stats.busySeconds > 0 ? double(stats.bytes) / stats.busySeconds : 0;
    }
};

// The replay of `trace` on `c`: one batch per (token, MoE layer) with that layer's distinct
// experts, tokens in order, the first `maxTokens` tokens (0 = all). Errors: InvalidArgument when
// the trace names an expert the container does not hold (a trace of another model).
Result<ReadBatches> replayBatches(const convert::Container& c,
                                  const cachesim::RoutingTraceFile& trace, int64_t maxTokens);
// `count` reads of `length` bytes at random kDirectIoAlign-aligned offsets of the shards (a
// shard chosen with probability proportional to its size; `seed` fixes the sequence). Errors:
// InvalidArgument when no shard holds `length` bytes.
Result<std::vector<ShardRead>> randomReads(const std::vector<ReadFile>& files, uint64_t length,
                                           uint64_t count, uint32_t seed);
// Consecutive reads of `request` bytes (the last of a shard shorter, all aligned) through the
// shards in order, starting over until `totalBytes` are covered.
std::vector<ShardRead> sequentialReads(const std::vector<ReadFile>& files, uint64_t request,
                                       uint64_t totalBytes);

// posix_fadvise(POSIX_FADV_DONTNEED) on every shard: the next buffered read comes from the disk.
// Errors: Io naming a shard that cannot be opened.
Status dropCaches(const std::vector<ReadFile>& files);

// Runs `batches` through a fresh IoPool with `options` (destinations: 2 x queueDepth buffers of the
// largest request, reused as reads complete). With `barrier`, batches run one after another; else
// all reads stream through the queue. Errors: as IoPool::create and openFile, and the first
// failed read's Status.
Result<IoRunResult> runReads(const std::vector<ReadFile>& files, const ReadBatches& batches,
                             const aio::IoOptions& options, bool barrier);

} // namespace coli::diskbench
