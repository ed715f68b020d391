// AVX2 path (compiled with -mavx2 -mfma; called only when the CPU has both).
// Integer dots, exact for every value including -128 and -8:
//   int8: weights and activations sign-extended to int16 and multiplied with _mm256_madd_epi16
//         (not _mm256_maddubs_epi16: its int16 pair sums saturate at 2 * 128 * 128, and its
//         sign trick breaks on -128);
//   int4: weights offset to u = q + 8 in 0..15 so _mm256_maddubs_epi16(u, x) cannot saturate
//         (|pair| <= 2 * 15 * 128), then sum(q x) = sum(u x) - 8 sum(x). The activations of
//         each group are reordered once per call into the order of the weights' nibbles (even
//         values, then odd ones) and 8 sum(x) is computed once per group, so a row's group
//         costs one load, a few logic ops and one or two maddubs (callgrind: -26 % instructions
//         for int4-g64 against reordering per row block). Four rows are done at
// once; their per-group int32 sums are reduced with hadd into one vector whose lane i is row i, so
// the f32 part (convert, scale multiply, add) is the scalar definition evaluated lane-wise.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "quant/avx2_helpers.h"
#include "quant/kernel_table.h"
#include "quant/matmul.h"

namespace coli::quant::detail {

namespace {

// 32 consecutive int8 weights (values 0..15 in lo, 16..31 in hi) sign-extended to int16.
inline void loadWeights32Int8(const uint8_t* p, __m256i& lo, __m256i& hi) {
    lo = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    hi = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16)));
}

// 32 int4 weights as unsigned bytes u = q + 8 (0..15): the low 16 bytes are the even values
// 0, 2, .., 30 (low nibbles), the high 16 the odd values (high nibbles); activations are put in
// the same order by deinterleaveActs32. With int8 activations x, sum(u * x) - 8 * sum(x) =
// sum(q * x); _mm256_maddubs_epi16 is exact here because |u * x + u' * x'| <= 2 * 15 * 128 < 2^15
// (no saturation, unlike u8 x s8 on full bytes).
inline __m256i loadWeights32Offset(const uint8_t* p) {
    // Both halves hold the 16 bytes; the high one is shifted right by 4 (per 64-bit lane).
    const __m256i both = _mm256_broadcastsi128_si256(
        _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)),
                      _mm_set1_epi8(static_cast<char>(0x88))));
    return _mm256_and_si256(_mm256_srlv_epi64(both, _mm256_set_epi64x(4, 4, 0, 0)),
                            _mm256_set1_epi8(0x0F));
}

inline void loadActs32(const int8_t* x, __m256i& lo, __m256i& hi) {
    lo = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x)));
    hi = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + 16)));
}

inline __m256i dot32(__m256i wlo, __m256i whi, __m256i xlo, __m256i xhi) {
    return _mm256_add_epi32(_mm256_madd_epi16(wlo, xlo), _mm256_madd_epi16(whi, xhi));
}

