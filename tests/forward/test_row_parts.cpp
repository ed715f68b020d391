// The pieces the Fast path's threads compute of one row at decode (forward/fast_rows.h,
// forward_fast.cpp): RMSNorm from its factor (rmsNormFactor) on any column range, and activations
// quantised in parts of whole groups (QuantisedRows::quantiseRowPart), must give the bytes of the
// whole row computed at once. The expected values come from rmsNorm and quantiseRow on the whole
// row; random rows with a few extreme values (zeros, large, tiny). Also dotFastAhead and
// dotFastRows4 against dotFast.
#include "forward/fast_matmul.h"
#include "forward/kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

namespace coli {
namespace {

std::vector<float> randomRow(int n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(n), 0.0f);
    for (float& v : x)
        v = normal(rng);
    x[size_t(seed) % size_t(n)] = 0.0f;
    x[size_t(seed * 7 + 3) % size_t(n)] = 1e4f;
    x[size_t(seed * 13 + 5) % size_t(n)] = 1e-30f;
    return x;
}

TEST(RowParts, NormFromItsFactorEqualsRmsNormOnEveryRange) {
    for (int n : {64, 192, 2048}) {
        const std::vector<float> x = randomRow(n, uint32_t(n)), w = randomRow(n, uint32_t(n + 1));
        std::vector<float> whole(static_cast<size_t>(n), 0.0f),
            parts(static_cast<size_t>(n), -1.0f);
        rmsNorm(x.data(), w.data(), n, 1e-6f, whole.data());
        const float r = rmsNormFactor(x.data(), n, 1e-6f);
        for (int c0 = 0; c0 < n; c0 += 64) // the pieces in reverse order of columns
            for (int i = n - c0 - 64; i < n - c0; ++i)
                parts[size_t(i)] = w[size_t(i)] * (x[size_t(i)] * r);
        EXPECT_EQ(0, std::memcmp(whole.data(), parts.data(), sizeof(float) * size_t(n))) << n;
    }
}

TEST(RowParts, QuantisedInWholeGroupsEqualsTheWholeRow) {
    const int mask = kGroup32 | kGroup64;
    for (int n : {64, 192, 2048}) {
        const std::vector<float> x = randomRow(n, uint32_t(3 * n));
        QuantisedRows whole, parts;
        whole.allocate(2, n);
        parts.allocate(2, n);
        whole.quantiseRow(mask, x.data(), n, 1);
        for (int piece : {64, 128}) {
            if (n % piece) continue;
            parts.allocate(2, n); // zeros again
            for (int c0 = n - piece; c0 >= 0; c0 -= piece)
                parts.quantiseRowPart(mask, x.data(), n, 1, c0, c0 + piece);
            const ActInput a = whole.input(x.data(), 1, 1, n), b = parts.input(x.data(), 1, 1, n);
            for (int g : {32, 64}) {
                const quant::QuantisedActivations &qa = a.forGroup(g), &qb = b.forGroup(g);
                EXPECT_EQ(0, std::memcmp(qa.q, qb.q, size_t(n))) << n << " g" << g;
                EXPECT_EQ(0, std::memcmp(qa.scales, qb.scales, sizeof(float) * size_t(n / g)))
                    << n << " g" << g << " pieces of " << piece;
            }
        }
    }
}

// The router's f32 rows prefetch ahead of their reads (dotFastAhead): the same sums.
TEST(RowParts, DotWithPrefetchEqualsDotFast) {
    for (int n : {7, 64, 2048, 2051}) {
        const std::vector<float> a = randomRow(n, uint32_t(5 * n)), b = randomRow(n, uint32_t(n));
        const float plain = dotFast(a.data(), b.data(), n);
        const float ahead = dotFastAhead(a.data(), b.data(), n);
        EXPECT_EQ(0, std::memcmp(&plain, &ahead, sizeof(float))) << n;
        EXPECT_NE(0.0f, plain) << n;
    }
}

// Decode's f32 rows four at a time (dotFastRows4): each row's sums are dotFast's, bit for bit,
// for lengths with and without a tail past the last multiple of 8, rows in a matrix with padding
// between them (stride > n).
TEST(RowParts, FourRowsAtOnceEqualDotFast) {
    for (int n : {3, 8, 13, 64, 2048, 2051})
        for (uint32_t seed = 0; seed < 8; ++seed) {
            const size_t stride = size_t(n) + 5;
            const std::vector<float> b = randomRow(n, uint32_t(n) + 1 + seed);
            std::vector<float> a(4 * stride);
            for (int r = 0; r < 4; ++r) {
                const std::vector<float> row = randomRow(n, uint32_t(7 * n + r) + 100 * seed);
                std::copy(row.begin(), row.end(), a.begin() + ptrdiff_t(r * stride));
            }
            float four[4];
            dotFastRows4(a.data(), stride, b.data(), n, four);
            for (int r = 0; r < 4; ++r) {
                const float one = dotFast(a.data() + r * stride, b.data(), n);
                EXPECT_EQ(0, std::memcmp(&one, &four[r], sizeof(float))) << n << " row " << r;
                EXPECT_NE(0.0f, one) << n << " row " << r;
            }
        }
}

} // namespace
} // namespace coli
