// AVX-512 VNNI path (compiled with -mavx512f -mavx512bw -mavx512vl -mavx512vnni; called only when
// the CPU has all four). 256-bit vectors only: VPDPBUSD on ymm registers (AVX512VL), which
// every AVX-512 VNNI CPU runs at full rate, while 512-bit ones are split in two on some (AMD
// Zen 4) and lower the clock on others; the one exception is int4-g64's whole-tile loop
// (tile8OneInt4G64), where two rows per 512-bit vector halve the instruction count.
// Integer dots, exact for every value (-128 activations and weights, -8 nibbles included):
//   VPDPBUSD adds, per int32 lane, four products of an unsigned and a signed byte, in int32 with
//   no intermediate saturation (unlike _mm256_maddubs_epi16), so
//   int4: u = q + 8 (0..15, the nibble with its sign bit flipped) times the activations, minus
//         8 * sum(x) of the group: sum(q x) = sum(u x) - 8 sum(x);
//   int8: u = w + 128 (the byte with its sign bit flipped) times the activations, minus
//         128 * sum(x): sum(w x) = sum(u x) - 128 sum(x).
//   |sum(u x)| <= 64 * 255 * 128 < 2^31. The sums of x are computed once per call and group.
// Eight rows at once; their per-group int32 sums are reduced with hadd into one vector whose lane
// i is row i, so the f32 part (convert, scale multiply, add) is the scalar definition of
// quant/matmul.h evaluated lane-wise: bit-identical to the scalar and AVX2 paths.
// GCC 12's 512-bit intrinsics start from _mm512_undefined_epi32() (a self-initialised variable),
// which -Wmaybe-uninitialized reports at every use (GCC bug 105593, fixed in GCC 13): silenced
// for this file only.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "quant/avx2_helpers.h"
#include "quant/kernel_table.h"
#include "quant/matmul.h"

namespace coli::quant::detail {

namespace {

constexpr int kRows = 8;
// Software prefetch two blocks of eight rows ahead, into L2 (T1). Measured with `coli bench
// kernels`' Kernel/int{4,8}-g64/{1024x2048,2048x1024}/n1 rows (two threads, one region, DRAM):
// the next block into L1 (T0, as before) gave 0.55-0.70 of MemRead: the current and the fetched
// block (2 x 17 KiB for int8) do not both fit the 32 KiB L1; into L2 one block ahead 0.51-0.92,
// two blocks ahead 0.57-0.91 (int4) and 0.81-1.15 (int8), three to eight no better
// (docs/performance.md).
constexpr int64_t kPrefetchRows = 2 * kRows;

// Lane i = the sum of the 8 int32 lanes of p[i], i < 8.
inline __m256i rowSums8(const __m256i p[8]) {
    const __m256i a =
        _mm256_hadd_epi32(_mm256_hadd_epi32(p[0], p[1]), _mm256_hadd_epi32(p[2], p[3]));
    const __m256i b =
        _mm256_hadd_epi32(_mm256_hadd_epi32(p[4], p[5]), _mm256_hadd_epi32(p[6], p[7]));
    // a: rows 0-3 partial sums in both 128-bit halves; b: rows 4-7.
    return _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20),
                            _mm256_permute2x128_si256(a, b, 0x31));
}

// Activations prepared once per call, per token and group: int4: reordered as the weights'
// nibbles (g64: the 32 even-indexed values then the 32 odd ones; g32: 16 even then 16 odd);
// int8: as they are. corr = (8 or 128) * sum of the group's values.
struct PreparedActs {
    const int8_t* x;     // [nTokens, cols]
    const int32_t* corr; // [nTokens, cols / G]
};