// Lane i = the sum of the 8 int32 lanes of p[i]: four rows' group dots in one vector, so the
// f32 part is the scalar definition evaluated lane-wise.
inline __m128i rowSums4(const __m256i p[4]) {
    const __m256i h =
        _mm256_hadd_epi32(_mm256_hadd_epi32(p[0], p[1]), _mm256_hadd_epi32(p[2], p[3]));
    return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

// y[t, r .. r+nValid-1] = lanes of acc[t] (rows past nValid were computed on a repeated row and
// are not stored).
inline void storeRows4(const MatmulArgs& a, int64_t r, int nValid, const __m128* acc) {
    for (int64_t t = 0; t < a.nTokens; ++t) {
        float* y = a.y + t * a.yStride + r;
        if (nValid == 4) {
            _mm_storeu_ps(y, acc[t]);
        } else {
            alignas(16) float tmp[4];
            _mm_store_ps(tmp, acc[t]);
            for (int i = 0; i < nValid; ++i)
                y[i] = tmp[i];
        }
    }
}

// int8 rows r .. r+nValid-1 (nValid 1..4; missing rows repeat the last one and are not stored).
template <int G> void rows4Q8(const MatmulArgs& a, int64_t r, int nValid, bool hasNext) {
    constexpr int kChunks = G / 32;
    constexpr size_t kChunkBytes = 32;
    constexpr size_t kBlockBytes = 4 + G;
    const int64_t groups = a.cols / G;
    const RowPointers<4> rows(a, r, nValid);
    __m128 acc[kMaxBatch];
    for (int64_t t = 0; t < a.nTokens; ++t)
        acc[t] = _mm_setzero_ps();
    for (int64_t gi = 0; gi < groups; ++gi) {
        const size_t off = static_cast<size_t>(gi) * rows.stride;
        if (hasNext) {
            // The next four rows follow contiguously; fetch them at the pace this block is read.
            const char* next =
                reinterpret_cast<const char*>(rows.base + 4 * a.rowBytes + 4 * gi * kBlockBytes);
            for (size_t b = 0; b < 4 * kBlockBytes; b += 64)
                _mm_prefetch(next + b, _MM_HINT_T0);
        }
        // Two int16 vectors per 32-value chunk.
        __m256i w[4][kChunks][2];
        for (int i = 0; i < 4; ++i)
            for (int c = 0; c < kChunks; ++c)
                loadWeights32Int8(rows.values[i] + off + c * kChunkBytes, w[i][c][0], w[i][c][1]);
        const __m128 ws =
            rows.scalesSideBySide
                ? _mm_loadu_ps(reinterpret_cast<const float*>(rows.scale[0] + off))
                : _mm_set_ps(loadScale(rows.scale[3] + off), loadScale(rows.scale[2] + off),
                             loadScale(rows.scale[1] + off), loadScale(rows.scale[0] + off));
        for (int64_t t = 0; t < a.nTokens; ++t) {
            const int8_t* x = a.xq + t * a.cols + gi * G;
            __m256i p[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                            _mm256_setzero_si256()};
            for (int c = 0; c < kChunks; ++c) {
                __m256i xlo, xhi;
                loadActs32(x + 32 * c, xlo, xhi);
                for (int i = 0; i < 4; ++i)
                    p[i] = _mm256_add_epi32(p[i], dot32(w[i][c][0], w[i][c][1], xlo, xhi));
            }
            const __m128i s = rowSums4(p);
            const __m128 scale = _mm_mul_ps(ws, _mm_set1_ps(a.xs[t * groups + gi]));
            acc[t] = _mm_add_ps(acc[t], _mm_mul_ps(_mm_cvtepi32_ps(s), scale));
        }
    }
    storeRows4(a, r, nValid, acc);
}

// int4 activations prepared once per call, per token and group, in the order of the weights'
// nibbles: g64: the 32 even-indexed values then the 32 odd-indexed ones (a 32-byte load's low and
// high nibbles); g32: the 16 even then the 16 odd (loadWeights32Offset's order). Plus
// 8 * (sum of the group's values), subtracted once from the offset dot sum(u x).
struct PreparedActs {
    const int8_t* x;     // [nTokens, cols] in the reordered layout
    const int32_t* sum8; // [nTokens, cols / G]
};

template <int G> PreparedActs prepareActs(const MatmulArgs& a) {
    // Grown, never shrunk: after the first call of a thread at a given size, no allocation.
    thread_local std::vector<int8_t> xbuf;
    thread_local std::vector<int32_t> sbuf;
    const int64_t groups = a.cols / G;
    if (xbuf.size() < static_cast<size_t>(a.nTokens * a.cols))
        xbuf.resize(static_cast<size_t>(a.nTokens * a.cols));
    if (sbuf.size() < static_cast<size_t>(a.nTokens * groups))
        sbuf.resize(static_cast<size_t>(a.nTokens * groups));
    const __m256i ones8 = _mm256_set1_epi8(1);
    const __m256i ones16 = _mm256_set1_epi16(1);
    for (int64_t t = 0; t < a.nTokens; ++t)
        for (int64_t g = 0; g < groups; ++g) {
            const int8_t* src = a.xq + t * a.cols + g * G;
            int8_t* dst = xbuf.data() + t * a.cols + g * G;
            __m256i s16;
            if constexpr (G == 64) {
                // deinterleaveActs32 gives (even 16, odd 16) per 32 values; merge the two
                // halves' even parts and odd parts into (even 32, odd 32).
                const __m256i d0 = deinterleaveActs32(src);
                const __m256i d1 = deinterleaveActs32(src + 32);
                const __m256i even = _mm256_permute2x128_si256(d0, d1, 0x20);
                const __m256i odd = _mm256_permute2x128_si256(d0, d1, 0x31);
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), even);
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 32), odd);
                s16 = _mm256_add_epi16(_mm256_maddubs_epi16(ones8, even),
                                       _mm256_maddubs_epi16(ones8, odd));
            } else {
                const __m256i d = deinterleaveActs32(src);
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), d);
                s16 = _mm256_maddubs_epi16(ones8, d);
            }
            // sum(x) exactly: |x| <= 128, at most 64 values.
            sbuf[static_cast<size_t>(t * groups + g)] = 8 * hsum(_mm256_madd_epi16(s16, ones16));
        }
    return {xbuf.data(), sbuf.data()};
}

