// quant/shared_math.h: the integer division and rounding equal the CPU's IEEE '/' and
// std::nearbyint, and the shared exp / silu stay within their stated error of the exact
// functions. These are what the GPU tier restates, so a change here is a change of the bits.
#include "quant/shared_math.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <vector>

namespace coli::quant {
namespace {

uint32_t bits(float f) {
    return std::bit_cast<uint32_t>(f);
}
float fromBits(uint32_t u) {
    return std::bit_cast<float>(u);
}
// Distance in ulps between two finite floats of the same sign.
int64_t ulps(float a, float b) {
    return std::llabs(int64_t(bits(a)) - int64_t(bits(b)));
}
bool isNan(uint32_t u) {
    return (u & 0x7fffffffu) > 0x7f800000u;
}

TEST(SharedMath, DivRnBitsEqualsIeeeDivision) {
    std::mt19937 rng(7);
    std::uniform_int_distribution<uint32_t> any;
    std::normal_distribution<float> normal;
    int64_t checked = 0;
    for (int i = 0; i < 2000000; ++i) {
        uint32_t a, b;
        switch (i % 4) {
        case 0:
            a = any(rng), b = any(rng);
            break; // every bit pattern
        case 1:
            a = bits(normal(rng)), b = bits(normal(rng));
            break; // ordinary values
        case 2:
            a = any(rng) & 0x807fffffu, b = bits(normal(rng));
            break; // subnormal / 0
        default:
            a = bits(normal(rng)), b = 0x42fe0000u;
            break; // x / 127 (quantiser)
        }
        const float q = fromBits(a) / fromBits(b);
        const uint32_t got = divRnBits(a, b);
        if (isNan(bits(q))) {
            ASSERT_TRUE(isNan(got)) << std::hex << a << " / " << b;
        } else {
            ASSERT_EQ(got, bits(q)) << std::hex << a << " / " << b;
        }
        ++checked;
    }
    EXPECT_EQ(checked, 2000000);
}

TEST(SharedMath, RneToIntEqualsNearbyint) {
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> u(-300.0f, 300.0f);
    for (int i = 0; i < 1000000; ++i) {
        float x = u(rng);
        if (i % 3 == 0) x = std::round(x * 2.0f) / 2.0f; // exact .5 ties
        ASSERT_EQ(rneToInt(bits(x)), int32_t(std::nearbyint(x))) << x;
    }
    EXPECT_EQ(rneToInt(bits(0.5f)), 0);
    EXPECT_EQ(rneToInt(bits(1.5f)), 2);
    EXPECT_EQ(rneToInt(bits(-2.5f)), -2);
    EXPECT_EQ(rneToInt(bits(1e-40f)), 0); // subnormal
}

TEST(SharedMath, ExpWithinOneUlpOfCorrectlyRounded) {
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(-87.0f, 88.0f);
    int64_t worst = 0;
    for (int i = 0; i < 2000000; ++i) {
        const float x = i % 2 ? u(rng) : u(rng) / 64.0f;
        const float exact = float(std::exp(double(x)));
        worst = std::max(worst, ulps(expShared(x), exact));
    }
    EXPECT_LE(worst, 1);
    EXPECT_EQ(expShared(0.0f), 1.0f);
    EXPECT_EQ(expShared(-100.0f), 0.0f); // below 2^-126: 0 by definition
    EXPECT_TRUE(std::isinf(expShared(100.0f)));
}

TEST(SharedMath, SiluWithinThreeUlpsOfDouble) {
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(-80.0f, 80.0f);
    int64_t worst = 0;
    for (int i = 0; i < 2000000; ++i) {
        const float x = i % 3 == 0 ? u(rng) : u(rng) / 32.0f;
        if (std::fabs(x) < 0x1p-26f) continue;
        const double xd = x;
        const float exact = float(xd / (1.0 + std::exp(-xd)));
        worst = std::max(worst, ulps(siluShared(x), exact));
    }
    EXPECT_LE(worst, 3);
    EXPECT_EQ(bits(siluShared(0.0f)), bits(0.0f));
    EXPECT_EQ(siluShared(-200.0f), -0.0f);
}

// The row form (AVX2 lanes where the CPU has it) gives siluShared(g) * u bit for bit: every 97th
// float bit pattern (both signs, zeros, subnormals, the cut-offs at 2^-25 and 88, infinities)
// and odd row lengths for the scalar tail; NaN inputs give NaN.
TEST(SharedMath, SiluMulRowEqualsScalarLoop) {
    constexpr int64_t kRow = 1003;
    std::vector<float> g(kRow), want(kRow), u(kRow);
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> ud(-4.0f, 4.0f);
    int64_t checked = 0, mismatches = 0;
    uint64_t pattern = 0;
    while (pattern <= 0xffffffffull) {
        const int64_t n = 1 + int64_t(rng() % kRow);
        for (int64_t i = 0; i < n; ++i, pattern += 97) {
            g[i] = fromBits(uint32_t(pattern));
            u[i] = i % 5 == 0 ? 1.0f : ud(rng);
            want[i] = siluShared(g[i]) * u[i];
        }
        siluMulRow(g.data(), u.data(), n);
        for (int64_t i = 0; i < n; ++i, ++checked) {
            const bool same =
                isNan(bits(want[i])) ? isNan(bits(g[i])) : bits(g[i]) == bits(want[i]);
            if (!same && ++mismatches <= 5)
                ADD_FAILURE() << "g = " << fromBits(uint32_t(pattern - 97 * (n - i))) << ": row "
                              << g[i] << ", scalar " << want[i];
        }
    }
    float edge[] = {0x1p-25f, -0x1p-25f, 0x1.fffffep-26f, 88.0f, -88.0f, 88.0001f, -88.0001f, 89.0f,
                    -89.0f,   INFINITY,  -INFINITY,       0.0f,  -0.0f,  1e-40f,   -1e-40f};
    float ones[std::size(edge)];
    float want2[std::size(edge)];
    for (size_t i = 0; i < std::size(edge); ++i) {
        ones[i] = 1.0f;
        want2[i] = siluShared(edge[i]);
    }
    siluMulRow(edge, ones, int64_t(std::size(edge)));
    for (size_t i = 0; i < std::size(edge); ++i)
        EXPECT_EQ(bits(edge[i]), bits(want2[i])) << "edge value " << i;
    EXPECT_GT(checked, int64_t{44000000});
    EXPECT_EQ(mismatches, 0);
}

TEST(SharedMath, GuardPredicates) {
    const uint32_t sub = 0x00000010u, one = bits(1.0f), inf = 0x7f800000u;
    EXPECT_TRUE(guardBadOperand(sub));
    EXPECT_TRUE(guardBadOperand(inf));
    EXPECT_FALSE(guardBadOperand(0u));
    EXPECT_FALSE(guardBadOperand(one));
    EXPECT_TRUE(guardBadMul(bits(1e-30f), bits(1e-30f), bits(1e-30f * 1e-30f))); // underflow
    EXPECT_FALSE(guardBadMul(0u, one, 0u));                                      // exact zero
    EXPECT_TRUE(guardBadMul(bits(1e30f), bits(1e30f), inf));                     // overflow
    EXPECT_FALSE(guardBadAdd(1.0f, -1.0f, 0.0f));                   // exact cancellation
    EXPECT_TRUE(guardBadAdd(1e-38f, -0.9e-38f, 1e-38f - 0.9e-38f)); // subnormal sum
    EXPECT_FALSE(guardBadAdd(1.0f, 2.0f, 3.0f));
}

} // namespace
} // namespace coli::quant