template <int Bits, int G> PreparedActs prepareActs(const MatmulArgs& a) {
    thread_local std::vector<int8_t> xbuf; // grown, never shrunk
    thread_local std::vector<int32_t> cbuf;
    const int64_t groups = a.cols / G;
    if (xbuf.size() < static_cast<size_t>(a.nTokens * a.cols))
        xbuf.resize(static_cast<size_t>(a.nTokens * a.cols));
    if (cbuf.size() < static_cast<size_t>(a.nTokens * groups))
        cbuf.resize(static_cast<size_t>(a.nTokens * groups));
    const __m256i ones8 = _mm256_set1_epi8(1);
    for (int64_t t = 0; t < a.nTokens; ++t)
        for (int64_t g = 0; g < groups; ++g) {
            const int8_t* src = a.xq + t * a.cols + g * G;
            int8_t* dst = xbuf.data() + t * a.cols + g * G;
            __m256i s = _mm256_setzero_si256(); // sum(x) over the group, spread over lanes
            for (int c = 0; c < G / 32; ++c) {
                __m256i v;
                if constexpr (Bits == 8 || G == 32) {
                    v = Bits == 8
                            ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 32 * c))
                            : deinterleaveActs32(src);
                } else {
                    // g64: (even 16, odd 16) per 32 values, merged into (even 32, odd 32).
                    const __m256i d0 = deinterleaveActs32(src);
                    const __m256i d1 = deinterleaveActs32(src + 32);
                    v = c == 0 ? _mm256_permute2x128_si256(d0, d1, 0x20)
                               : _mm256_permute2x128_si256(d0, d1, 0x31);
                }
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 32 * c), v);
                s = _mm256_dpbusd_epi32(s, ones8, v);
            }
            cbuf[static_cast<size_t>(t * groups + g)] = (Bits == 8 ? 128 : 8) * hsum(s);
        }
    return {xbuf.data(), cbuf.data()};
}

// One row's group as unsigned bytes in the activations' order (u = q + 8 for int4, w + 128 for
// int8): w[c] for 32-value chunk c.
template <int Bits, int G> inline void loadGroupOffset(const uint8_t* p, __m256i w[G / 32]) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    const __m256i eight = _mm256_set1_epi8(0x08);
    if constexpr (Bits == 8) {
        for (int c = 0; c < G / 32; ++c)
            w[c] =
                _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 * c)),
                                 _mm256_set1_epi8(static_cast<char>(0x80)));
    } else if constexpr (G == 64) {
        // u = (nibble & 15) ^ 8 in one ternary-logic op (0x6A: (a & b) ^ c).
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
        w[0] = _mm256_ternarylogic_epi32(v, low4, eight, 0x6A);
        w[1] = _mm256_ternarylogic_epi32(_mm256_srli_epi16(v, 4), low4, eight, 0x6A);
    } else {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        w[0] = _mm256_ternarylogic_epi32(
            _mm256_inserti128_si256(_mm256_castsi128_si256(v), _mm_srli_epi16(v, 4), 1), low4,
            eight, 0x6A);
    }
}

// The f32 part of one group for eight rows (lane i = row i), quant/matmul.h's definition
// lane-wise: acc + float(sums - corr) * (scales * xs). Every loop below ends its group with it.
inline __m256 addGroup(__m256 acc, __m256i sums, int32_t corr, __m256 scales, float xs) {
    const __m256i s = _mm256_sub_epi32(sums, _mm256_set1_epi32(corr));
    const __m256 scale = _mm256_mul_ps(scales, _mm256_set1_ps(xs));
    return _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtepi32_ps(s), scale));
}