// One row's int4 group as u = q + 8 bytes in the prepared activations' order: g64: lo = the 32
// even values, hi = the 32 odd ones; g32: lo = (even 16 | odd 16), hi unused.
template <int G> inline void loadGroupQ4(const uint8_t* p, __m256i& lo, __m256i& hi) {
    if constexpr (G == 64) {
        const __m256i v = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)),
                                           _mm256_set1_epi8(static_cast<char>(0x88)));
        lo = _mm256_and_si256(v, _mm256_set1_epi8(0x0F));
        hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), _mm256_set1_epi8(0x0F));
    } else {
        lo = loadWeights32Offset(p);
        hi = lo;
    }
}

// sum(u x) of that group and its prepared activations x, as eight int32 partial sums.
// |u x + u' x'| <= 2 * 15 * 128 per maddubs lane (two added for g64: <= 7680): exact.
template <int G> inline __m256i dotGroupQ4(__m256i lo, __m256i hi, const int8_t* x) {
    const __m256i ones16 = _mm256_set1_epi16(1);
    const __m256i xe = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x));
    if constexpr (G == 64) {
        const __m256i xo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 32));
        return _mm256_madd_epi16(
            _mm256_add_epi16(_mm256_maddubs_epi16(lo, xe), _mm256_maddubs_epi16(hi, xo)), ones16);
    } else {
        return _mm256_madd_epi16(_mm256_maddubs_epi16(lo, xe), ones16);
    }
}

// int4 rows r .. r+nValid-1 (as rows4Q8), with prepared activations.
template <int G>
void rows4Q4(const MatmulArgs& a, const PreparedActs& px, int64_t r, int nValid, bool hasNext) {
    constexpr size_t kBlockBytes = 4 + G / 2;
    const int64_t groups = a.cols / G;
    const RowPointers<4> rows(a, r, nValid);
    __m128 acc[kMaxBatch];
    for (int64_t t = 0; t < a.nTokens; ++t)
        acc[t] = _mm_setzero_ps();
    for (int64_t gi = 0; gi < groups; ++gi) {
        const size_t off = static_cast<size_t>(gi) * rows.stride;
        if (hasNext) {
            const char* next =
                reinterpret_cast<const char*>(rows.base + 4 * a.rowBytes + 4 * gi * kBlockBytes);
            for (size_t b = 0; b < 4 * kBlockBytes; b += 64)
                _mm_prefetch(next + b, _MM_HINT_T0);
        }
        __m256i lo[4], hi[4];
        for (int i = 0; i < 4; ++i)
            loadGroupQ4<G>(rows.values[i] + off, lo[i], hi[i]);
        const __m128 ws =
            rows.scalesSideBySide
                ? _mm_loadu_ps(reinterpret_cast<const float*>(rows.scale[0] + off))
                : _mm_set_ps(loadScale(rows.scale[3] + off), loadScale(rows.scale[2] + off),
                             loadScale(rows.scale[1] + off), loadScale(rows.scale[0] + off));
        for (int64_t t = 0; t < a.nTokens; ++t) {
            const int8_t* x = px.x + t * a.cols + gi * G;
            __m256i p[4];
            for (int i = 0; i < 4; ++i)
                p[i] = dotGroupQ4<G>(lo[i], hi[i], x);
            const __m128i s = _mm_sub_epi32(rowSums4(p), _mm_set1_epi32(px.sum8[t * groups + gi]));
            const __m128 scale = _mm_mul_ps(ws, _mm_set1_ps(a.xs[t * groups + gi]));
            acc[t] = _mm_add_ps(acc[t], _mm_mul_ps(_mm_cvtepi32_ps(s), scale));
        }
    }
    storeRows4(a, r, nValid, acc);
}

// One token, one whole tile of an -r8 format: the tile is one stream of group units (eight
// scales, then the eight rows' value bytes), read from one pointer at constant offsets, as two
// halves of four rows with rows4Q4's / rows4Q8's instructions (the same bits), prefetching with
// LinePrefetch. With COLI_QUANT_PATH=avx2 on the Intel Xeon VM it took int4-g64-r8 from 0.66-0.75
// to 0.74-0.82 of MemRead and int8 from 0.62-0.74 to 0.81-0.84 (docs/performance.md).
constexpr size_t kTileRows = 8;

