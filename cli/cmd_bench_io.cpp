// coli bench io CONTAINER --trace FILE: how fast expert reads go through aio::IoPool compared with
// the disk's own bandwidth for the same request size and queue depth (docs/cli.md "coli bench io",
// figures in docs/perf-io.md). A benchmark, never a test: nothing here asserts a speed.
#include "cmd_bench_io.h"

#include "bench_stats.h"
#include "diskbench/io_bench.h"
#include "exit_codes.h"
#include "options.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace coli::cli {
namespace {

using diskbench::IoRunResult;
using diskbench::ReadBatches;
using diskbench::ShardRead;

struct BenchIoOptions {
    std::string container;
    std::string trace;
    int queueDepth = 4;
    bool directIo = false;
    std::string backend = "auto";
    int runs = 5;
    int64_t tokens = 0;
    int sequentialMib = 4;
    int diskMib = 64;
};

struct Row {
    const char* name = "";
    const char* what = "";
    ReadBatches batches;
    aio::IoOptions options;
    bool barrier = false;
    uint64_t requestBytes = 0;
    std::vector<double> bytesPerSecond; // one per measured run
    IoRunResult last;
};

uint64_t countBytes(const ReadBatches& b) {
    uint64_t n = 0;
    for (const auto& batch : b)
        for (const ShardRead& r : batch)
            n += r.length;
    return n;
}

uint64_t countReads(const ReadBatches& b) {
    uint64_t n = 0;
    for (const auto& batch : b)
        n += batch.size();
    return n;
}

int fail(const Status& s, int code) {
    fmt::print(stderr, "coli: error: {}\n", s.message());
    return code;
}

int runBenchIo(const BenchIoOptions& o) {
    auto opened = convert::openContainer(o.container);
    if (!opened) return fail(opened.status(), kExitModel);
    const convert::Container& c = opened.value();
    if (c.experts.empty())
        return fail({ErrorCode::InvalidArgument, o.container + ": the container has no experts"},
                    kExitUsage);
    auto trace = cachesim::readRoutingTrace(o.trace);
    if (!trace) return fail(trace.status(), kExitUsage);
    const std::vector<diskbench::ReadFile> files = diskbench::shardFiles(c);
    auto replay = diskbench::replayBatches(c, trace.value(), o.tokens);
    if (!replay) return fail(replay.status(), kExitUsage);

    // The container's bytes per expert (the median blob, should the lengths ever differ).
    std::vector<uint64_t> lengths;
    for (const auto& e : c.experts)
        lengths.push_back(e.length);
    std::nth_element(lengths.begin(), lengths.begin() + lengths.size() / 2, lengths.end());
    const uint64_t expertBytes = lengths[lengths.size() / 2];
    uint64_t shardBytes = 0;
    for (const auto& s : c.shards)
        shardBytes += s.bytes;

    const aio::IoBackend backend = o.backend == "io_uring" ? aio::IoBackend::Uring
                                   : o.backend == "pread"  ? aio::IoBackend::PreadThreads
                                                           : aio::IoBackend::Auto;
    const aio::IoOptions direct{backend, o.queueDepth, aio::DirectIo::On, {}};
    const aio::IoOptions replayIo{
        backend, o.queueDepth, o.directIo ? aio::DirectIo::On : aio::DirectIo::Off, {}};
    const uint64_t replayBytes = countBytes(replay.value());
    const uint64_t diskBytes = std::max(replayBytes, uint64_t(o.diskMib) << 20);
    auto random =
        diskbench::randomReads(files, expertBytes, (diskBytes + expertBytes - 1) / expertBytes, 1);
    if (!random) return fail(random.status(), kExitModel);
    const uint64_t seqRequest = uint64_t(o.sequentialMib) << 20;

    std::vector<Row> rows;
    auto addRow = [&](const char* name, const char* what, ReadBatches batches,
                      const aio::IoOptions& io, bool barrier, uint64_t request) {
        Row& row = rows.emplace_back();
        row.name = name;
        row.what = what;
        row.batches = std::move(batches);
        row.options = io;
        row.barrier = barrier;
        row.requestBytes = request;
    };
    addRow("disk-sequential", "O_DIRECT, consecutive large reads",
           {diskbench::sequentialReads(files, seqRequest, diskBytes)}, direct, false, seqRequest);
    addRow("disk-random", "O_DIRECT, random aligned expert-sized ranges",
           {std::move(random).value()}, direct, false, expertBytes);
    ReadBatches streamed(1);
    for (const auto& batch : replay.value())
        streamed[0].insert(streamed[0].end(), batch.begin(), batch.end());
    addRow("replay-layer", "trace replay, each MoE layer's reads before the next's", replay.value(),
           replayIo, true, expertBytes);
    addRow("replay-stream", "trace replay, every read queued at once", std::move(streamed),
           replayIo, false, expertBytes);

    const int64_t tokens = o.tokens > 0 ? std::min(o.tokens, trace->nTokens()) : trace->nTokens();
    fmt::print("container:  {} ({}): {} experts of {} bytes in {} shard(s), {:.1f} MiB\n",
               o.container, c.modelId, c.experts.size(), expertBytes, c.shards.size(),
               double(shardBytes) / (1 << 20));
    fmt::print("trace:      {}: {} of {} tokens x {} MoE layers, top-{}: {} expert reads per "
               "replay ({} bytes)\n",
               o.trace, tokens, trace->nTokens(), trace->nMoeLayers(), trace->topK,
               countReads(replay.value()), replayBytes);

    // A warm-up round, then `runs` rounds; each round runs every row once (A B A B), each run
    // cold: the shards' page cache is dropped first.
    for (int round = 0; round <= o.runs; ++round) {
        for (Row& row : rows) {
            if (Status s = diskbench::dropCaches(files); !s.isOk()) return fail(s, kExitModel);
            auto r = diskbench::runReads(files, row.batches, row.options, row.barrier);
            if (!r) {
                const bool noUring =
                    r.status().code() == ErrorCode::Unsupported && backend == aio::IoBackend::Uring;
                return fail(r.status(), noUring ? kExitUsage : kExitModel);
            }
            if (round > 0) row.bytesPerSecond.push_back(r->bytesPerSecond());
            row.last = r.value();
        }
    }

    fmt::print("backend:    {}, queue depth {}; replay reads {}\n",
               aio::ioBackendName(rows[0].last.backend), o.queueDepth,
               o.directIo ? "O_DIRECT" : "buffered (POSIX_FADV_DONTNEED after each read)");
    fmt::print("cache:      cold (POSIX_FADV_DONTNEED on every shard before each run); {} runs "
               "after 1 warm-up\n\n",
               o.runs);
    fmt::print("{:<16} {:>13} {:>8} {:>14} {:>13} {:>11} {:>19} {:>14}\n", "test", "request_bytes",
               "reads", "bytes_per_run", "max_in_flight", "MB/s_median", "MB/s_min-max",
               "vs_disk_random");
    const double base = median(rows[1].bytesPerSecond);
    for (const Row& row : rows) {
        const double med = median(row.bytesPerSecond);
        const auto [lo, hi] =
            std::minmax_element(row.bytesPerSecond.begin(), row.bytesPerSecond.end());
        fmt::print("{:<16} {:>13} {:>8} {:>14} {:>13} {:>11.1f} {:>19} {:>14.3f}\n", row.name,
                   row.requestBytes, row.last.stats.reads, row.last.stats.bytes,
                   row.last.stats.maxInFlight, med / 1e6,
                   fmt::format("{:.1f}-{:.1f}", *lo / 1e6, *hi / 1e6), base > 0 ? med / base : 0);
    }
    fmt::print(
        "\nMB/s = bytes read / IoStats::busySeconds (wall time with >= 1 read in flight).\n");
    for (const Row& row : rows)
        fmt::print("  {:<16} {}\n", row.name, row.what);
    const double layer = median(rows[2].bytesPerSecond) / base;
    fmt::print("replay-layer / disk-random: {:.3f} (goal >= 0.8)\n", base > 0 ? layer : 0);
    return kExitOk;
}

} // namespace

