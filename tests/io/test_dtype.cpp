// f16/bf16 -> f32 conversions against IEEE 754 values written out by hand and, where the compiler
// has _Float16, against the compiler's own conversion for all 65536 bit patterns.
#include "io/dtype.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

using coli::bf16ToF32;
using coli::f16ToF32;

TEST(F16, KnownValues) {
    EXPECT_EQ(f16ToF32(0x3C00), 1.0f);
    EXPECT_EQ(f16ToF32(0xC000), -2.0f);
    EXPECT_EQ(f16ToF32(0x3800), 0.5f);
    EXPECT_EQ(f16ToF32(0x7BFF), 65504.0f);                 // largest finite
    EXPECT_EQ(f16ToF32(0x3555), 0.333251953125f);          // 1365/4096
    EXPECT_EQ(f16ToF32(0x0400), std::ldexp(1.0f, -14));    // smallest normal
    EXPECT_EQ(f16ToF32(0x0001), std::ldexp(1.0f, -24));    // smallest subnormal
    EXPECT_EQ(f16ToF32(0x03FF), std::ldexp(1023.0f, -24)); // largest subnormal
    EXPECT_EQ(f16ToF32(0x8001), -std::ldexp(1.0f, -24));
    EXPECT_EQ(f16ToF32(0x0200), std::ldexp(1.0f, -15));
}

TEST(F16, ZerosInfinitiesNaN) {
    EXPECT_EQ(std::bit_cast<uint32_t>(f16ToF32(0x0000)), 0x00000000u);
    EXPECT_EQ(std::bit_cast<uint32_t>(f16ToF32(0x8000)), 0x80000000u); // -0 keeps its sign
    EXPECT_TRUE(std::isinf(f16ToF32(0x7C00)) && f16ToF32(0x7C00) > 0);
    EXPECT_TRUE(std::isinf(f16ToF32(0xFC00)) && f16ToF32(0xFC00) < 0);
    EXPECT_TRUE(std::isnan(f16ToF32(0x7E00)));
    EXPECT_TRUE(std::isnan(f16ToF32(0x7C01))); // signalling-style NaN stays NaN, not inf
    EXPECT_TRUE(std::isnan(f16ToF32(0xFE00)));
}

TEST(F16, BulkMatchesScalar) {
    std::vector<uint16_t> src(65536);
    for (uint32_t i = 0; i < 65536; ++i)
        src[i] = uint16_t(i);
    std::vector<float> dst(src.size());
    coli::f16ToF32(src.data(), dst.data(), src.size());
    for (uint32_t i = 0; i < 65536; ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(dst[i]), std::bit_cast<uint32_t>(f16ToF32(uint16_t(i))))
            << i;
    }
}

#ifdef __FLT16_MAX__
TEST(F16, AllPatternsMatchCompilerFloat16) {
    for (uint32_t i = 0; i < 65536; ++i) {
        const auto h = std::bit_cast<_Float16>(uint16_t(i));
        const float want = float(h);
        const float got = f16ToF32(uint16_t(i));
        if (std::isnan(want)) {
            ASSERT_TRUE(std::isnan(got)) << std::hex << i;
            ASSERT_EQ(std::signbit(got), std::signbit(want)) << std::hex << i;
        } else {
            ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want)) << std::hex << i;
        }
    }
}
#else
TEST(F16, AllPatternsMatchCompilerFloat16) {
    GTEST_SKIP() << "compiler has no _Float16 to compare against";
}
#endif

TEST(BF16, KnownValues) {
    EXPECT_EQ(bf16ToF32(0x3F80), 1.0f);
    EXPECT_EQ(bf16ToF32(0xC0A0), -5.0f);
    EXPECT_EQ(bf16ToF32(0x3E20), 0.15625f);
    EXPECT_EQ(bf16ToF32(0x0001), std::ldexp(1.0f, -133)); // f32 subnormal
    EXPECT_TRUE(std::isinf(bf16ToF32(0x7F80)));
    EXPECT_TRUE(std::isinf(bf16ToF32(0xFF80)) && bf16ToF32(0xFF80) < 0);
    EXPECT_TRUE(std::isnan(bf16ToF32(0x7FC0)));
    EXPECT_EQ(std::bit_cast<uint32_t>(bf16ToF32(0x8000)), 0x80000000u);
}

TEST(BF16, BulkIsUpperHalf) {
    std::vector<uint16_t> src(65536);
    for (uint32_t i = 0; i < 65536; ++i)
        src[i] = uint16_t(i);
    std::vector<float> dst(src.size());
    coli::bf16ToF32(src.data(), dst.data(), src.size());
    for (uint32_t i = 0; i < 65536; ++i)
        ASSERT_EQ(std::bit_cast<uint32_t>(dst[i]), i << 16) << i;
}
