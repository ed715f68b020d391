// Quantised formats and kernels: layout, quantiser bounds, cross-path bit-exactness, dispatch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "path_check.h"
#include "quant/matmul.h"

using namespace coli::quant;
using coli::ErrorCode;

namespace {

const WeightFormat kFormats[] = {WeightFormat::Q8_G32, WeightFormat::Q8_G64, WeightFormat::Q4_G32,
                                 WeightFormat::Q4_G64};

std::vector<float> gaussian(size_t n, uint32_t seed) {
    return coli::quant::testing::gaussianValues(n, seed);
}

} // namespace

TEST(QuantFormats, BlockSizesAndNames) {
    EXPECT_EQ(formatInfo(WeightFormat::Q8_G32).blockBytes, 36u);
    EXPECT_EQ(formatInfo(WeightFormat::Q8_G64).blockBytes, 68u);
    EXPECT_EQ(formatInfo(WeightFormat::Q4_G32).blockBytes, 20u);
    EXPECT_EQ(formatInfo(WeightFormat::Q4_G64).blockBytes, 36u);
    EXPECT_EQ(rowBytes(WeightFormat::Q4_G64, 2048), 32u * 36u);
    for (WeightFormat f : kFormats) {
        WeightFormat parsed;
        ASSERT_TRUE(parseWeightFormat(formatInfo(f).name, &parsed));
        EXPECT_EQ(parsed, f);
    }
    WeightFormat unused;
    EXPECT_FALSE(parseWeightFormat("int3-g7", &unused));
}

// Hand-computed bytes: scale 0.5 = 0x3F000000; ties round to even (2.5 -> 2, 3.5 -> 4, -0.5 -> 0).
TEST(QuantFormats, Int8LayoutByHand) {
    std::vector<float> w(32, 0.0f);
    w[0] = 63.5f; // amax -> scale 63.5 / 127 = 0.5
    w[1] = 1.25f;
    w[2] = 1.75f;
    w[3] = -0.25f;
    w[4] = -63.5f;
    std::vector<uint8_t> b(rowBytes(WeightFormat::Q8_G32, 32));
    ASSERT_TRUE(quantiseRows(WeightFormat::Q8_G32, w.data(), 1, 32, b.data()).isOk());
    const uint8_t expectScale[4] = {0x00, 0x00, 0x00, 0x3F};
    EXPECT_EQ(std::memcmp(b.data(), expectScale, 4), 0);
    EXPECT_EQ(b[4], 127);
    EXPECT_EQ(b[5], 2);
    EXPECT_EQ(b[6], 4);
    EXPECT_EQ(b[7], 0);
    EXPECT_EQ(b[8], 0x81); // -127
}

TEST(QuantFormats, Int4LayoutByHand) {
    std::vector<float> w(64, 0.0f);
    w[0] = 3.5f;  // amax -> scale 3.5 / 7 = 0.5; q 7
    w[1] = -3.5f; // q -7 = nibble 0x9
    w[2] = 0.75f; // 1.5 -> 2
    w[3] = 0.25f; // 0.5 -> 0
    std::vector<uint8_t> b(rowBytes(WeightFormat::Q4_G64, 64));
    ASSERT_TRUE(quantiseRows(WeightFormat::Q4_G64, w.data(), 1, 64, b.data()).isOk());
    const uint8_t expectScale[4] = {0x00, 0x00, 0x00, 0x3F};
    EXPECT_EQ(std::memcmp(b.data(), expectScale, 4), 0);
    EXPECT_EQ(b[4], 0x97); // low nibble = value 0, high nibble = value 1
    EXPECT_EQ(b[5], 0x02);
    EXPECT_EQ(quantValue(WeightFormat::Q4_G64, b.data(), 64, 0, 1), -7);
    b[4] = 0x08; // -8 in the low nibble is readable even though the quantiser never writes it
    EXPECT_EQ(quantValue(WeightFormat::Q4_G64, b.data(), 64, 0, 0), -8);
}

