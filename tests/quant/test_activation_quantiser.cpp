// The activation quantiser (quant/formats.h, quantiseActivationRow) against the formula restated
// here in plain scalar code: per group scale = max|v| / 127, q = clamp(rne(v / scale), -127, 127),
// 0 for an all-zero group. On x86-64 the engine runs an AVX2 copy where the CPU has AVX2, so
// this checks that copy writes the scalar formula's bytes (ties, subnormals, huge values); ctest
// runs it again with COLI_QUANT_PATH=scalar for the baseline copy.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "path_check.h"
#include "quant/formats.h"

using namespace coli::quant;

namespace {

struct Quantised {
    std::vector<int8_t> q;
    std::vector<float> scales;
};

Quantised formula(const float* x, int64_t cols, int g) {
    Quantised r{std::vector<int8_t>(size_t(cols)), std::vector<float>(size_t(cols / g))};
    for (int64_t gi = 0; gi < cols / g; ++gi) {
        float m = 0.0f;
        for (int i = 0; i < g; ++i)
            m = std::max(m, std::fabs(x[gi * g + i]));
        const float scale = m / 127.0f;
        r.scales[size_t(gi)] = scale;
        for (int i = 0; i < g; ++i) {
            float v = 0.0f;
            if (scale != 0.0f) v = std::nearbyint(x[gi * g + i] / scale);
            r.q[size_t(gi * g + i)] = int8_t(int(std::clamp(v, -127.0f, 127.0f)));
        }
    }
    return r;
}

void expectSameBytes(const std::vector<float>& x, int g, const char* what) {
    const int64_t cols = int64_t(x.size());
    Quantised got{std::vector<int8_t>(size_t(cols)), std::vector<float>(size_t(cols / g))};
    ASSERT_TRUE(quantiseActivationRow(x.data(), cols, g, got.q.data(), got.scales.data()).isOk())
        << what;
    const Quantised want = formula(x.data(), cols, g);
    for (size_t i = 0; i < want.scales.size(); ++i)
        ASSERT_EQ(std::bit_cast<uint32_t>(got.scales[i]), std::bit_cast<uint32_t>(want.scales[i]))
            << what << ": scale of group " << i << ", group size " << g;
    for (size_t i = 0; i < want.q.size(); ++i)
        ASSERT_EQ(int(got.q[i]), int(want.q[i])) << what << ": col " << i << ", group size " << g;
}

} // namespace

TEST(ActivationQuantiser, GaussianRowsOfEveryScale) {
    uint32_t seed = 1;
    for (int g : {32, 64})
        for (int64_t cols : {64, 192, 1024, 2048, 4096})
            for (float mul : {1e-30f, 1e-3f, 1.0f, 1e5f, 1e30f}) {
                std::vector<float> x = coli::quant::testing::gaussianValues(size_t(cols), seed++);
                for (float& v : x)
                    v *= mul;
                expectSameBytes(x, g, "gaussian");
            }
}

TEST(ActivationQuantiser, TiesSubnormalsZerosAndExtremes) {
    for (int g : {32, 64}) {
        // max |v| = 127 makes the scale exactly 1, so k + 0.5 are ties: rne gives the even one.
        std::vector<float> ties(size_t(g) * 4);
        for (size_t i = 0; i < ties.size(); ++i)
            ties[i] = (i % size_t(g) == 0) ? 127.0f : float(int(i % 200) - 100) + 0.5f;
        expectSameBytes(ties, g, "ties");
        const float sub = std::numeric_limits<float>::denorm_min();
        std::vector<float> mixed(size_t(g) * 6, 0.0f); // group 0: zeros (and -0)
        mixed[1] = -0.0f;
        for (int i = 0; i < g; ++i) {
            mixed[size_t(g) + i] = sub * float(i - g / 2);      // subnormals only
            mixed[size_t(2 * g) + i] = (i % 2 ? -1.0f : 1.0f) * // the largest finite values
                                       std::numeric_limits<float>::max() / float(i + 1);
            mixed[size_t(3 * g) + i] = i == 5 ? 1e-3f : 1e-40f; // one normal among subnormals
            mixed[size_t(4 * g) + i] = -std::numeric_limits<float>::min() * float(i);
            mixed[size_t(5 * g) + i] = float(i) * 1e-7f + 1.0f;
        }
        expectSameBytes(mixed, g, "edge values");
        int8_t q[64]; // group 0 (zeros): scale 0 and every q 0, not NaN-derived
        float s[1];
        ASSERT_TRUE(quantiseActivationRow(mixed.data(), g, g, q, s).isOk());
        EXPECT_EQ(s[0], 0.0f);
        EXPECT_TRUE(std::all_of(q, q + g, [](int8_t v) { return v == 0; }));
    }
}

TEST(ActivationQuantiser, UnalignedInputsAndOutputs) {
    std::vector<float> x = coli::quant::testing::gaussianValues(1024 + 3, 77);
    for (int off : {1, 2, 3}) {
        std::vector<float> shifted(x.begin() + off, x.begin() + off + 1024);
        expectSameBytes(shifted, 64, "unaligned");
        std::vector<int8_t> q(1024 + 1);
        std::vector<float> s(1024 / 32 + 1);
        ASSERT_TRUE(
            quantiseActivationRow(x.data() + off, 1024, 32, q.data() + 1, s.data() + 1).isOk());
        const Quantised want = formula(x.data() + off, 1024, 32);
        EXPECT_TRUE(std::equal(want.q.begin(), want.q.end(), q.begin() + 1));
        EXPECT_TRUE(std::equal(want.scales.begin(), want.scales.end(), s.begin() + 1));
    }
}

TEST(ActivationQuantiser, NonFiniteNamesTheColumn) {
    for (float bad :
         {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
          -std::numeric_limits<float>::infinity()}) {
        std::vector<float> x(256, 1.0f);
        x[137] = bad;
        std::vector<int8_t> q(256);
        std::vector<float> s(4);
        const coli::Status st = quantiseActivationRow(x.data(), 256, 64, q.data(), s.data());
        EXPECT_EQ(st.code(), coli::ErrorCode::Numeric);
        EXPECT_NE(st.message().find("col 137"), std::string::npos) << st.message();
    }
}
