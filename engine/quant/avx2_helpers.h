#pragma once
// Internal: small AVX2 helpers shared by kernels_avx2.cpp and kernels_avx512vnni.cpp. Include only
// from files compiled with at least -mavx2. Everything is in an anonymous namespace on purpose:
// each kernel file gets its own copy, compiled with that file's flags. As ordinary inline
// functions the linker could keep a single copy, possibly the AVX-512 one, and call it on a CPU
// that has only AVX2.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace coli::quant::detail {
namespace {

// A block's f32 scale (its first 4 bytes; blocks are not aligned).
inline float loadScale(const uint8_t* block) {
    float s;
    std::memcpy(&s, block, sizeof s);
    return s;
}

// x[0..31] -> x0, x2, .., x30, x1, x3, .., x31 (a 16-byte nibble load's low then high nibbles).
inline __m256i deinterleaveActs32(const int8_t* x) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x));
    const __m256i evenOdd = _mm256_shuffle_epi8(
        v, _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15, 0, 2, 4, 6, 8, 10,
                            12, 14, 1, 3, 5, 7, 9, 11, 13, 15));
    return _mm256_permute4x64_epi64(evenOdd, 0xD8); // 64-bit lanes 0, 2, 1, 3
}

// Software prefetch for a sequential read, each 64-byte line once per cursor: into L1
// kTilePrefetchBytes ahead of the read and into L2 kTileFarPrefetchBytes ahead: the whole-tile
// single-token loops of both x86 paths. Measured on the Intel Xeon VM (docs/performance.md,
// 2026-12-04): 1 KiB into L1 alone beat 512 B and 2 KiB into L1, 1 KiB into L2, two tiles ahead
// into L2, and none; adding the L2 cursor 3 KiB ahead took the int4-g64 decode from 0.70 to
// 0.81 of the memory roofline (int8 0.76 -> 0.81); 2, 2.5 and 5 KiB ahead gave less, 3.5 and
// 4 KiB about the same, 8 KiB less than none. The hardware's L2 streamer stops at each 4 KiB
// page; the far cursor keeps misses in flight across page boundaries, the near one brings the
// lines to L1 just in time.
constexpr uintptr_t kTilePrefetchBytes = 1024;
constexpr uintptr_t kTileFarPrefetchBytes = 3072;
struct LinePrefetch {
    uintptr_t next;    // the first line not yet prefetched into L1
    uintptr_t farNext; // the first line not yet prefetched into L2
    explicit LinePrefetch(const void* start)
        : next(firstLine(start, kTilePrefetchBytes)),
          farNext(firstLine(start, kTileFarPrefetchBytes)) {}
    // Prefetches every line below readEnd + kTilePrefetchBytes (L1) and below readEnd +
    // kTileFarPrefetchBytes (L2) not yet fetched.
    void upTo(const void* readEnd) {
        const uintptr_t end = reinterpret_cast<uintptr_t>(readEnd);
        for (; next < end + kTilePrefetchBytes; next += 64)
            _mm_prefetch(reinterpret_cast<const char*>(next), _MM_HINT_T0);
        for (; farNext < end + kTileFarPrefetchBytes; farNext += 64)
            _mm_prefetch(reinterpret_cast<const char*>(farNext), _MM_HINT_T1);
    }

private:
    static uintptr_t firstLine(const void* start, uintptr_t distance) {
        return (reinterpret_cast<uintptr_t>(start) + distance + 63) & ~uintptr_t{63};
    }
};

// The sum of the eight int32 lanes.
inline int32_t hsum(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

} // namespace
} // namespace coli::quant::detail