TEST(QuantFormats, RejectsBadInput) {
    std::vector<float> w(64, 1.0f);
    std::vector<uint8_t> b(1024);
    EXPECT_EQ(quantiseRows(WeightFormat::Q8_G64, w.data(), 1, 48, b.data()).code(),
              ErrorCode::InvalidArgument);
    w[7] = std::nanf("");
    EXPECT_EQ(quantiseRows(WeightFormat::Q8_G32, w.data(), 1, 64, b.data()).code(),
              ErrorCode::Numeric);
    QuantisedActivations qa;
    w[7] = 1.0f;
    EXPECT_EQ(quantiseActivations(w.data(), 1, 64, 32, b.data(), 8, &qa).code(),
              ErrorCode::InvalidArgument);
    EXPECT_EQ(quantiseActivations(w.data(), 1, 64, 16, b.data(), b.size(), &qa).code(),
              ErrorCode::InvalidArgument);
    w[3] = INFINITY;
    EXPECT_EQ(quantiseActivations(w.data(), 1, 64, 32, b.data(), b.size(), &qa).code(),
              ErrorCode::Numeric);
}

// |w - dequant(w)| <= scale / 2 per element (slack of 1e-6 relative for the f32 rounding of the
// division and of scale * q), and the deterministic quantiser gives identical bytes twice.
TEST(QuantFormats, QuantiseDequantiseErrorBound) {
    const int64_t rows = 37, cols = 256;
    const std::vector<float> w = gaussian(rows * cols, 7);
    for (WeightFormat f : kFormats) {
        std::vector<uint8_t> q(rows * rowBytes(f, cols)), q2(q.size());
        ASSERT_TRUE(quantiseRows(f, w.data(), rows, cols, q.data()).isOk());
        ASSERT_TRUE(quantiseRows(f, w.data(), rows, cols, q2.data()).isOk());
        EXPECT_EQ(q, q2);
        std::vector<float> d(rows * cols);
        dequantiseRows(f, q.data(), rows, cols, d.data());
        double worst = 0.0;
        for (int64_t r = 0; r < rows; ++r) {
            for (int64_t c = 0; c < cols; ++c) {
                const float s = blockScale(f, q.data(), cols, r, c);
                const double err = std::fabs(double(w[r * cols + c]) - d[r * cols + c]);
                ASSERT_LE(err, s * 0.5 * (1 + 1e-6))
                    << formatInfo(f).name << " r" << r << " c" << c;
                worst = std::max(worst, err / s);
            }
        }
        std::printf("%s: max |error| / scale = %.6f\n", formatInfo(f).name, worst);
    }
}

TEST(QuantFormats, ActivationErrorBoundAndAnyScratchAlignment) {
    const int64_t n = 3, cols = 192;
    const std::vector<float> x = gaussian(n * cols, 11);
    for (int g : {32, 64}) {
        std::vector<uint8_t> scratch(activationScratchBytes(g, n, cols) + 1);
        QuantisedActivations qa;
        ASSERT_TRUE(
            quantiseActivations(x.data(), n, cols, g, scratch.data() + 1, scratch.size() - 1, &qa)
                .isOk());
        for (int64_t t = 0; t < n; ++t)
            for (int64_t c = 0; c < cols; ++c) {
                const float s = qa.scales[t * (cols / g) + c / g];
                const float v = s * qa.q[t * cols + c];
                EXPECT_LE(std::fabs(v - x[t * cols + c]), s * 0.5f * (1 + 1e-6f));
            }
    }
}

// Cosine similarity of dequantised vs original on N(0,1) matrices (expert-like 2048 x 768).
TEST(QuantQuality, CosineSimilarityGaussian) {
    const int64_t rows = 768, cols = 2048;
    const std::vector<float> w = gaussian(rows * cols, 3);
    for (WeightFormat f : kFormats) {
        std::vector<uint8_t> q(rows * rowBytes(f, cols));
        ASSERT_TRUE(quantiseRows(f, w.data(), rows, cols, q.data()).isOk());
        std::vector<float> d(rows * cols);
        dequantiseRows(f, q.data(), rows, cols, d.data());
        double dot = 0, nw = 0, nd = 0;
        for (size_t i = 0; i < w.size(); ++i) {
            dot += double(w[i]) * d[i];
            nw += double(w[i]) * w[i];
            nd += double(d[i]) * d[i];
        }
        const double cosine = dot / std::sqrt(nw * nd);
        std::printf("cosine(%s vs f32, N(0,1) %lldx%lld) = %.6f\n", formatInfo(f).name,
                    (long long)rows, (long long)cols, cosine);
        EXPECT_GE(cosine, formatInfo(f).bits == 8 ? 0.9999 : 0.99) << formatInfo(f).name;
    }
}

