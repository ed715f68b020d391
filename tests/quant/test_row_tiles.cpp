// The -r8 layouts (quant/formats.h): rows in tiles of eight, the same numbers as the plain
// formats, so every kernel path must give the plain format's bits.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "path_check.h"
#include "quant/matmul.h"

using namespace coli::quant;
using coli::ErrorCode;

namespace {

const WeightFormat kTiled[] = {WeightFormat::Q8_G32_R8, WeightFormat::Q8_G64_R8,
                               WeightFormat::Q4_G32_R8, WeightFormat::Q4_G64_R8};

std::vector<float> gaussian(size_t n, uint32_t seed) {
    return coli::quant::testing::gaussianValues(n, seed);
}

} // namespace

TEST(RowTiles, NamesAndChoice) {
    EXPECT_STREQ(formatInfo(WeightFormat::Q4_G64_R8).name, "int4-g64-r8");
    WeightFormat f;
    ASSERT_TRUE(parseWeightFormat("int8-g32-r8", &f));
    EXPECT_EQ(f, WeightFormat::Q8_G32_R8);
    for (WeightFormat t : kTiled) {
        EXPECT_EQ(formatInfo(t).rowTile, kRowTile);
        EXPECT_EQ(formatInfo(plainFormat(t)).rowTile, 1);
        EXPECT_EQ(tiledFormat(plainFormat(t)), t);
        EXPECT_EQ(rowBytes(t, 256), rowBytes(plainFormat(t), 256));
        EXPECT_EQ(formatForRows(plainFormat(t), 16), t);
        EXPECT_EQ(formatForRows(t, 12), plainFormat(t));
        EXPECT_EQ(formatForRows(t, 0), plainFormat(t));
    }
}

// Addresses by hand for int4-g64-r8, 16 rows x 128 columns (two groups, two tiles): a group of a
// tile is 8 scales (32 bytes) then 8 x 32 value bytes = 288 bytes; a tile is 576 bytes.
TEST(RowTiles, AddressesByHand) {
    const WeightFormat f = WeightFormat::Q4_G64_R8;
    std::vector<uint8_t> w(16 * rowBytes(f, 128));
    ASSERT_EQ(w.size(), 2u * 576u);
    const RowBlocks r3 = rowBlocks(f, w.data(), 128, 3);
    EXPECT_EQ(r3.scale - w.data(), 12);
    EXPECT_EQ(r3.values - w.data(), 32 + 3 * 32);
    EXPECT_EQ(r3.stride, 288u);
    const RowBlocks r9 = rowBlocks(f, w.data(), 128, 9);
    EXPECT_EQ(r9.scale - w.data(), 576 + 4);
    EXPECT_EQ(r9.values - w.data(), 576 + 32 + 32);
    const RowBlocks plain = rowBlocks(WeightFormat::Q4_G64, w.data(), 128, 9);
    EXPECT_EQ(plain.scale - w.data(), 9 * 72);
    EXPECT_EQ(plain.values - w.data(), 9 * 72 + 4);
    EXPECT_EQ(plain.stride, 36u);
}

// The quantiser writes the plain bytes, retiled; values, scales and dequantised rows agree.
TEST(RowTiles, QuantiserWritesThePlainBlocksRetiled) {
    const int64_t rows = 24, cols = 192;
    const std::vector<float> w = gaussian(rows * cols, 21);
    for (WeightFormat t : kTiled) {
        if (cols % formatInfo(t).groupSize != 0) continue;
        const WeightFormat p = plainFormat(t);
        std::vector<uint8_t> qp(rows * rowBytes(p, cols)), qt(qp.size());
        ASSERT_TRUE(quantiseRows(p, w.data(), rows, cols, qp.data()).isOk());
        ASSERT_TRUE(quantiseRows(t, w.data(), rows, cols, qt.data()).isOk());
        EXPECT_EQ(qt, coli::quant::testing::retile(t, qp, rows, cols)) << formatInfo(t).name;
        EXPECT_NE(qt, qp);
        std::vector<uint8_t> back(qt.size());
        convertLayout(t, qt.data(), p, back.data(), rows, cols);
        EXPECT_EQ(back, qp) << formatInfo(t).name << ": tiled -> plain";
        std::vector<float> dp(rows * cols), dt(dp.size()), row(cols);
        dequantiseRows(p, qp.data(), rows, cols, dp.data());
        dequantiseRows(t, qt.data(), rows, cols, dt.data());
        EXPECT_EQ(std::memcmp(dp.data(), dt.data(), dp.size() * 4), 0);
        for (int64_t r : {int64_t{0}, int64_t{7}, int64_t{13}, rows - 1}) {
            dequantiseRow(t, qt.data(), cols, r, row.data());
            EXPECT_EQ(std::memcmp(row.data(), dp.data() + r * cols, cols * 4), 0);
            for (int64_t c : {int64_t{0}, int64_t{63}, cols - 1}) {
                EXPECT_EQ(quantValue(t, qt.data(), cols, r, c),
                          quantValue(p, qp.data(), cols, r, c));
                EXPECT_EQ(blockScale(t, qt.data(), cols, r, c),
                          blockScale(p, qp.data(), cols, r, c));
            }
        }
    }
}

