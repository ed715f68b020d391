// Routed experts on the Vulkan device (gpu/expert_runner.h) against the CPU's (gpu/cpu_expert.h),
// bit for bit (the float32 bits of every output value): every weight format the tier takes (gate
// and up in one format, down in the same or another one), the shipped default model's shape and
// four others (two that only groups of 32 divide), 1, 3 and 16 tokens per expert with several
// experts per batch and the jobs listed in a shuffled order, weights quantised from Gaussian data
// and raw random bytes (every int8 and every nibble, -128 and -8 included), zero tokens and zero
// groups among the inputs. The CPU reference itself is checked on a few jobs against a
// restatement here (scalar quantMatmul, siluShared, quantiseActivationRow). Then: a layer-sized
// batch; the guard (Gaussian data gives no flags, a huge or subnormal input scale flags its jobs);
// jobs spread over two weights buffers come back in the caller's order; a batch's device time
// from timestamps; the test-only reversed matvec is caught; argument errors.
#include "gpu/cpu_expert.h"
#include "gpu/expert_runner.h"
#include "gpu_test_device.h"
#include "quant/formats.h"
#include "quant/matmul.h"
#include "quant/shared_math.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace coli::gpu {
namespace {

using quant::WeightFormat;

const char* fmtName(WeightFormat f) {
    switch (f) {
    case WeightFormat::Q8_G32:
        return "Q8_G32";
    case WeightFormat::Q8_G64:
        return "Q8_G64";
    case WeightFormat::Q4_G32:
        return "Q4_G32";
    case WeightFormat::Q4_G64:
        return "Q4_G64";
    case WeightFormat::Q8_G32_R8:
        return "Q8_G32_R8";
    case WeightFormat::Q8_G64_R8:
        return "Q8_G64_R8";
    case WeightFormat::Q4_G32_R8:
        return "Q4_G32_R8";
    case WeightFormat::Q4_G64_R8:
        return "Q4_G64_R8";
    }
    return "?";
}

enum class Fill { Gaussian, RawBytes };

struct Expert {
    std::vector<uint8_t> gate, up, down;
};

std::vector<float> gaussian(size_t n, float sd, std::mt19937& rng) {
    std::normal_distribution<float> nd(0.0f, sd);
    std::vector<float> v(n);
    for (float& x : v)
        x = nd(rng);
    return v;
}

// A [rows, cols] matrix quantised (quant::quantiseRows) from N(0, 1/cols) values: a row's product
// with a unit-Gaussian input is of order 1.
std::vector<uint8_t> gaussianMatrix(WeightFormat fmt, int rows, int cols, std::mt19937& rng) {
    const std::vector<float> w =
        gaussian(size_t(rows) * size_t(cols), 1.0f / std::sqrt(float(cols)), rng);
    std::vector<uint8_t> out(size_t(rows) * quant::rowBytes(fmt, cols));
    const Status s = quant::quantiseRows(fmt, w.data(), rows, cols, out.data());
    EXPECT_TRUE(s.isOk()) << s.toString();
    return out;
}

// A [rows, cols] matrix of random bytes (every int8 value, every nibble -8..7), then each group's
// scale overwritten with a sensible one: |scale| in [0.5, 1.5] / (sd(q) * sqrt(cols)), so a row's
// product with a unit-Gaussian input is of order 1; a quarter of them negative, a few zero.
std::vector<uint8_t> rawMatrix(WeightFormat fmt, int rows, int cols, std::mt19937& rng) {
    const quant::FormatInfo fi = quant::formatInfo(fmt);
    std::vector<uint8_t> out(size_t(rows) * quant::rowBytes(fmt, cols));
    for (uint8_t& b : out)
        b = uint8_t(rng());
    const float qsd = fi.bits == 8 ? 73.9f : 4.61f; // sd of a uniform int8 / int4
    std::uniform_real_distribution<float> mag(0.5f, 1.5f);
    for (int r = 0; r < rows; ++r) {
        const quant::RowBlocks rb = quant::rowBlocks(fmt, out.data(), cols, r);
        for (int g = 0; g < cols / fi.groupSize; ++g) {
            float s = mag(rng) / (qsd * std::sqrt(float(cols)));
            const uint32_t u = rng();
            if (u % 4 == 0) s = -s;
            if (u % 61 == 0) s = 0.0f;
            const size_t at = size_t(rb.scale - out.data()) + size_t(g) * rb.stride;
            std::memcpy(out.data() + at, &s, 4);
        }
    }
    return out;
}

// The smallest and largest integer value stored in matrix w (quant::quantValue).
std::pair<int, int> valueRange(WeightFormat fmt, const std::vector<uint8_t>& w, int rows,
                               int cols) {
    int lo = 1000, hi = -1000;
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) {
            const int v = quant::quantValue(fmt, w.data(), cols, r, c);
            lo = std::min(lo, v);
            hi = std::max(hi, v);
        }
    return {lo, hi};
}

Expert makeExpert(const ExpertShape& s, Fill fill, std::mt19937& rng) {
    auto matrix = [&](WeightFormat fmt, int rows, int cols) {
        return fill == Fill::Gaussian ? gaussianMatrix(fmt, rows, cols, rng)
                                      : rawMatrix(fmt, rows, cols, rng);
    };
    Expert e;
    e.gate = matrix(s.gateUp, s.ffn, s.dModel);
    e.up = matrix(s.gateUp, s.ffn, s.dModel);
    e.down = matrix(s.down, s.dModel, s.ffn);
    return e;
}

// Copies e's three matrices into `slot`.
Status upload(ExpertRunner& r, int slot, const Expert& e) {
    return r.upload(slot, e.gate.data(), e.up.data(), e.down.data());
}

