// The reference path: computes matmul.h's definition literally.
#include <cstring>

#include "quant/kernel_table.h"

namespace coli::quant::detail {

namespace {

int32_t groupDot(const uint8_t* values, int bits, int g, const int8_t* x) {
    int32_t s = 0;
    if (bits == 8) {
        for (int i = 0; i < g; ++i)
            s += static_cast<int8_t>(values[i]) * x[i];
    } else {
        for (int j = 0; j < g / 2; ++j) {
            const unsigned b = values[j];
            const int lo = static_cast<int>((b & 15u) ^ 8u) - 8;
            const int hi = static_cast<int>((b >> 4) ^ 8u) - 8;
            s += lo * x[2 * j] + hi * x[2 * j + 1];
        }
    }
    return s;
}

void groupDotsScalar(WeightFormat fmt, const RowBlocks& row, const int8_t* xq, int64_t cols,
                     int32_t* dots) {
    const FormatInfo fi = formatInfo(fmt);
    const int64_t groups = cols / fi.groupSize;
    for (int64_t gi = 0; gi < groups; ++gi)
        dots[gi] =
            groupDot(row.values + gi * row.stride, fi.bits, fi.groupSize, xq + gi * fi.groupSize);
}

void matmulRowsScalar(const MatmulArgs& a, int64_t r0, int64_t r1) {
    const FormatInfo& fi = a.fi;
    const int g = fi.groupSize;
    const int64_t groups = a.cols / g;
    for (int64_t r = r0; r < r1; ++r) {
        const RowBlocks row = rowBlocks(a.fi, a.w, a.rowBytes, r);
        for (int64_t t = 0; t < a.nTokens; ++t) {
            const int8_t* x = a.xq + t * a.cols;
            const float* xs = a.xs + t * groups;
            float acc = 0.0f;
            for (int64_t gi = 0; gi < groups; ++gi) {
                float ws;
                std::memcpy(&ws, row.scale + gi * row.stride, sizeof ws);
                const int32_t d = groupDot(row.values + gi * row.stride, fi.bits, g, x + gi * g);
                const float scale = ws * xs[gi];
                acc = acc + static_cast<float>(d) * scale;
            }
            a.y[t * a.yStride + r] = acc;
        }
    }
}

const KernelTable kScalar{matmulRowsScalar, groupDotsScalar};

} // namespace

const KernelTable* scalarKernels() {
    return &kScalar;
}

} // namespace coli::quant::detail