Command addBenchIoCommand(CLI::App& bench) {
    auto* io = bench.add_subcommand(
        "io", "Expert reads of a container through the I/O pool vs the disk's bandwidth");
    auto o = std::make_shared<BenchIoOptions>();
    io->add_option("CONTAINER", o->container, "A colibri container (coli convert's output)")
        ->type_name("")
        ->required();
    io->add_option("--trace", o->trace, "A routing trace of the same model (coli trace -o FILE)")
        ->type_name("FILE")
        ->required();
    io->add_option("--queue-depth", o->queueDepth, "Reads in flight at most (1..64)")
        ->type_name("N")
        ->check(integerIn(1, 64));
    io->add_flag("--direct-io,!--buffered", o->directIo,
                 "Replay reads with O_DIRECT (default: buffered, DONTNEED after each read)");
    io->add_option("--backend", o->backend, "I/O backend: auto, io_uring, pread")
        ->type_name("NAME")
        ->check(CLI::IsMember({"auto", "io_uring", "pread"}));
    io->add_option("--runs", o->runs, "Measured runs per test after one warm-up (median, min-max)")
        ->type_name("N")
        ->check(integerIn(1, 100));
    io->add_option("--tokens", o->tokens, "Replay only the trace's first N tokens (0 = all)")
        ->type_name("N")
        ->check(integerIn(0, int64_t(1) << 40));
    io->add_option("--sequential-mib", o->sequentialMib,
                   "Request size of the sequential reference, MiB")
        ->type_name("MIB")
        ->check(integerIn(1, 256));
    io->add_option("--disk-mib", o->diskMib,
                   "Bytes per disk run at least (MiB; else the replay's bytes)")
        ->type_name("MIB")
        ->check(integerIn(1, 1 << 20));
    return {io, [o] { return runBenchIo(*o); }};
}

} // namespace coli::cli