// The scalar definition against an independent double computation on dequantised values.
TEST(QuantKernels, ScalarMatchesDequantisedProduct) {
    for (WeightFormat f : kFormats) {
        const auto p = coli::quant::testing::makeProblem(f, 19, 256, 3,
                                                         coli::quant::testing::Fill::RawRandom, 5);
        const int g = formatInfo(f).groupSize;
        const QuantisedActivations x{p.xq.data(), p.xs.data(), p.nTokens, p.cols, g};
        std::vector<float> y(p.nTokens * p.rows);
        ASSERT_TRUE(
            quantMatmul(f, p.w.data(), p.rows, p.cols, x, y.data(), KernelPath::Scalar).isOk());
        std::vector<float> wd(p.rows * p.cols);
        dequantiseRows(f, p.w.data(), p.rows, p.cols, wd.data());
        for (int64_t t = 0; t < p.nTokens; ++t)
            for (int64_t r = 0; r < p.rows; ++r) {
                double ref = 0, mag = 0;
                for (int64_t c = 0; c < p.cols; ++c) {
                    const double term = double(wd[r * p.cols + c]) * p.xq[t * p.cols + c] *
                                        p.xs[t * (p.cols / g) + c / g];
                    ref += term;
                    mag += std::fabs(term);
                }
                EXPECT_NEAR(y[t * p.rows + r], ref, 1e-5 * mag + 1e-30) << formatInfo(f).name;
            }
    }
}

// Integer dots at the extremes, values from arithmetic: 64 * (-128 * -128) = 1048576 and so on.
TEST(QuantKernels, ExtremeGroupDotsExact) {
    for (KernelPath path :
         {KernelPath::Scalar, KernelPath::Avx2, KernelPath::Neon, KernelPath::Avx512Vnni}) {
        if (!kernelPathAvailable(path)) continue;
        for (WeightFormat f : kFormats) {
            const FormatInfo fi = formatInfo(f);
            const int g = fi.groupSize;
            for (int wv : {fi.bits == 8 ? -128 : -8, fi.bits == 8 ? 127 : 7}) {
                for (int xv : {-128, 127}) {
                    std::vector<uint8_t> w(rowBytes(f, g));
                    const float one = 1.0f;
                    std::memcpy(w.data(), &one, 4);
                    const uint8_t nib = static_cast<uint8_t>(wv & 15);
                    std::memset(w.data() + 4,
                                fi.bits == 8 ? static_cast<uint8_t>(wv) : (nib | nib << 4),
                                fi.blockBytes - 4);
                    std::vector<int8_t> xq(g, static_cast<int8_t>(xv));
                    const float xs = 1.0f;
                    const QuantisedActivations x{xq.data(), &xs, 1, g, g};
                    int32_t dot = 0;
                    float y = 0;
                    ASSERT_TRUE(quantGroupDots(f, w.data(), 1, g, x, &dot, path).isOk());
                    ASSERT_TRUE(quantMatmul(f, w.data(), 1, g, x, &y, path).isOk());
                    EXPECT_EQ(dot, g * wv * xv) << kernelPathName(path) << " " << fi.name;
                    EXPECT_EQ(y, static_cast<float>(g * wv * xv));
                }
            }
        }
    }
}

TEST(QuantDispatch, ReportsAndPrefersTheWidestX86Path) {
    const KernelPath sel = selectedKernelPath();
    std::printf("selected kernel path: %s (available: scalar=%d avx2=%d neon=%d avx512vnni=%d)\n",
                kernelPathName(sel), kernelPathAvailable(KernelPath::Scalar),
                kernelPathAvailable(KernelPath::Avx2), kernelPathAvailable(KernelPath::Neon),
                kernelPathAvailable(KernelPath::Avx512Vnni));
    EXPECT_TRUE(kernelPathAvailable(KernelPath::Scalar));
    if (std::getenv("COLI_QUANT_PATH") != nullptr)
        GTEST_SKIP() << "COLI_QUANT_PATH overrides the choice";
#if defined(__x86_64__)
    if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")))
        GTEST_SKIP() << "this x86-64 CPU lacks AVX2+FMA";
    EXPECT_TRUE(kernelPathAvailable(KernelPath::Avx2));
    const bool vnni = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
    EXPECT_EQ(kernelPathAvailable(KernelPath::Avx512Vnni), vnni);
    EXPECT_EQ(sel, vnni ? KernelPath::Avx512Vnni : KernelPath::Avx2);
#else
    GTEST_SKIP() << "not x86-64: the NEON path is checked by the cross test under qemu";
#endif
}

