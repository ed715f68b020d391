#include "forward/kernels.h"

#include "quant/shared_math.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace coli {

float rmsNormFactor(const float* x, int n, float eps) {
    float ss = 0.0f;
    for (int i = 0; i < n; ++i)
        ss += x[i] * x[i];
    return 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
}

void rmsNorm(const float* x, const float* w, int n, float eps, float* out) {
    const float r = rmsNormFactor(x, n, eps);
    for (int i = 0; i < n; ++i)
        out[i] = w[i] * (x[i] * r);
}

float sigmoid(float x) {
    return 1.0f / (1.0f + std::exp(-x));
}

float silu(float x) {
    return quant::siluShared(x); // the GPU tier computes the same bits (quant/shared_math.h)
}

void softmax(float* x, int n) {
    float mx = x[0];
    for (int i = 1; i < n; ++i)
        mx = std::max(mx, x[i]);
    float sum = 0.0f;
    for (int i = 0; i < n; ++i) {
        x[i] = std::exp(x[i] - mx);
        sum += x[i];
    }
    const float inv = 1.0f / sum;
    for (int i = 0; i < n; ++i)
        x[i] *= inv;
}

void topK(const float* x, int n, int k, int* out) {
    // Selection by repeated scans (no allocation): n is the number of experts (tens to
    // hundreds), k <= n. Strict '>' keeps the lower index among equal values.
    for (int j = 0; j < k; ++j) {
        int best = -1;
        for (int i = 0; i < n; ++i) {
            bool taken = false;
            for (int p = 0; p < j; ++p)
                taken = taken || out[p] == i;
            if (taken) continue;
            if (best < 0 || x[i] > x[best]) best = i;
        }
        out[j] = best;
    }
}

float dotReference(const float* a, const float* b, int n) {
    double s = 0.0;
    for (int i = 0; i < n; ++i)
        s += double(a[i]) * double(b[i]);
    return static_cast<float>(s);
}

namespace {

// How far ahead of its reads dotFastAhead prefetches, in floats: the two distances of the
// quantised kernels' LinePrefetch (quant/avx2_helpers.h). On the OLMoE router (64 x 2048 f32, 32
// rows per thread) the router phase went from 0.47 to 0.43 ms per token against fetching the
// next row into L2 at the pace of this one (docs/performance.md, 2026-12-05 07:00 UTC).
constexpr int kNearFloats = 256, kFarFloats = 768;

// The two prefetches dotFastAhead issues for the 64-byte line of a row at p: kNearFloats and
// kFarFloats past it.
inline void prefetchAhead(const float* p) {
    __builtin_prefetch(p + kNearFloats, 0, 3);
    __builtin_prefetch(p + kFarFloats, 0, 2);
}

// The part of a . b past the last multiple of 8 (from i to n), summed in index order.
inline float tailSum(const float* a, const float* b, int i, int n) {
    float tail = 0.0f;
    for (; i < n; ++i)
        tail += a[i] * b[i];
    return tail;
}

// dotFast's result from its eight partial sums and tail: the one combining order every variant
// uses, so they agree bit for bit.
inline float combineSums(const float* acc, float tail) {
    return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail;
}

// dotFast's sums; with Ahead, also two prefetches per 64-byte line of `a` (prefetchAhead). The
// prefetches do not change the arithmetic.
template <bool Ahead> float dotSums(const float* a, const float* b, int n) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        if constexpr (Ahead)
            if (i % 16 == 0) prefetchAhead(a + i);
        for (int j = 0; j < 8; ++j)
            acc[j] += a[i + j] * b[i + j];
    }
    return combineSums(acc, tailSum(a, b, i, n));
}

// Four lanes of a row's eight partial sums (acc[0..3] or acc[4..7] of dotSums).
typedef float Lanes4 __attribute__((vector_size(16)));

Lanes4 load4(const float* p) {
    Lanes4 v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
}

} // namespace

void dotFastRows4(const float* a, size_t stride, const float* b, int n, float* out) {
    // Row r's partial sums acc[j] (j = 0..7) live in lo[r] (j < 4) and hi[r] (j >= 4): each
    // element is multiplied and added to the same partial sum as in dotSums, in the same order,
    // and the eight are combined by combineSums. Four rows give the core four independent
    // chains of adds instead of one (one row's adds wait for each other: about 4 cycles per 8
    // floats), and four read streams, each prefetched as dotFastAhead prefetches its row.
    Lanes4 lo[4] = {}, hi[4] = {};
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        const Lanes4 b0 = load4(b + i), b1 = load4(b + i + 4);
        for (int r = 0; r < 4; ++r) {
            const float* ar = a + size_t(r) * stride + i;
            if (i % 16 == 0) prefetchAhead(ar);
            lo[r] += load4(ar) * b0;
            hi[r] += load4(ar + 4) * b1;
        }
    }
    for (int r = 0; r < 4; ++r) {
        float acc[8];
        __builtin_memcpy(acc, &lo[r], sizeof lo[r]);
        __builtin_memcpy(acc + 4, &hi[r], sizeof hi[r]);
        out[r] = combineSums(acc, tailSum(a + size_t(r) * stride, b, i, n));
    }
}

float dotFast(const float* a, const float* b, int n) {
    return dotSums<false>(a, b, n);
}

float dotFastAhead(const float* a, const float* b, int n) {
    return dotSums<true>(a, b, n);
}

} // namespace coli