TEST(RowTiles, RejectsRowsThatAreNotWholeTiles) {
    std::vector<float> w(12 * 64, 0.5f);
    std::vector<uint8_t> q(12 * rowBytes(WeightFormat::Q4_G64_R8, 64));
    EXPECT_EQ(quantiseRows(WeightFormat::Q4_G64_R8, w.data(), 12, 64, q.data()).code(),
              ErrorCode::InvalidArgument);
    std::vector<int8_t> xq(64, 1);
    float xs = 1.0f;
    std::vector<float> y(12);
    const QuantisedActivations x{xq.data(), &xs, 1, 64, 64};
    EXPECT_EQ(quantMatmul(WeightFormat::Q4_G64_R8, q.data(), 12, 64, x, y.data()).code(),
              ErrorCode::InvalidArgument);
}

// Every available path: the tiled weights give the plain weights' bits, whole and by ragged row
// ranges (ranges that start inside a tile included), batches of 1, 3 and 17 tokens.
TEST(RowTiles, EveryPathGivesThePlainFormatsBits) {
    int checked = 0;
    for (KernelPath path :
         {KernelPath::Scalar, KernelPath::Avx2, KernelPath::Neon, KernelPath::Avx512Vnni}) {
        if (!kernelPathAvailable(path)) continue;
        for (WeightFormat t : kTiled) {
            for (int64_t n : {int64_t{1}, int64_t{3}, int64_t{17}}) {
                const auto pt = coli::quant::testing::makeProblem(
                    t, 64, 256, n, coli::quant::testing::Fill::RawRandom, 40 + uint32_t(n));
                const auto pp = coli::quant::testing::makeProblem(
                    plainFormat(t), 64, 256, n, coli::quant::testing::Fill::RawRandom,
                    40 + uint32_t(n));
                const QuantisedActivations x{pp.xq.data(), pp.xs.data(), n, 256,
                                             formatInfo(t).groupSize};
                std::vector<float> yp(n * 64), yt(yp.size(), -1.0f), yr(yp.size(), -2.0f);
                ASSERT_TRUE(quantMatmul(pp.fmt, pp.w.data(), 64, 256, x, yp.data(), path).isOk());
                ASSERT_TRUE(quantMatmul(t, pt.w.data(), 64, 256, x, yt.data(), path).isOk());
                EXPECT_EQ(std::memcmp(yp.data(), yt.data(), yp.size() * 4), 0)
                    << kernelPathName(path) << " " << formatInfo(t).name << " n " << n;
                const int64_t bounds[] = {0, 5, 8, 19, 40, 64};
                for (size_t i = 0; i + 1 < std::size(bounds); ++i)
                    ASSERT_TRUE(quantMatmulRows(t, pt.w.data(), 64, 256, x, yr.data(), bounds[i],
                                                bounds[i + 1], path)
                                    .isOk());
                EXPECT_EQ(std::memcmp(yp.data(), yr.data(), yp.size() * 4), 0)
                    << kernelPathName(path) << " " << formatInfo(t).name << " ranges, n " << n;
                ++checked;
            }
        }
    }
    EXPECT_GE(checked, 12);
}