// Input rows x [rows, cols] of N(0, f^2) values (f cycling through 0.25, 1, 4; rows 6 mod 8 with
// their first group zero, rows 7 mod 8 all zero), quantised with quant::quantiseActivationRow in
// groups of g.
struct Inputs {
    int rows = 0, cols = 0, g = 0;
    std::vector<int8_t> xq;
    std::vector<float> xs;
    const int8_t* q(int r) const { return xq.data() + size_t(r) * size_t(cols); }
    const float* s(int r) const { return xs.data() + size_t(r) * size_t(cols / g); }
};

Inputs makeInputs(int rows, int cols, int g, std::mt19937& rng) {
    Inputs in{rows, cols, g, std::vector<int8_t>(size_t(rows) * size_t(cols)),
              std::vector<float>(size_t(rows) * size_t(cols / g))};
    static constexpr float kScale[] = {0.25f, 1.0f, 4.0f};
    for (int r = 0; r < rows; ++r) {
        std::vector<float> x = gaussian(size_t(cols), kScale[r % 3], rng);
        if (r % 8 == 6) std::fill(x.begin(), x.begin() + g, 0.0f); // a zero group (scale 0)
        if (r % 8 == 7) std::fill(x.begin(), x.end(), 0.0f);       // a zero token: y = +0
        const Status st =
            quant::quantiseActivationRow(x.data(), cols, g, in.xq.data() + size_t(r) * size_t(cols),
                                         in.xs.data() + size_t(r) * size_t(cols / g));
        EXPECT_TRUE(st.isOk()) << st.toString();
    }
    return in;
}

// The expert restated from the quantised kernels' scalar path: gate and up, act = siluShared(gate)
// * up, act quantised in down's groups, down.
Status restatedExpert(const ExpertShape& s, const Expert& e, const int8_t* xq, const float* xs,
                      float* y) {
    const int gG = quant::formatInfo(s.gateUp).groupSize;
    const int dG = quant::formatInfo(s.down).groupSize;
    const quant::QuantisedActivations x{xq, xs, 1, s.dModel, gG};
    std::vector<float> gate(size_t(s.ffn)), up(size_t(s.ffn)), act(size_t(s.ffn));
    COLI_RETURN_IF_ERROR(quant::quantMatmul(s.gateUp, e.gate.data(), s.ffn, s.dModel, x,
                                            gate.data(), quant::KernelPath::Scalar));
    COLI_RETURN_IF_ERROR(quant::quantMatmul(s.gateUp, e.up.data(), s.ffn, s.dModel, x, up.data(),
                                            quant::KernelPath::Scalar));
    for (size_t i = 0; i < act.size(); ++i)
        act[i] = quant::siluShared(gate[i]) * up[i];
    std::vector<int8_t> hq(size_t(s.ffn));
    std::vector<float> hs(size_t(s.ffn / dG));
    COLI_RETURN_IF_ERROR(quant::quantiseActivationRow(act.data(), s.ffn, dG, hq.data(), hs.data()));
    const quant::QuantisedActivations h{hq.data(), hs.data(), 1, s.ffn, dG};
    return quant::quantMatmul(s.down, e.down.data(), s.dModel, s.ffn, h, y,
                              quant::KernelPath::Scalar);
}

// "first difference at value 17: gpu 0x3f800000 (1), cpu 0x3f800001 (1.0000001)" or "".
std::string firstDifference(const float* gpu, const float* cpu, int n) {
    for (int i = 0; i < n; ++i) {
        const uint32_t a = std::bit_cast<uint32_t>(gpu[i]), b = std::bit_cast<uint32_t>(cpu[i]);
        if (a != b) {
            char buf[160];
            std::snprintf(buf, sizeof buf,
                          "first difference at value %d: gpu 0x%08x (%.9g), cpu "
                          "0x%08x (%.9g)",
                          i, a, double(gpu[i]), b, double(cpu[i]));
            return buf;
        }
    }
    return {};
}

struct Tally {
    int jobs = 0;
    int64_t compared = 0; // values compared bit for bit
    int flagged = 0;      // jobs the guard flagged (not compared)
    int restated = 0;     // jobs whose CPU reference was checked against the restatement
    int differing = 0;    // unflagged jobs whose output differs (counted, not asserted, when
                          // runAndCompare's `expectIdentical` is false)
};

// Submits `jobs` (slot -> experts[slot]) on `runner`, waits, and compares every unflagged job's
// output with cpuExpert's, bit for bit; the first `restate` jobs' CPU references are also checked
// against restatedExpert. Returns the flags (job order).
std::vector<uint32_t> runAndCompare(ExpertRunner& runner, const std::vector<const Expert*>& experts,
                                    const std::vector<GpuJob>& jobs, const Inputs& in, int restate,
                                    const std::string& what, Tally* tally,
                                    bool expectIdentical = true) {
    const ExpertShape& s = runner.shape();
    const size_t d = size_t(s.dModel);
    std::vector<float> y(jobs.size() * d, std::nanf(""));
    std::vector<uint32_t> flags(jobs.size(), 0xdeadbeefu);
    const Status sub = runner.submit(jobs, in.xq.data(), in.xs.data(), in.rows);
    EXPECT_TRUE(sub.isOk()) << what << ": " << sub.toString();
    if (!sub.isOk()) return flags;
    const Status w = runner.wait(y.data(), flags.data());
    EXPECT_TRUE(w.isOk()) << what << ": " << w.toString();
    std::vector<float> want(d), again(d);
    for (size_t k = 0; k < jobs.size(); ++k) {
        const GpuJob& j = jobs[k];
        const Expert& e = *experts[size_t(j.slot)];
        const Status c = cpuExpert(s, e.gate.data(), e.up.data(), e.down.data(), in.q(j.inputRow),
                                   in.s(j.inputRow), want.data());
        ++tally->jobs;
        if (int(k) < restate && c.isOk()) {
            const Status r = restatedExpert(s, e, in.q(j.inputRow), in.s(j.inputRow), again.data());
            EXPECT_TRUE(r.isOk()) << what << ": " << r.toString();
            EXPECT_EQ(std::memcmp(want.data(), again.data(), d * 4), 0)
                << what << ", job " << k << ": cpuExpert differs from the restatement: "
                << firstDifference(want.data(), again.data(), s.dModel);
            ++tally->restated;
        }
        if (flags[k] != 0) {
            ++tally->flagged;
            continue;
        }
        EXPECT_TRUE(c.isOk()) << what << ", job " << k
                              << ": unflagged but the CPU reports: " << c.toString();
        const bool same = std::memcmp(y.data() + k * d, want.data(), d * 4) == 0;
        if (expectIdentical) {
            EXPECT_TRUE(same) << what << ", job " << k << " (slot " << j.slot << ", row "
                              << j.inputRow
                              << "): " << firstDifference(y.data() + k * d, want.data(), s.dModel);
        }
        tally->differing += same ? 0 : 1;
        tally->compared += int64_t(d);
    }
    return flags;
}

