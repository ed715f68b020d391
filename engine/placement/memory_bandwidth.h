#pragma once
// The memory read bandwidth: one streaming read (64-bit sums, OpenMP over static chunks) of a
// buffer larger than the last-level cache. `coli bench kernels` (bench/kernel_bench.cpp, its
// MemRead row) and `coli plan` (the R_mem of its time model) use this one loop.
// Thread-safety: streamRead and lastLevelCacheBytes are safe from any thread;
// measureMemoryReadBandwidth allocates its own buffer, but two calls at once share the memory
// bus, so their figures only mean something when they do not overlap.
#include "core/status.h"

#include <cstddef>
#include <cstdint>
#include <functional>

namespace coli::placement {

// Per-instance LLC size in bytes: sysfs (cpu0 index3) first, since glibc's
// sysconf(_SC_LEVEL3_CACHE_SIZE) multiplies by a share count some VMs misreport; then sysconf;
// 32 MiB when neither knows (a large guess keeps buffers DRAM-sized).
size_t lastLevelCacheBytes();

// The buffer the measurement streams: max(256 MiB, 8 x LLC) bytes, so it comes from DRAM.
size_t memReadBufferBytes();

// Sum of words[0..n): the streaming read itself (OpenMP static schedule when built with OpenMP;
// the sum keeps the compiler from dropping the loads). n >= 0.
uint64_t streamRead(const uint64_t* words, int64_t n);

struct MemoryBandwidth {
    double bytesPerSecond = 0; // median over the repetitions of buffer bytes / pass seconds
    double minBytesPerSecond = 0, maxBytesPerSecond = 0;
    size_t bufferBytes = 0;
    int repetitions = 0;
    int threads = 1; // OpenMP threads of the read (1 without OpenMP)
};

struct MemoryBandwidthOptions {
    int repetitions = 5;    // timed passes (1..1000), after one untimed pass that faults pages
    size_t bufferBytes = 0; // 0: memReadBufferBytes(); else at least 4096
};

// Times `repetitions` calls of `pass`, each reading `bytes`, after one untimed call (caches, pages
// and the OpenMP team warm): the median, lowest and highest rate; threads = omp_get_max_threads().
// pass returns a sum of what it read (kept, so the reads are not optimised away). Precondition:
// 1 <= repetitions <= 1000 (the callers check it and name their figure). Thread-safety: as pass.
MemoryBandwidth timeReadPasses(size_t bytes, int repetitions,
                               const std::function<uint64_t()>& pass);

// Times `repetitions` streamRead passes over a freshly allocated, filled buffer.
// Errors: InvalidArgument (repetitions or bufferBytes out of range), Io when the buffer cannot be
// allocated (naming its size).
Result<MemoryBandwidth> measureMemoryReadBandwidth(const MemoryBandwidthOptions& options = {});

} // namespace coli::placement