template <int Bits, int G>
void tile8One(const MatmulArgs& a, const PreparedActs& px, int64_t r, bool prefetchAhead) {
    constexpr size_t kValueBytes = G * Bits / 8;
    constexpr size_t kUnit = kTileRows * (4 + kValueBytes);
    const int64_t groups = a.cols / G;
    const uint8_t* unit = a.w + static_cast<size_t>(r) * a.rowBytes;
    LinePrefetch ahead(unit);
    __m128 acc[2] = {_mm_setzero_ps(), _mm_setzero_ps()};
    for (int64_t gi = 0; gi < groups; ++gi, unit += kUnit) {
        if (prefetchAhead) ahead.upTo(unit + kUnit);
        const __m128 xs = _mm_set1_ps(a.xs[gi]);
        for (int h = 0; h < 2; ++h) {
            __m256i p[4];
            for (int i = 0; i < 4; ++i) {
                const uint8_t* v = unit + 4 * kTileRows + (4 * h + i) * kValueBytes;
                if constexpr (Bits == 8) {
                    p[i] = _mm256_setzero_si256();
                    for (int c = 0; c < G / 32; ++c) {
                        __m256i wlo, whi, xlo, xhi;
                        loadWeights32Int8(v + 32 * c, wlo, whi);
                        loadActs32(a.xq + gi * G + 32 * c, xlo, xhi);
                        p[i] = _mm256_add_epi32(p[i], dot32(wlo, whi, xlo, xhi));
                    }
                } else {
                    __m256i lo, hi;
                    loadGroupQ4<G>(v, lo, hi);
                    p[i] = dotGroupQ4<G>(lo, hi, px.x + gi * G);
                }
            }
            __m128i s = rowSums4(p);
            if constexpr (Bits == 4) s = _mm_sub_epi32(s, _mm_set1_epi32(px.sum8[gi]));
            const __m128 ws = _mm_loadu_ps(reinterpret_cast<const float*>(unit + 16 * h));
            acc[h] = _mm_add_ps(acc[h], _mm_mul_ps(_mm_cvtepi32_ps(s), _mm_mul_ps(ws, xs)));
        }
    }
    _mm_storeu_ps(a.y + r, acc[0]);
    _mm_storeu_ps(a.y + r + 4, acc[1]);
}

template <int Bits, int G> void matmulRowsT(const MatmulArgs& a, int64_t r0, int64_t r1) {
    PreparedActs px{};
    if constexpr (Bits == 4) px = prepareActs<G>(a);
    const bool tiled = a.fi.rowTile == static_cast<int>(kTileRows) && a.nTokens == 1;
    for (int64_t r = r0; r < r1;) {
        if (tiled && r % 8 == 0 && r + 8 <= r1) {
            tile8One<Bits, G>(a, px, r, r + 8 < a.rows);
            r += 8;
            continue;
        }
        // Blocks of four rows; in a tiled layout they stop at the tile's end, so that the rest of
        // the range runs on whole tiles.
        int64_t n = std::min<int64_t>(4, r1 - r);
        if (tiled) n = std::min<int64_t>(n, 8 - r % 8);
        if constexpr (Bits == 4)
            rows4Q4<G>(a, px, r, static_cast<int>(n), r + 8 <= r1);
        else
            rows4Q8<G>(a, r, static_cast<int>(n), r + 8 <= r1);
        r += n;
    }
}

void matmulRowsAvx2(const MatmulArgs& a, int64_t r0, int64_t r1) {
    withFormat(a.fmt, [&](auto bits, auto g) {
        matmulRowsT<decltype(bits)::value, decltype(g)::value>(a, r0, r1);
    });
}

// One row's group dots with the kernels' instructions: int8 as rows4Q8 (dot32 on the raw
// activations), int4 as rows4Q4 / tile8One (loadGroupQ4 and dotGroupQ4 on the prepared
// activations, minus 8 sum(x)).
template <int Bits, int G>
void groupDotsT(const RowBlocks& row, const int8_t* xq, int64_t cols, int32_t* dots) {
    if constexpr (Bits == 8) {
        for (int64_t gi = 0; gi < cols / G; ++gi) {
            __m256i p = _mm256_setzero_si256();
            for (int c = 0; c < G / 32; ++c) {
                __m256i wlo, whi, xlo, xhi;
                loadWeights32Int8(row.values + gi * row.stride + 32 * c, wlo, whi);
                loadActs32(xq + gi * G + 32 * c, xlo, xhi);
                p = _mm256_add_epi32(p, dot32(wlo, whi, xlo, xhi));
            }
            dots[gi] = hsum(p);
        }
    } else {
        MatmulArgs a{};
        a.cols = cols;
        a.xq = xq;
        a.nTokens = 1;
        const PreparedActs px = prepareActs<G>(a);
        for (int64_t gi = 0; gi < cols / G; ++gi) {
            __m256i lo, hi;
            loadGroupQ4<G>(row.values + gi * row.stride, lo, hi);
            dots[gi] = hsum(dotGroupQ4<G>(lo, hi, px.x + gi * G)) - px.sum8[gi];
        }
    }
}

void groupDotsAvx2(WeightFormat fmt, const RowBlocks& row, const int8_t* xq, int64_t cols,
                   int32_t* dots) {
    withFormat(fmt, [&](auto bits, auto g) {
        groupDotsT<decltype(bits)::value, decltype(g)::value>(row, xq, cols, dots);
    });
}

const KernelTable kAvx2{matmulRowsAvx2, groupDotsAvx2};

} // namespace

const KernelTable* avx2Kernels() {
    return &kAvx2;
}

} // namespace coli::quant::detail