// Rows r .. r+nValid-1 (nValid 1..8; missing rows repeat the last one and are not stored).
template <int Bits, int G>
void rows8(const MatmulArgs& a, const PreparedActs& px, int64_t r, int nValid, bool prefetchAhead) {
    constexpr size_t kBlockBytes = 4 + G * Bits / 8;
    const int64_t groups = a.cols / G;
    const RowPointers<kRows> rows(a, r, nValid);
    __m256 acc[kMaxBatch];
    for (int64_t t = 0; t < a.nTokens; ++t)
        acc[t] = _mm256_setzero_ps();
    for (int64_t gi = 0; gi < groups; ++gi) {
        const size_t off = static_cast<size_t>(gi) * rows.stride;
        if (prefetchAhead) {
            // Rows follow contiguously: fetch the eight rows kPrefetchRows ahead at the pace this
            // block is read, into L2 (see kPrefetchRows).
            const char* ahead = reinterpret_cast<const char*>(
                rows.base + kPrefetchRows * a.rowBytes + kRows * gi * kBlockBytes);
            for (size_t b = 0; b < kRows * kBlockBytes; b += 64)
                _mm_prefetch(ahead + b, _MM_HINT_T1);
        }
        // Weights as unsigned bytes in the activations' order: w[i][c] for 32-value chunk c.
        constexpr int kChunks = G / 32;
        __m256i w[kRows][kChunks];
        for (int i = 0; i < kRows; ++i)
            loadGroupOffset<Bits, G>(rows.values[i] + off, w[i]);
        // A whole tile of an -r8 format: the eight scales side by side. Otherwise eight scalar
        // loads: faster than a gather on AMD Zen 4 (measured with `coli bench kernels`'
        // HotKernel rows).
        const __m256 ws =
            rows.scalesSideBySide
                ? _mm256_loadu_ps(reinterpret_cast<const float*>(rows.scale[0] + off))
                : _mm256_setr_ps(loadScale(rows.scale[0] + off), loadScale(rows.scale[1] + off),
                                 loadScale(rows.scale[2] + off), loadScale(rows.scale[3] + off),
                                 loadScale(rows.scale[4] + off), loadScale(rows.scale[5] + off),
                                 loadScale(rows.scale[6] + off), loadScale(rows.scale[7] + off));
        for (int64_t t = 0; t < a.nTokens; ++t) {
            const int8_t* x = px.x + t * a.cols + gi * G;
            __m256i xc[kChunks];
            for (int c = 0; c < kChunks; ++c)
                xc[c] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 32 * c));
            __m256i p[kRows];
            for (int i = 0; i < kRows; ++i) {
                p[i] = _mm256_dpbusd_epi32(_mm256_setzero_si256(), w[i][0], xc[0]);
                if constexpr (kChunks == 2) p[i] = _mm256_dpbusd_epi32(p[i], w[i][1], xc[1]);
            }
            acc[t] =
                addGroup(acc[t], rowSums8(p), px.corr[t * groups + gi], ws, a.xs[t * groups + gi]);
        }
    }
    for (int64_t t = 0; t < a.nTokens; ++t) {
        float* y = a.y + t * a.yStride + r;
        if (nValid == kRows) {
            _mm256_storeu_ps(y, acc[t]);
        } else {
            alignas(32) float tmp[kRows];
            _mm256_store_ps(tmp, acc[t]);
            for (int i = 0; i < nValid; ++i)
                y[i] = tmp[i];
        }
    }
}

