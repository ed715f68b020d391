#include "placement/memory_bandwidth.h"

#include "model/weight_arena.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace coli::placement {

size_t lastLevelCacheBytes() {
    std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index3/size");
    std::string s;
    if (f >> s && !s.empty()) {
        size_t n = std::strtoull(s.c_str(), nullptr, 10);
        if (s.back() == 'K') n *= 1024;
        if (s.back() == 'M') n *= 1024 * 1024;
        if (n > 0) return n;
    }
    const long v = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (v > 0) return static_cast<size_t>(v);
    return size_t{32} << 20;
}

size_t memReadBufferBytes() {
    return std::max<size_t>(size_t{256} << 20, 8 * lastLevelCacheBytes());
}

uint64_t streamRead(const uint64_t* words, int64_t n) {
    uint64_t sum = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum)
    for (int64_t i = 0; i < n; ++i)
        sum += words[i];
    return sum;
}

MemoryBandwidth timeReadPasses(size_t bytes, int repetitions,
                               const std::function<uint64_t()>& pass) {
    volatile uint64_t sink = pass(); // warm-up pass
    std::vector<double> rates;
    for (int r = 0; r < repetitions; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        sink = sink + pass();
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        rates.push_back(s > 0 ? double(bytes) / s : 0.0);
    }
    std::sort(rates.begin(), rates.end());
    const size_t n = rates.size();
    MemoryBandwidth out;
    out.bytesPerSecond = n % 2 ? rates[n / 2] : 0.5 * (rates[n / 2 - 1] + rates[n / 2]);
    out.minBytesPerSecond = rates.front();
    out.maxBytesPerSecond = rates.back();
    out.bufferBytes = bytes;
    out.repetitions = repetitions;
#ifdef _OPENMP
    out.threads = omp_get_max_threads();
#endif
    return out;
}

Result<MemoryBandwidth> measureMemoryReadBandwidth(const MemoryBandwidthOptions& options) {
    if (options.repetitions < 1 || options.repetitions > 1000)
        return Status(ErrorCode::InvalidArgument,
                      "memory bandwidth: repetitions must be 1 to 1000 (got " +
                          std::to_string(options.repetitions) + ")");
    if (options.bufferBytes != 0 && options.bufferBytes < 4096)
        return Status(ErrorCode::InvalidArgument,
                      "memory bandwidth: the buffer must hold at least 4096 bytes (got " +
                          std::to_string(options.bufferBytes) + ")");
    const size_t bytes =
        (options.bufferBytes ? options.bufferBytes : memReadBufferBytes()) / 64 * 64;
    // In the weight arena, as the model's weights (huge pages where the kernel gives them): the
    // bandwidth of the kind of memory a decode step reads (docs/performance.md, "Which memory").
    struct ArenaFree {
        size_t bytes;
        void operator()(uint8_t* p) const { weightFree(p, bytes); }
    };
    std::unique_ptr<uint8_t, ArenaFree> buf(static_cast<uint8_t*>(weightAlloc(bytes)),
                                            ArenaFree{bytes});
    if (!buf)
        return Status(ErrorCode::Io, "memory bandwidth: cannot allocate a buffer of " +
                                         std::to_string(bytes) + " bytes");
    std::memset(buf.get(), 1, bytes); // every page touched before timing
    const auto* words = reinterpret_cast<const uint64_t*>(buf.get());
    const auto nWords = static_cast<int64_t>(bytes / 8);
    return timeReadPasses(bytes, options.repetitions, [&] { return streamRead(words, nWords); });
}

} // namespace coli::placement
