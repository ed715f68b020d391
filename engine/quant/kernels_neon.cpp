// ARM NEON path with the dot-product extension (compiled only for aarch64 with
// -march=armv8.2-a+dotprod; called only when HWCAP_ASIMDDP is set). vdotq_s32 multiplies int8
// lanes and sums groups of four products into int32 lanes: exact for all int8/int4 values. The
// f32 part is the scalar definition, per (token, row), in group order.
#include <arm_neon.h>

#include <cstring>

#include "quant/kernel_table.h"
#include "quant/matmul.h"

namespace coli::quant::detail {

namespace {

float loadScale(const uint8_t* block) {
    float s;
    std::memcpy(&s, block, sizeof s);
    return s;
}

// 32 consecutive integer weights as int8 (values 0..15 in lo, 16..31 in hi).
template <int Bits> inline void loadWeights32(const uint8_t* p, int8x16_t& lo, int8x16_t& hi) {
    if constexpr (Bits == 8) {
        lo = vld1q_s8(reinterpret_cast<const int8_t*>(p));
        hi = vld1q_s8(reinterpret_cast<const int8_t*>(p + 16));
    } else {
        const uint8x16_t raw = vld1q_u8(p);
        const uint8x16_t mask = vdupq_n_u8(0x0F);
        const int8x16_t eight = vdupq_n_s8(8);
        // 4-bit two's complement: (n ^ 8) - 8.
        const int8x16_t even =
            vsubq_s8(veorq_s8(vreinterpretq_s8_u8(vandq_u8(raw, mask)), eight), eight);
        const int8x16_t odd =
            vsubq_s8(veorq_s8(vreinterpretq_s8_u8(vshrq_n_u8(raw, 4)), eight), eight);
        lo = vzip1q_s8(even, odd);
        hi = vzip2q_s8(even, odd);
    }
}

template <int Bits, int G> inline int32_t groupDot(const uint8_t* values, const int8_t* x) {
    constexpr size_t kChunkBytes = 32 * Bits / 8;
    int32x4_t acc = vdupq_n_s32(0);
    for (int c = 0; c < G / 32; ++c) {
        int8x16_t wlo, whi;
        loadWeights32<Bits>(values + c * kChunkBytes, wlo, whi);
        acc = vdotq_s32(acc, wlo, vld1q_s8(x + 32 * c));
        acc = vdotq_s32(acc, whi, vld1q_s8(x + 32 * c + 16));
    }
    return vaddvq_s32(acc);
}

template <int Bits, int G> void matmulRowsT(const MatmulArgs& a, int64_t r0, int64_t r1) {
    const int64_t groups = a.cols / G;
    float acc[kMaxBatch];
    for (int64_t r = r0; r < r1; ++r) {
        const RowBlocks row = rowBlocks(a.fi, a.w, a.rowBytes, r);
        for (int64_t t = 0; t < a.nTokens; ++t)
            acc[t] = 0.0f;
        for (int64_t gi = 0; gi < groups; ++gi) {
            const size_t off = static_cast<size_t>(gi) * row.stride;
            const float ws = loadScale(row.scale + off);
            for (int64_t t = 0; t < a.nTokens; ++t) {
                const int32_t d = groupDot<Bits, G>(row.values + off, a.xq + t * a.cols + gi * G);
                const float scale = ws * a.xs[t * groups + gi];
                acc[t] = acc[t] + static_cast<float>(d) * scale;
            }
        }
        for (int64_t t = 0; t < a.nTokens; ++t)
            a.y[t * a.yStride + r] = acc[t];
    }
}

void matmulRowsNeon(const MatmulArgs& a, int64_t r0, int64_t r1) {
    withFormat(a.fmt, [&](auto bits, auto g) {
        matmulRowsT<decltype(bits)::value, decltype(g)::value>(a, r0, r1);
    });
}

template <int Bits, int G>
void groupDotsT(const RowBlocks& row, const int8_t* xq, int64_t cols, int32_t* dots) {
    for (int64_t gi = 0; gi < cols / G; ++gi)
        dots[gi] = groupDot<Bits, G>(row.values + gi * row.stride, xq + gi * G);
}

void groupDotsNeon(WeightFormat fmt, const RowBlocks& row, const int8_t* xq, int64_t cols,
                   int32_t* dots) {
    withFormat(fmt, [&](auto bits, auto g) {
        groupDotsT<decltype(bits)::value, decltype(g)::value>(row, xq, cols, dots);
    });
}

const KernelTable kNeon{matmulRowsNeon, groupDotsNeon};

} // namespace

const KernelTable* neonKernels() {
    return &kNeon;
}

} // namespace coli::quant::detail