// One token, one whole tile of an -r8 format: the tile is one stream of group units (eight
// scales, then the eight rows' value bytes), read from one pointer at constant offsets. Apart
// from the addressing this is rows8 for nTokens == 1 (same instructions, same bits); written out
// because the general loop (row pointers, an accumulator per token in memory) is slower at batch
// 1: in cache 82 against 63 GB/s (int4-g64) and 153 against 116 (int8-g64), `coli bench kernels`'
// HotKernel rows, two threads, Intel Xeon VM.
// Prefetch (LinePrefetch): from DRAM (the OLMoE shapes, two threads, a 1 GiB stream, alternated)
// into L1 1 KiB ahead gave int4-g64 29.5-30.4 GB/s against 26.0-26.8 with rows8's prefetch (L2,
// two tiles ahead) and 26.1-26.8 with none; int8-g64 31.6-31.9 against 29.1-30.1 and 31.5-31.8.
// A second cursor into L2 2-4 KiB ahead added 4-5 % there, and 3 KiB ahead 8-17 % to the decode.
template <int Bits, int G>
void tile8One(const MatmulArgs& a, const PreparedActs& px, int64_t r, bool prefetchAhead) {
    constexpr size_t kValueBytes = G * Bits / 8;
    constexpr size_t kUnit = kRows * (4 + kValueBytes);
    constexpr int kChunks = G / 32;
    const int64_t groups = a.cols / G;
    const uint8_t* unit = a.w + static_cast<size_t>(r) * a.rowBytes;
    LinePrefetch ahead(unit);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t gi = 0; gi < groups; ++gi, unit += kUnit) {
        if (prefetchAhead) ahead.upTo(unit + kUnit);
        const int8_t* x = px.x + gi * G;
        __m256i xc[kChunks];
        for (int c = 0; c < kChunks; ++c)
            xc[c] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 32 * c));
        __m256i p[kRows];
        for (int i = 0; i < kRows; ++i) {
            __m256i w[kChunks];
            loadGroupOffset<Bits, G>(unit + 4 * kRows + i * kValueBytes, w);
            p[i] = _mm256_dpbusd_epi32(_mm256_setzero_si256(), w[0], xc[0]);
            if constexpr (kChunks == 2) p[i] = _mm256_dpbusd_epi32(p[i], w[1], xc[1]);
        }
        acc = addGroup(acc, rowSums8(p), px.corr[gi],
                       _mm256_loadu_ps(reinterpret_cast<const float*>(unit)), a.xs[gi]);
    }
    _mm256_storeu_ps(a.y + r, acc);
}

// Lane i = the sum of row i's sixteen int32 lanes, where p[j] holds row 2j's partial sums in its
// low 256 bits and row 2j + 1's in its high 256 bits. Eight shuffles where rowSums8 takes fourteen
// (a hadd is two shuffles and an add on Intel).
inline __m256i rowSums8Pairs(const __m512i p[4]) {
    // 128-bit lane k of lo4 = row k's four partial sums (k < 4); of hi4, row 4 + k's.
    const __m512i lo4 = _mm512_add_epi32(_mm512_shuffle_i32x4(p[0], p[1], 0x88),
                                         _mm512_shuffle_i32x4(p[0], p[1], 0xDD));
    const __m512i hi4 = _mm512_add_epi32(_mm512_shuffle_i32x4(p[2], p[3], 0x88),
                                         _mm512_shuffle_i32x4(p[2], p[3], 0xDD));
    // Lane k: (row k, row 4 + k, row k, row 4 + k), then each of them whole.
    __m512i u = _mm512_add_epi32(_mm512_unpacklo_epi32(lo4, hi4), _mm512_unpackhi_epi32(lo4, hi4));
    u = _mm512_add_epi32(u, _mm512_shuffle_epi32(u, _MM_PERM_BADC));
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0);
    return _mm512_castsi512_si256(_mm512_permutexvar_epi32(order, u));
}