// The AVX-512 VNNI path on its own, so that a CPU without it shows a skip with the reason.
TEST(QuantKernels, Avx512VnniBitIdenticalToScalar) {
    if (!kernelPathAvailable(KernelPath::Avx512Vnni))
        GTEST_SKIP() << "this CPU lacks AVX-512 F/BW/VL/VNNI (or the build is not x86-64)";
    std::vector<std::string> failures;
    const int cases = coli::quant::testing::runSweep(KernelPath::Avx512Vnni, &failures);
    std::printf("avx512vnni vs scalar: %d cases, %zu mismatches\n", cases, failures.size());
    EXPECT_GT(cases, 0);
    for (size_t i = 0; i < failures.size() && i < 10; ++i)
        ADD_FAILURE() << failures[i];
}

TEST(QuantKernels, EveryPathBitIdenticalToScalar) {
    int paths = 0;
    for (KernelPath path : {KernelPath::Avx2, KernelPath::Neon, KernelPath::Avx512Vnni}) {
        if (!kernelPathAvailable(path)) continue;
        ++paths;
        std::vector<std::string> failures;
        const int cases = coli::quant::testing::runSweep(path, &failures);
        std::printf("%s vs scalar: %d cases, %zu mismatches\n", kernelPathName(path), cases,
                    failures.size());
        for (size_t i = 0; i < failures.size() && i < 10; ++i)
            ADD_FAILURE() << failures[i];
    }
    if (paths == 0) GTEST_SKIP() << "no SIMD path available on this CPU/build";
}

TEST(QuantKernels, ResultIndependentOfThreadCount) {
#ifndef _OPENMP
    GTEST_SKIP() << "built without OpenMP";
#else
    const auto p = coli::quant::testing::makeProblem(WeightFormat::Q4_G64, 768, 2048, 2,
                                                     coli::quant::testing::Fill::Gaussian, 9);
    const QuantisedActivations x{p.xq.data(), p.xs.data(), p.nTokens, p.cols, 64};
    std::vector<float> y1(p.nTokens * p.rows), y2(y1.size());
    const int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    ASSERT_TRUE(quantMatmul(p.fmt, p.w.data(), p.rows, p.cols, x, y1.data()).isOk());
    omp_set_num_threads(2);
    ASSERT_TRUE(quantMatmul(p.fmt, p.w.data(), p.rows, p.cols, x, y2.data()).isOk());
    omp_set_num_threads(saved);
    EXPECT_EQ(std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float)), 0);
#endif
}

TEST(QuantKernels, RejectsMismatchedShapes) {
    std::vector<uint8_t> w(rowBytes(WeightFormat::Q8_G32, 64));
    std::vector<int8_t> xq(64);
    float xs[2] = {1, 1}, y = 0;
    const QuantisedActivations x{xq.data(), xs, 1, 64, 64};
    EXPECT_EQ(quantMatmul(WeightFormat::Q8_G32, w.data(), 1, 64, x, &y, KernelPath::Scalar).code(),
              ErrorCode::InvalidArgument);
#if !defined(__aarch64__)
    const QuantisedActivations x32{xq.data(), xs, 1, 64, 32};
    EXPECT_EQ(quantMatmul(WeightFormat::Q8_G32, w.data(), 1, 64, x32, &y, KernelPath::Neon).code(),
              ErrorCode::Unsupported);
#endif
}

TEST(QuantKernels, RowRangesEqualWholeMatmul) {
    for (WeightFormat f : kFormats) {
        const auto p = coli::quant::testing::makeProblem(f, 37, 128, 3,
                                                         coli::quant::testing::Fill::RawRandom, 13);
        const QuantisedActivations x{p.xq.data(), p.xs.data(), p.nTokens, p.cols,
                                     formatInfo(f).groupSize};
        std::vector<float> whole(p.nTokens * p.rows), parts(whole.size(), -1.0f);
        ASSERT_TRUE(quantMatmul(f, p.w.data(), p.rows, p.cols, x, whole.data()).isOk());
        const int64_t bounds[] = {0, 5, 6, 19, 33, 37}; // ragged ranges, one of a single row
        for (size_t i = 0; i + 1 < std::size(bounds); ++i)
            ASSERT_TRUE(quantMatmulRows(f, p.w.data(), p.rows, p.cols, x, parts.data(), bounds[i],
                                        bounds[i + 1])
                            .isOk());
        EXPECT_EQ(std::memcmp(whole.data(), parts.data(), whole.size() * sizeof(float)), 0)
            << formatInfo(f).name;
        EXPECT_EQ(quantMatmulRows(f, p.w.data(), p.rows, p.cols, x, parts.data(), 5, 38).code(),
                  ErrorCode::InvalidArgument);
    }
}
