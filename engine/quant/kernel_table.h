#pragma once
// Internal: the per-path kernel entry points behind dispatch.cpp. Not a public header.
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "quant/formats.h"

namespace coli::quant::detail {

struct MatmulArgs {
    WeightFormat fmt;
    FormatInfo fi; // formatInfo(fmt)
    int groupSize;
    const uint8_t* w; // rows * rowBytes
    size_t rowBytes;
    int64_t rows;
    int64_t cols;
    const int8_t* xq; // [nTokens, cols]
    const float* xs;  // [nTokens, cols / groupSize]
    int64_t nTokens;  // 1..kMaxBatch
    float* y;         // y[t * yStride + r]
    int64_t yStride;
};

// Computes y for rows [r0, r1) and all tokens, in the order defined in matmul.h.
using MatmulRowsFn = void (*)(const MatmulArgs& a, int64_t r0, int64_t r1);
// dots[g] = idot of one quantised row (its blocks: formats.h rowBlocks) and one token's int8
// activations, g over cols / G.
using GroupDotsFn = void (*)(WeightFormat fmt, const RowBlocks& row, const int8_t* xq, int64_t cols,
                             int32_t* dots);

struct KernelTable {
    MatmulRowsFn matmulRows;
    GroupDotsFn groupDots;
};

// Calls f(bits, groupSize) with both as std::integral_constant, so a kernel file picks its
// template instance for `fmt` with `Fn<decltype(bits)::value, decltype(g)::value>`. A format and
// its -r8 variant share an instance: kernels address blocks through rowBlocks.
// Kernels read row r's blocks at rowBlocks(a.fmt, a.w, a.cols, r); the bytes of rows
// [r, r + n) for r and n multiples of 8 are [r * rowBytes, (r + n) * rowBytes) in every layout,
// which is what their software prefetch walks.
template <typename F> void withFormat(WeightFormat fmt, F&& f) {
    using I8 = std::integral_constant<int, 8>;
    using I4 = std::integral_constant<int, 4>;
    using G32 = std::integral_constant<int, 32>;
    using G64 = std::integral_constant<int, 64>;
    switch (fmt) {
    case WeightFormat::Q8_G32:
    case WeightFormat::Q8_G32_R8:
        return f(I8{}, G32{});
    case WeightFormat::Q8_G64:
    case WeightFormat::Q8_G64_R8:
        return f(I8{}, G64{});
    case WeightFormat::Q4_G32:
    case WeightFormat::Q4_G32_R8:
        return f(I4{}, G32{});
    case WeightFormat::Q4_G64:
    case WeightFormat::Q4_G64_R8:
        return f(I4{}, G64{});
    }
}

// Row i's scale and value pointers for rows r .. r+N-1 of a's matrix (formats.h rowBlocks, either
// layout); rows past nValid repeat the last one (computed, never stored).
template <int N> struct RowPointers {
    const uint8_t* scale[N];
    const uint8_t* values[N];
    size_t stride = 0;             // bytes between a row's consecutive groups
    const uint8_t* base;           // a.w + r * rowBytes: where the N rows' bytes start, in either
                                   // layout when r is a multiple of N (what prefetches walk from)
    bool scalesSideBySide = false; // N whole rows of one -r8 tile: group g's N scales are one
                                   // vector at scale[0] + g * stride
    RowPointers(const MatmulArgs& a, int64_t r, int nValid)
        : base(a.w + static_cast<size_t>(r) * a.rowBytes),
          scalesSideBySide(a.fi.rowTile >= N && r % N == 0 && nValid == N) {
        for (int i = 0; i < N; ++i) {
            const RowBlocks b = rowBlocks(a.fi, a.w, a.rowBytes, r + (i < nValid ? i : nValid - 1));
            scale[i] = b.scale;
            values[i] = b.values;
            stride = b.stride;
        }
    }
};

const KernelTable* scalarKernels();
const KernelTable* avx2Kernels();       // nullptr when not compiled in
const KernelTable* neonKernels();       // nullptr when not compiled in
const KernelTable* avx512VnniKernels(); // nullptr when not compiled in

} // namespace coli::quant::detail