// tile8One for int4-g64 with 512-bit vectors: one 64-byte load holds two rows' value bytes (rows
// 2j and 2j + 1 follow each other in a tile), so each VPDPBUSD covers two rows and the row sums
// take eight shuffles instead of fourteen: half the instructions of the 256-bit form per tile. The
// integer sums are the same integers (exact in any order); the f32 part is tile8One's (addGroup).
// In cache (`coli bench kernels`' HotKernel rows, two threads,
// Intel Xeon VM, alternated): 82-85 -> 94-96 GB/s; from DRAM the same 0.93-0.95 of MemRead; in
// the decode (OLMoE shape, the two forms switched every other step in one process) the experts'
// phase 1-1.6 % shorter: there the kernel waits for memory (with its arithmetic removed, the
// phase took the same time).
void tile8OneInt4G64(const MatmulArgs& a, const PreparedActs& px, int64_t r, bool prefetchAhead) {
    constexpr size_t kUnit = kRows * (4 + 32);
    const int64_t groups = a.cols / 64;
    const uint8_t* unit = a.w + static_cast<size_t>(r) * a.rowBytes;
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    const __m512i eight = _mm512_set1_epi8(0x08);
    LinePrefetch ahead(unit);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t gi = 0; gi < groups; ++gi, unit += kUnit) {
        if (prefetchAhead) ahead.upTo(unit + kUnit);
        const int8_t* x = px.x + gi * 64;
        // The even-indexed values (low nibbles) and the odd ones, each in both halves.
        const __m512i xe =
            _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x)));
        const __m512i xo =
            _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 32)));
        __m512i p[4];
        for (int j = 0; j < 4; ++j) {
            const __m512i v = _mm512_loadu_si512(unit + 4 * kRows + 64 * j);
            const __m512i lo = _mm512_ternarylogic_epi32(v, low4, eight, 0x6A);
            const __m512i hi =
                _mm512_ternarylogic_epi32(_mm512_srli_epi16(v, 4), low4, eight, 0x6A);
            p[j] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, xe), hi, xo);
        }
        acc = addGroup(acc, rowSums8Pairs(p), px.corr[gi],
                       _mm256_loadu_ps(reinterpret_cast<const float*>(unit)), a.xs[gi]);
    }
    _mm256_storeu_ps(a.y + r, acc);
}

template <int Bits, int G> void matmulRowsT(const MatmulArgs& a, int64_t r0, int64_t r1) {
    const PreparedActs px = prepareActs<Bits, G>(a);
    const bool tiled = a.fi.rowTile == kRows && a.nTokens == 1;
    for (int64_t r = r0; r < r1;) {
        // A range that starts inside a tile finishes that tile first (rows8), so the rest runs on
        // whole tiles.
        const int64_t step = tiled && r % kRows != 0 ? kRows - r % kRows : kRows;
        const int nValid = static_cast<int>(std::min<int64_t>(step, r1 - r));
        if (tiled && nValid == kRows) {
            if constexpr (Bits == 4 && G == 64)
                tile8OneInt4G64(a, px, r, r + kRows < a.rows);
            else
                tile8One<Bits, G>(a, px, r, r + kRows < a.rows);
        } else
            rows8<Bits, G>(a, px, r, nValid, r + kPrefetchRows + kRows <= a.rows);
        r += nValid;
    }
}

void matmulRowsVnni(const MatmulArgs& a, int64_t r0, int64_t r1) {
    withFormat(a.fmt, [&](auto bits, auto g) {
        matmulRowsT<decltype(bits)::value, decltype(g)::value>(a, r0, r1);
    });
}

// One row's group dots with the same instructions as rows8 and tile8One (loadGroupOffset and
// VPDPBUSD on the prepared activations, minus the offset correction).
template <int Bits, int G>
void groupDotsT(const RowBlocks& row, const int8_t* xq, int64_t cols, int32_t* dots) {
    MatmulArgs a{};
    a.cols = cols;
    a.xq = xq;
    a.nTokens = 1;
    const PreparedActs px = prepareActs<Bits, G>(a);
    for (int64_t gi = 0; gi < cols / G; ++gi) {
        __m256i w[G / 32];
        loadGroupOffset<Bits, G>(row.values + gi * row.stride, w);
        __m256i s = _mm256_setzero_si256();
        for (int c = 0; c < G / 32; ++c)
            s = _mm256_dpbusd_epi32(
                s, w[c],
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(px.x + gi * G + 32 * c)));
        dots[gi] = hsum(s) - px.corr[gi];
    }
}

void groupDotsVnni(WeightFormat fmt, const RowBlocks& row, const int8_t* xq, int64_t cols,
                   int32_t* dots) {
    withFormat(fmt, [&](auto bits, auto g) {
        groupDotsT<decltype(bits)::value, decltype(g)::value>(row, xq, cols, dots);
    });
}

const KernelTable kVnni{matmulRowsVnni, groupDotsVnni};

} // namespace

const KernelTable* avx512VnniKernels() {
    return &kVnni;
}

} // namespace coli::quant::detail