// Jobs: expert e (in slot slotOf[e]) on tokensPerExpert[e] distinct input rows, shuffled.
std::vector<GpuJob> makeJobs(const std::vector<int>& slotOf,
                             const std::vector<int>& tokensPerExpert, int nRows,
                             std::mt19937& rng) {
    std::vector<GpuJob> jobs;
    std::vector<int> rows(static_cast<size_t>(nRows));
    for (int r = 0; r < nRows; ++r)
        rows[size_t(r)] = r;
    for (size_t e = 0; e < slotOf.size(); ++e) {
        std::shuffle(rows.begin(), rows.end(), rng);
        for (int t = 0; t < tokensPerExpert[e]; ++t)
            jobs.push_back({slotOf[e], rows[size_t(t)]});
    }
    std::shuffle(jobs.begin(), jobs.end(), rng);
    return jobs;
}

std::string counts(const std::vector<int>& v) {
    std::string s;
    for (int x : v) {
        if (!s.empty()) s += ',';
        s += std::to_string(x);
    }
    return s;
}

double msSince(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

struct FormatPair {
    WeightFormat gateUp, down;
};

void PrintTo(const FormatPair& p, std::ostream* os) {
    *os << fmtName(p.gateUp) << "/" << fmtName(p.down);
}

class GpuExpertFormats : public ::testing::TestWithParam<FormatPair> {};

// For each shape and fill: four experts in odd slots (the even ones never written), two batches
// on one runner (tokens per expert 1,3,16,3 then, after one slot is replaced by a new expert,
// 16,1,3,1), jobs shuffled; every value bit-identical, no flags on Gaussian data.
TEST_P(GpuExpertFormats, BitIdenticalToTheCpu) {
    COLI_GPU_CONTEXT_OR_SKIP(ctx);
    const FormatPair fp = GetParam();
    uint32_t seed = 1000 * uint32_t(fp.gateUp) + 10 * uint32_t(fp.down);
    const int gG = quant::formatInfo(fp.gateUp).groupSize;
    const int dG = quant::formatInfo(fp.down).groupSize;
    // The default model's 192x192, two other multiples of 64, and two shapes only the groups of
    // 32 divide (d_model a multiple of the gate's group, ffn of down's: expert_runner.h).
    for (const auto& [dModel, ffn] :
         {std::pair{192, 192}, {128, 256}, {256, 64}, {96, 160}, {160, 128}}) {
        if (dModel % gG || ffn % dG) continue;
        for (Fill fill : {Fill::Gaussian, Fill::RawBytes}) {
            const auto t0 = std::chrono::steady_clock::now();
            std::mt19937 rng(++seed);
            const ExpertShape shape{dModel, ffn, fp.gateUp, fp.down};
            const std::string what = std::string(fmtName(fp.gateUp)) + "/" + fmtName(fp.down) +
                                     " " + std::to_string(dModel) + "x" + std::to_string(ffn) +
                                     (fill == Fill::Gaussian ? " gaussian" : " raw-bytes");
            const int nExperts = 4, nRows = 16, slots = 2 * nExperts + 1, maxJobs = 32;
            Result<std::unique_ptr<ExpertRunner>> runner =
                ExpertRunner::create(*ctx, shape, slots, maxJobs);
            ASSERT_TRUE(runner.isOk()) << what << ": " << runner.status().toString();
            std::vector<Expert> store;
            store.reserve(nExperts + 1);
            std::vector<const Expert*> bySlot(size_t(slots), nullptr);
            std::vector<int> slotOf;
            for (int e = 0; e < nExperts; ++e) {
                store.push_back(makeExpert(shape, fill, rng));
                const int slot = 2 * e + 1;
                slotOf.push_back(slot);
                bySlot[size_t(slot)] = &store.back();
                const Status up = upload(**runner, slot, store.back());
                ASSERT_TRUE(up.isOk()) << what << ": " << up.toString();
            }
            if (fill == Fill::RawBytes) {
                // The raw bytes hold every integer value, the extremes -128 / -8 included.
                const int qmax = quant::formatInfo(fp.gateUp).bits == 8 ? 127 : 7;
                const auto [lo, hi] = valueRange(fp.gateUp, store[0].gate, ffn, dModel);
                EXPECT_EQ(lo, -qmax - 1) << what;
                EXPECT_EQ(hi, qmax) << what;
                const int dmax = quant::formatInfo(fp.down).bits == 8 ? 127 : 7;
                const auto [dlo, dhi] = valueRange(fp.down, store[0].down, dModel, ffn);
                EXPECT_EQ(dlo, -dmax - 1) << what;
                EXPECT_EQ(dhi, dmax) << what;
            }
            Tally tally;
            const std::vector<int> first = {1, 3, 16, 3}, second = {16, 1, 3, 1};
            {
                const Inputs in = makeInputs(nRows, dModel, gG, rng);
                const std::vector<GpuJob> jobs = makeJobs(slotOf, first, nRows, rng);
                runAndCompare(**runner, bySlot, jobs, in, 2, what + " batch 1", &tally);
            }
            {
                // Slot 3 gets a new expert; the same runner computes a second batch.
                store.push_back(makeExpert(shape, fill, rng));
                bySlot[3] = &store.back();
                const Status up = upload(**runner, 3, store.back());
                ASSERT_TRUE(up.isOk()) << what << ": " << up.toString();
                const Inputs in = makeInputs(nRows, dModel, gG, rng);
                const std::vector<GpuJob> jobs = makeJobs(slotOf, second, nRows, rng);
                runAndCompare(**runner, bySlot, jobs, in, 1, what + " batch 2", &tally);
            }
            std::printf("[ gpu experts ] %-30s tokens/expert %s | %s: %d jobs, %lld values "
                        "bit-identical, %d flagged, CPU reference = restatement on %d jobs, "
                        "%.0f ms\n",
                        what.c_str(), counts(first).c_str(), counts(second).c_str(), tally.jobs,
                        static_cast<long long>(tally.compared), tally.flagged, tally.restated,
                        msSince(t0));
            if (fill == Fill::Gaussian) {
                EXPECT_EQ(tally.flagged, 0) << what;
            }
            int total = 0;
            for (int c : first)
                total += c;
            for (int c : second)
                total += c;
            EXPECT_EQ(tally.jobs, total) << what;
            // Raw bytes with sensible scales stay far from overflow and underflow too.
            EXPECT_LE(tally.flagged, 2) << what;
        }
    }
}

std::string pairName(const ::testing::TestParamInfo<FormatPair>& info) {
    return std::string(fmtName(info.param.gateUp)) + "_down_" + fmtName(info.param.down);
}

INSTANTIATE_TEST_SUITE_P(
    AllFormats, GpuExpertFormats,
    ::testing::Values(FormatPair{WeightFormat::Q4_G64, WeightFormat::Q4_G64},
                      FormatPair{WeightFormat::Q8_G64, WeightFormat::Q8_G64},
                      FormatPair{WeightFormat::Q4_G32, WeightFormat::Q4_G32},
                      FormatPair{WeightFormat::Q8_G32, WeightFormat::Q8_G32},
                      FormatPair{WeightFormat::Q4_G64_R8, WeightFormat::Q4_G64_R8},
                      FormatPair{WeightFormat::Q8_G64_R8, WeightFormat::Q8_G64_R8},
                      FormatPair{WeightFormat::Q4_G32_R8, WeightFormat::Q4_G32_R8},
                      FormatPair{WeightFormat::Q8_G32_R8, WeightFormat::Q8_G32_R8},
                      // down in another format (and group size) than gate/up
                      FormatPair{WeightFormat::Q4_G64, WeightFormat::Q8_G32},
                      FormatPair{WeightFormat::Q8_G32_R8, WeightFormat::Q4_G64},
                      FormatPair{WeightFormat::Q4_G32, WeightFormat::Q8_G64_R8}),
    pairName);

// The guard: a job whose input has a huge group scale (1e35: gate and up overflow in SwiGLU) or a
// subnormal one (1e-39: the scale product underflows) is flagged; every other job of the batch is
// unflagged and bit-identical. The CPU reports the huge one's non-finite act as Numeric.
TEST(GpuExperts, HugeAndSubnormalInputScalesAreFlagged) {
    COLI_GPU_CONTEXT_OR_SKIP(ctx);
    std::mt19937 rng(77);
    const ExpertShape shape{192, 192, WeightFormat::Q4_G64, WeightFormat::Q8_G32};
    Result<std::unique_ptr<ExpertRunner>> runner = ExpertRunner::create(*ctx, shape, 2, 16);
    ASSERT_TRUE(runner.isOk()) << runner.status().toString();
    std::vector<Expert> experts = {makeExpert(shape, Fill::Gaussian, rng),
                                   makeExpert(shape, Fill::Gaussian, rng)};
    const std::vector<const Expert*> bySlot = {&experts[0], &experts[1]};
    for (int slot = 0; slot < 2; ++slot)
        ASSERT_TRUE(upload(**runner, slot, experts[size_t(slot)]).isOk());
    const int nRows = 6, hugeRow = 1, tinyRow = 4;
    Inputs in = makeInputs(nRows, shape.dModel, 64, rng);
    in.xs[size_t(hugeRow) * 3 + 0] = 1e35f;
    in.xs[size_t(tinyRow) * 3 + 1] = 1e-39f;
    ASSERT_EQ(std::fpclassify(in.xs[size_t(tinyRow) * 3 + 1]), FP_SUBNORMAL);
    std::vector<GpuJob> jobs;
    for (int slot = 0; slot < 2; ++slot)
        for (int r = 0; r < nRows; ++r)
            jobs.push_back({slot, r});
    std::shuffle(jobs.begin(), jobs.end(), rng);
    Tally tally;
    const std::vector<uint32_t> flags =
        runAndCompare(**runner, bySlot, jobs, in, 0, "guard", &tally);
    for (size_t k = 0; k < jobs.size(); ++k) {
        const bool extreme = jobs[k].inputRow == hugeRow || jobs[k].inputRow == tinyRow;
        EXPECT_EQ(flags[k] != 0, extreme) << "job " << k << " (slot " << jobs[k].slot << ", row "
                                          << jobs[k].inputRow << "): flags " << flags[k];
    }
    std::vector<float> y(size_t(shape.dModel));
    const Status huge = cpuExpert(shape, experts[0].gate.data(), experts[0].up.data(),
                                  experts[0].down.data(), in.q(hugeRow), in.s(hugeRow), y.data());
    EXPECT_EQ(huge.code(), ErrorCode::Numeric) << huge.toString();
    std::printf("[ gpu experts ] guard: %d jobs, input scale 1e35 on row %d and 1e-39 on row %d: "
                "%d flagged, %lld values of the others bit-identical\n",
                tally.jobs, hugeRow, tinyRow, tally.flagged,
                static_cast<long long>(tally.compared));
    EXPECT_EQ(tally.flagged, 4);
}

// Enough slots that the runner needs two weights buffers (each at most min(1 GiB,
// maxStorageBufferRange) bytes): jobs on experts in both, interleaved, come back in the caller's
// order.
TEST(GpuExperts, JobsOnTwoWeightsBuffersComeBackInTheCallersOrder) {
    COLI_GPU_CONTEXT_OR_SKIP(ctx);
    const auto t0 = std::chrono::steady_clock::now();
    const ExpertShape shape{1024, 1024, WeightFormat::Q8_G64, WeightFormat::Q4_G32_R8};
    const uint64_t limit = std::min<uint64_t>(1ull << 30, ctx->device().maxStorageBufferRange);
    const int perBuffer = int(std::max<uint64_t>(1, limit / shape.expertBytes()));
    const int slots = perBuffer + 1;
    if (uint64_t(slots) * shape.expertBytes() > (768ull << 20))
        GTEST_SKIP() << "two weights buffers would take "
                     << (uint64_t(slots) * shape.expertBytes() >> 20) << " MiB on this device";
    Result<std::unique_ptr<ExpertRunner>> runner = ExpertRunner::create(*ctx, shape, slots, 12);
    ASSERT_TRUE(runner.isOk()) << runner.status().toString();
    EXPECT_GE((*runner)->deviceBytes(), uint64_t(slots) * shape.expertBytes());
    std::mt19937 rng(5);
    std::vector<Expert> experts;
    for (int e = 0; e < 3; ++e)
        experts.push_back(makeExpert(shape, Fill::Gaussian, rng));
    // slot 0 and the last of the first buffer, then the first of the second.
    const std::vector<int> slotOf = {0, perBuffer - 1, perBuffer};
    std::vector<const Expert*> bySlot(size_t(slots), nullptr);
    for (size_t e = 0; e < experts.size(); ++e) {
        bySlot[size_t(slotOf[e])] = &experts[e];
        ASSERT_TRUE(upload(**runner, slotOf[e], experts[e]).isOk());
    }
    const Inputs in = makeInputs(4, shape.dModel, 64, rng);
    // Second buffer first, then alternating: the runner groups jobs by buffer internally.
    const std::vector<GpuJob> jobs = {
        {perBuffer, 0},     {0, 1}, {perBuffer, 2}, {perBuffer - 1, 3}, {0, 0}, {perBuffer, 1},
        {perBuffer - 1, 0}, {0, 3}, {perBuffer, 3}, {perBuffer - 1, 2}};
    Tally tally;
    runAndCompare(**runner, bySlot, jobs, in, 1, "two buffers", &tally);
    std::printf("[ gpu experts ] two weights buffers (%d slots, %d per buffer, %llu MiB): %d jobs "
                "interleaved, %lld values bit-identical, %d flagged, %.0f ms\n",
                slots, perBuffer, static_cast<unsigned long long>((*runner)->deviceBytes() >> 20),
                tally.jobs, static_cast<long long>(tally.compared), tally.flagged, msSince(t0));
    EXPECT_EQ(tally.flagged, 0);
}

// A layer's worth: 16 tokens each routed to 8 of 16 experts (128 jobs in one batch, listed
// token by token as a router would, then shuffled once more for a second batch).
// Run-time resizing (Model::setVramBudget): growing past one weights buffer adds one (the partial
// first is made anew, so its slots' contents are lost and said so), shrinking releases the
// buffers past the new count and keeps the others' contents; the device memory follows and the
// slots compute bit-identically throughout.
TEST(GpuExperts, ResizeAddsAndReleasesWeightsBuffers) {
    COLI_GPU_CONTEXT_OR_SKIP(ctx);
    const ExpertShape shape{1024, 1024, WeightFormat::Q8_G64, WeightFormat::Q4_G32_R8};
    const uint64_t per = shape.expertBytes();
    const uint64_t limit = std::min<uint64_t>(1ull << 30, ctx->device().maxStorageBufferRange);
    const int perBuffer = int(std::max<uint64_t>(1, limit / per));
    if (uint64_t(perBuffer + 2) * per > (768ull << 20))
        GTEST_SKIP() << "two weights buffers would take " << (uint64_t(perBuffer + 2) * per >> 20)
                     << " MiB on this device";
    Result<std::unique_ptr<ExpertRunner>> runner = ExpertRunner::create(*ctx, shape, 2, 8);
    ASSERT_TRUE(runner.isOk()) << runner.status().toString();
    ExpertRunner& r = **runner;
    const uint64_t small = r.deviceBytes();
    std::mt19937 rng(9);
    std::vector<Expert> experts;
    for (int e = 0; e < 3; ++e)
        experts.push_back(makeExpert(shape, Fill::Gaussian, rng));
    const Inputs in = makeInputs(2, shape.dModel, 64, rng);
    Tally tally;

    Result<int> lost = r.resize(perBuffer + 2);
    ASSERT_TRUE(lost.isOk()) << lost.status().toString();
    EXPECT_EQ(*lost, 0) << "the partial buffer was made anew";
    EXPECT_EQ(r.slots(), perBuffer + 2);
    EXPECT_GE(r.deviceBytes(), small + uint64_t(perBuffer) * per);
    ASSERT_TRUE(upload(r, 0, experts[0]).isOk());
    ASSERT_TRUE(upload(r, perBuffer + 1, experts[1]).isOk());
    std::vector<const Expert*> bySlot(size_t(perBuffer + 2), nullptr);
    bySlot[0] = &experts[0];
    bySlot[size_t(perBuffer + 1)] = &experts[1];
    runAndCompare(r, bySlot, {{perBuffer + 1, 0}, {0, 1}, {0, 0}}, in, 0, "grown", &tally);

    const uint64_t big = r.deviceBytes();
    lost = r.resize(perBuffer);
    ASSERT_TRUE(lost.isOk()) << lost.status().toString();
    EXPECT_EQ(*lost, perBuffer) << "only the released buffer's slots are gone";
    EXPECT_LT(r.deviceBytes(), big);
    bySlot.resize(size_t(perBuffer));
    runAndCompare(r, bySlot, {{0, 1}, {0, 0}}, in, 0, "shrunk, slot 0 kept", &tally);
    std::vector<float> y(size_t(shape.dModel));
    const GpuJob gone[] = {{perBuffer, 0}};
    EXPECT_EQ(r.submit(gone, in.xq.data(), in.xs.data(), in.rows).code(),
              ErrorCode::InvalidArgument);
    EXPECT_EQ(r.resize(0).status().code(), ErrorCode::InvalidArgument);
    EXPECT_EQ(tally.flagged, 0);
    EXPECT_GT(tally.compared, 0);
}

TEST(GpuExperts, LayerSizedBatch) {
    COLI_GPU_CONTEXT_OR_SKIP(ctx);
    const auto t0 = std::chrono::steady_clock::now();
    std::mt19937 rng(123);
    const ExpertShape shape{192, 192, WeightFormat::Q4_G64_R8, WeightFormat::Q4_G64_R8};
    const int nExperts = 16, nTokens = 16, topK = 8, maxJobs = nTokens * topK;
    Result<std::unique_ptr<ExpertRunner>> runner =
        ExpertRunner::create(*ctx, shape, nExperts, maxJobs);
    ASSERT_TRUE(runner.isOk()) << runner.status().toString();
    std::vector<Expert> experts;
    experts.reserve(nExperts);
    std::vector<const Expert*> bySlot;
    for (int e = 0; e < nExperts; ++e) {
        experts.push_back(makeExpert(shape, Fill::Gaussian, rng));
        bySlot.push_back(&experts.back());
        ASSERT_TRUE(upload(**runner, e, experts.back()).isOk());
    }
    const Inputs in = makeInputs(nTokens, shape.dModel, 64, rng);
    std::vector<GpuJob> jobs;
    std::vector<int> ids(nExperts);
    for (int e = 0; e < nExperts; ++e)
        ids[size_t(e)] = e;
    for (int t = 0; t < nTokens; ++t) {
        std::shuffle(ids.begin(), ids.end(), rng);
        for (int k = 0; k < topK; ++k)
            jobs.push_back({ids[size_t(k)], t});
    }
    Tally tally;
    runAndCompare(**runner, bySlot, jobs, in, 1, "layer", &tally);
    std::shuffle(jobs.begin(), jobs.end(), rng);
    runAndCompare(**runner, bySlot, jobs, in, 0, "layer shuffled", &tally);
    std::printf("[ gpu experts ] layer: %d tokens x top-%d of %d experts, 2 batches of %d jobs: "
                "%lld values bit-identical, %d flagged, %.0f ms\n",
                nTokens, topK, nExperts, maxJobs, static_cast<long long>(tally.compared),
                tally.flagged, msSince(t0));
    EXPECT_EQ(tally.flagged, 0);
}

// Uploads through the staging ring (the path of GPUs whose VRAM the host cannot map; forced on
// lavapipe by the test hook), in 4 KiB pieces so every matrix takes many entries and the ring of
// six wraps many times; a slot overwritten twice in a row (the later copy must win), and a batch
// submitted right after the uploads, not waited for, reads them all: bit-identical to the CPU.
TEST(GpuExperts, StagedUploadsAreSeenByTheNextBatch) {
    COLI_GPU_CONTEXT_OR_SKIP(ctx);
    struct Restore {
        GpuContext* c;
        ~Restore() { c->setStagedUploadsForTesting(false); }
    } restore{ctx};
    ctx->setStagedUploadsForTesting(true);
    ASSERT_TRUE(ctx->reserveStaging(4096).isOk());
    ASSERT_GT(ctx->stagingBytes(), 0u);
    std::mt19937 rng(77);
    const ExpertShape shape{256, 512, WeightFormat::Q4_G64, WeightFormat::Q8_G64};
    const int nExperts = 6, nTokens = 4;
    Result<std::unique_ptr<ExpertRunner>> runner =
        ExpertRunner::create(*ctx, shape, nExperts, nExperts * nTokens);
    ASSERT_TRUE(runner.isOk()) << runner.status().toString();
    std::vector<Expert> experts;
    experts.reserve(nExperts + 1);
    for (int e = 0; e < nExperts + 1; ++e)
        experts.push_back(makeExpert(shape, Fill::RawBytes, rng));
    std::vector<const Expert*> bySlot;
    for (int e = 0; e < nExperts; ++e) {
        ASSERT_TRUE(upload(**runner, e, experts[size_t(e)]).isOk());
        bySlot.push_back(&experts[size_t(e)]);
    }
    // Slot 2 again, twice: first the extra expert, then expert 2's bytes once more.
    ASSERT_TRUE(upload(**runner, 2, experts[size_t(nExperts)]).isOk());
    ASSERT_TRUE(upload(**runner, 2, experts[2]).isOk());
    const Inputs in = makeInputs(nTokens, shape.dModel, 64, rng);
    std::vector<GpuJob> jobs;
    for (int t = 0; t < nTokens; ++t)
        for (int e = 0; e < nExperts; ++e)
            jobs.push_back({e, t});
    Tally tally;
    runAndCompare(**runner, bySlot, jobs, in, 0, "staged", &tally);
    // And the extra expert in slot 2, the copy queued while nothing is in flight.
    ASSERT_TRUE(upload(**runner, 2, experts[size_t(nExperts)]).isOk());
    bySlot[2] = &experts[size_t(nExperts)];
    runAndCompare(**runner, bySlot, jobs, in, 0, "staged, slot 2 replaced", &tally);
    EXPECT_TRUE(ctx->waitUploads().isOk());
    EXPECT_GT(tally.compared, 0);
    std::printf("[ gpu experts ] staged uploads (%llu bytes of staging): %lld values "
                "bit-identical, %d flagged\n",
                static_cast<unsigned long long>(ctx->stagingBytes()),
                static_cast<long long>(tally.compared), tally.flagged);
}

// Device time from Vulkan timestamps around each batch: positive and within the wall time from
// submit to the end of wait() where the queue has timestamps (lavapipe: 64 valid bits, 1 ns
// ticks), 0 where it has none; 0 again after a wait with no batch in flight.
TEST(GpuExperts, BatchDeviceTimeFromTimestamps) {
    COLI_GPU_CONTEXT_OR_SKIP(ctx);
    std::mt19937 rng(7);
    const ExpertShape shape{192, 192, WeightFormat::Q4_G64, WeightFormat::Q4_G64};
    Result<std::unique_ptr<ExpertRunner>> runner = ExpertRunner::create(*ctx, shape, 2, 8);
    ASSERT_TRUE(runner.isOk()) << runner.status().toString();
    EXPECT_EQ((*runner)->lastBatchDeviceSeconds(), 0.0);
    std::vector<Expert> experts;
    experts.reserve(2);
    std::vector<const Expert*> bySlot;
    for (int e = 0; e < 2; ++e) {
        experts.push_back(makeExpert(shape, Fill::Gaussian, rng));
        bySlot.push_back(&experts.back());
        ASSERT_TRUE(upload(**runner, e, experts.back()).isOk());
    }
    const Inputs in = makeInputs(4, shape.dModel, 64, rng);
    const std::vector<GpuJob> jobs = makeJobs({0, 1}, {4, 4}, 4, rng);
    Tally tally;
    const auto t0 = std::chrono::steady_clock::now();
    runAndCompare(**runner, bySlot, jobs, in, 0, "timed", &tally);
    const double wall = msSince(t0) / 1e3, device = (*runner)->lastBatchDeviceSeconds();
    std::printf("[ gpu experts ] timestamps %s: one batch of %zu jobs took %.3f ms on the device, "
                "%.3f ms from submit to the end of wait\n",
                (*runner)->deviceTimestamps() ? "yes" : "no", jobs.size(), device * 1e3,
                wall * 1e3);
    if ((*runner)->deviceTimestamps()) {
        EXPECT_GT(device, 0.0);
        EXPECT_LE(device, wall); // the batch ran between submit and the fence
    } else {
        EXPECT_EQ(device, 0.0);
    }
    std::vector<float> y(8 * size_t(shape.dModel));
    std::vector<uint32_t> flags(8);
    ASSERT_TRUE((*runner)->wait(y.data(), flags.data()).isOk()); // nothing in flight
    EXPECT_EQ((*runner)->lastBatchDeviceSeconds(), 0.0);
}

// The comparison has teeth: a context with the test-only matvec that adds the groups in reverse
// order (the same products, another float summation order) gives other bits on many jobs.
TEST(GpuExperts, ReversedGroupOrderDiffers) {
    COLI_GPU_CONTEXT_OR_SKIP(ctx);
    Result<std::unique_ptr<GpuContext>> reversed = GpuContext::create(ctx->device(), true);
    ASSERT_TRUE(reversed.isOk()) << reversed.status().toString();
    std::mt19937 rng(31);
    const ExpertShape shape{192, 192, WeightFormat::Q4_G32, WeightFormat::Q4_G32};
    Result<std::unique_ptr<ExpertRunner>> runner = ExpertRunner::create(**reversed, shape, 2, 16);
    ASSERT_TRUE(runner.isOk()) << runner.status().toString();
    std::vector<Expert> experts = {makeExpert(shape, Fill::Gaussian, rng),
                                   makeExpert(shape, Fill::Gaussian, rng)};
    const std::vector<const Expert*> bySlot = {&experts[0], &experts[1]};
    for (int slot = 0; slot < 2; ++slot)
        ASSERT_TRUE(upload(**runner, slot, experts[size_t(slot)]).isOk());
    const Inputs in = makeInputs(8, shape.dModel, 32, rng);
    const std::vector<GpuJob> jobs = makeJobs({0, 1}, {8, 8}, 8, rng);
    Tally tally;
    runAndCompare(**runner, bySlot, jobs, in, 0, "reversed", &tally, false);
    std::printf("[ gpu experts ] reversed group order: %d of %d jobs differ from the CPU\n",
                tally.differing, tally.jobs);
    EXPECT_EQ(tally.flagged, 0);
    EXPECT_GE(tally.differing, tally.jobs / 2);
}

// One expert larger than a weights buffer may be (min(1 GiB, maxStorageBufferRange)): Unsupported,
// before anything is allocated.
TEST(GpuExperts, ExpertLargerThanABufferIsUnsupported) {
    COLI_GPU_CONTEXT_OR_SKIP(ctx);
    const uint64_t limit = std::min<uint64_t>(1ull << 30, ctx->device().maxStorageBufferRange);
    ExpertShape shape{4096, 4096, WeightFormat::Q8_G32, WeightFormat::Q8_G32};
    while (shape.expertBytes() <= limit)
        shape.dModel *= 2;
    Result<std::unique_ptr<ExpertRunner>> r = ExpertRunner::create(*ctx, shape, 1, 1);
    EXPECT_EQ(r.status().code(), ErrorCode::Unsupported) << r.status().toString();
    std::printf("[ gpu experts ] %dx%d expert of %llu MiB, buffers of at most %llu MiB: %s\n",
                shape.dModel, shape.ffn, static_cast<unsigned long long>(shape.expertBytes() >> 20),
                static_cast<unsigned long long>(limit >> 20), r.status().toString().c_str());
}

TEST(GpuExperts, ArgumentErrors) {
    COLI_GPU_CONTEXT_OR_SKIP(ctx);
    const ExpertShape shape{192, 192, WeightFormat::Q8_G64, WeightFormat::Q8_G64};
    // Shapes and sizes the runner refuses.
    for (const auto& [s, slots, maxJobs] :
         {std::tuple{ExpertShape{100, 192, WeightFormat::Q8_G64, WeightFormat::Q8_G64}, 1, 1},
          {ExpertShape{192, 96, WeightFormat::Q8_G32, WeightFormat::Q8_G64}, 1, 1},
          {ExpertShape{96, 192, WeightFormat::Q4_G64_R8, WeightFormat::Q4_G32}, 1, 1},
          {ExpertShape{0, 192, WeightFormat::Q8_G64, WeightFormat::Q8_G64}, 1, 1},
          {shape, 0, 4},
          {shape, 2, 0}}) {
        Result<std::unique_ptr<ExpertRunner>> bad = ExpertRunner::create(*ctx, s, slots, maxJobs);
        EXPECT_EQ(bad.status().code(), ErrorCode::InvalidArgument)
            << s.dModel << "x" << s.ffn << ", " << slots << " slots, " << maxJobs
            << " jobs: " << bad.status().toString();
    }

    const int slots = 3, maxJobs = 4;
    Result<std::unique_ptr<ExpertRunner>> runner =
        ExpertRunner::create(*ctx, shape, slots, maxJobs);
    ASSERT_TRUE(runner.isOk()) << runner.status().toString();
    ExpertRunner& r = **runner;
    EXPECT_EQ(r.slots(), slots);
    EXPECT_EQ(r.maxJobs(), maxJobs);
    std::mt19937 rng(9);
    const Expert e = makeExpert(shape, Fill::Gaussian, rng);
    const Inputs in = makeInputs(maxJobs + 1, shape.dModel, 64, rng); // one row more than allowed

    auto expectInvalid = [](const Status& s, const char* what) {
        EXPECT_EQ(s.code(), ErrorCode::InvalidArgument) << what << ": " << s.toString();
    };
    expectInvalid(upload(r, -1, e), "upload to slot -1");
    expectInvalid(upload(r, slots, e), "upload to slot 3");
    ASSERT_TRUE(upload(r, 1, e).isOk());

    const std::vector<GpuJob> five(5, GpuJob{1, 0});
    expectInvalid(r.submit(five, in.xq.data(), in.xs.data(), 2), "5 jobs, at most 4");
    const std::vector<GpuJob> one = {{1, 0}};
    expectInvalid(r.submit(one, in.xq.data(), in.xs.data(), maxJobs + 1), "5 input rows");
    expectInvalid(r.submit(one, in.xq.data(), in.xs.data(), -1), "-1 input rows");
    for (const GpuJob& bad : {GpuJob{-1, 0}, GpuJob{slots, 0}, GpuJob{1, -1}, GpuJob{1, 2}}) {
        const std::vector<GpuJob> jobs = {{1, 0}, bad};
        const Status s = r.submit(jobs, in.xq.data(), in.xs.data(), 2);
        EXPECT_EQ(s.code(), ErrorCode::InvalidArgument)
            << "job slot " << bad.slot << ", row " << bad.inputRow << ": " << s.toString();
    }

    // No batch: submit of nothing and wait are no-ops.
    EXPECT_TRUE(r.submit({}, in.xq.data(), in.xs.data(), 0).isOk());
    EXPECT_TRUE(r.wait(nullptr, nullptr).isOk());

    // The refused calls left the runner usable; a batch in flight refuses a second submit and
    // uploads into the slots it reads, and takes uploads into the others.
    const std::vector<GpuJob> jobs = {{1, 3}, {1, 0}, {1, 2}, {1, 1}};
    ASSERT_TRUE(r.submit(jobs, in.xq.data(), in.xs.data(), maxJobs).isOk());
    EXPECT_FALSE(upload(r, 1, e).isOk());
    EXPECT_TRUE(upload(r, 0, e).isOk());
    EXPECT_FALSE(r.submit(jobs, in.xq.data(), in.xs.data(), maxJobs).isOk());
    std::vector<float> y(size_t(maxJobs) * size_t(shape.dModel));
    std::vector<uint32_t> flags(size_t(maxJobs), 7);
    ASSERT_TRUE(r.wait(y.data(), flags.data()).isOk());
    std::vector<float> want(size_t(shape.dModel));
    for (size_t k = 0; k < jobs.size(); ++k) {
        ASSERT_TRUE(cpuExpert(shape, e.gate.data(), e.up.data(), e.down.data(),
                              in.q(jobs[k].inputRow), in.s(jobs[k].inputRow), want.data())
                        .isOk());
        EXPECT_EQ(flags[k], 0u);
        EXPECT_EQ(std::memcmp(y.data() + k * size_t(shape.dModel), want.data(), want.size() * 4), 0)
            << "job " << k;
    }
    std::printf("[ gpu experts ] argument errors: InvalidArgument for 6 bad shapes, 2 bad upload "
                "slots, too many jobs / rows, 4 bad jobs; then %zu jobs bit-identical\n",
                jobs.size());
}

} // namespace
} // namespace coli::gpu
