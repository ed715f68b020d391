// The forward pass on quantised weights (model/quantise_weights.h, quant/matmul.h), on every
// fixture family: per-tensor cosine of dequantised vs original weights, teacher-forced top-1
// agreement with the f32 forward on the golden greedy sequence, Fast vs Reference (the scalar
// kernels), and bit-identical results for 1 and 2 threads. Prints the figures for
// docs/quantisation.md.
// The fixtures have random weights: their f32 top-1 margins (0.004-0.05) are far below the
// logit error any 8-bit scheme makes, so issue 4's 31/32 (int8) and 28/32 (int4-g64) apply only
// "where the margins allow it": here every position whose f32 margin exceeds twice that
// position's logit error must agree (a guarantee, not a statistic), and the counts are printed.
// The thresholds themselves are tested on the trained default model
// (tests/default_model/test_default_model_quantised.cpp).
#include "forward/model.h"
#include "golden_fixture.h"
#include "io/safetensors.h"
#include "model/config.h"
#include "model/quantise_weights.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

namespace coli {
namespace {

using quant::WeightFormat;
using test::argmax;

struct Scheme {
    const char* name;
    WeightQuantisation q;
    double minCosine; // every quantised tensor
};

std::vector<Scheme> schemes() {
    WeightQuantisation int8;
    int8.experts = int8.dense = int8.embed = int8.lmHead = WeightFormat::Q8_G64;
    WeightQuantisation int4; // the container default: int4-g64 experts, int8 elsewhere
    int4.experts = WeightFormat::Q4_G64;
    int4.dense = int4.embed = int4.lmHead = WeightFormat::Q8_G64;
    return {{"int8", int8, 0.9999}, {"int4-g64", int4, 0.99}};
}

// Top-1 minus top-2 logit of one row [V].
double topMargin(const float* x, int V) {
    std::vector<float> row(x, x + V);
    std::partial_sort(row.begin(), row.begin() + 2, row.end(), std::greater<float>());
    return double(row[0]) - double(row[1]);
}

class QuantisedForwardTest : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        const std::string dir = test::fixtureDir(GetParam());
        if (!std::filesystem::exists(dir + "/golden.json"))
            GTEST_SKIP() << "fixture " << dir << " not generated (the fixtures_generate test)";
        ASSERT_TRUE(test::loadGolden(GetParam(), &m_golden));
        m_seq = m_golden.greedyPrompt;
        m_seq.insert(m_seq.end(), m_golden.greedyTokens.begin(), m_golden.greedyTokens.end() - 1);
    }

    static std::unique_ptr<Model> load(const std::string& name, const WeightQuantisation& q,
                                       int threads, ForwardPath path = ForwardPath::Fast) {
        ModelLoadOptions o;
        o.quantisation = q;
        o.threads = threads;
        o.path = path;
        auto m = Model::load(test::fixtureDir(name), o);
        EXPECT_TRUE(m.isOk()) << m.status().toString();
        return m.isOk() ? std::move(m.value()) : nullptr;
    }

    std::vector<float> allLogits(Model& m) {
        KVCache kv;
        std::vector<float> logits;
        Status s = m.forward(m_seq, kv, logits, /*allLogits=*/true);
        EXPECT_TRUE(s.isOk()) << s.toString();
        return logits;
    }

    test::Golden m_golden;
    std::vector<int32_t> m_seq; // prompt + golden greedy tokens but the last
};

TEST_P(QuantisedForwardTest, TensorCosineAndTeacherForcedAgreement) {
    auto f32 = load(GetParam(), {}, 1);
    ASSERT_TRUE(f32);
    const int V = f32->config().vocabSize;
    const std::vector<float> ref = allLogits(*f32);
    const size_t p0 = m_golden.greedyPrompt.size() - 1;
    double logitScale = 0;
    for (float v : ref)
        logitScale = std::max(logitScale, double(std::abs(v)));
    for (const Scheme& s : schemes()) {
        // Cosine per tensor, through quantiseWeights on a fresh copy of the f32 weights.
        auto ckpt = Checkpoint::open(test::fixtureDir(GetParam()));
        ASSERT_TRUE(ckpt.isOk());
        auto cfg = loadConfig(test::fixtureDir(GetParam()));
        ASSERT_TRUE(cfg.isOk());
        auto w = loadWeights(**ckpt, *cfg);
        ASSERT_TRUE(w.isOk());
        std::vector<TensorQuantReport> rep;
        ASSERT_TRUE(quantiseWeights(*w, s.q, &rep).isOk());
        double worstCos = 1;
        int nQuantised = 0;
        for (const auto& r : rep)
            if (r.format != "f32") {
                worstCos = std::min(worstCos, r.cosine);
                ++nQuantised;
            }
        EXPECT_GT(nQuantised, 0);
        EXPECT_GE(worstCos, s.minCosine) << GetParam() << " " << s.name;

        auto qm = load(GetParam(), s.q, 1);
        ASSERT_TRUE(qm);
        const std::vector<float> got = allLogits(*qm);
        ASSERT_EQ(got.size(), ref.size());
        int agree = 0, decided = 0, decidedAgree = 0;
        double maxDiff = 0;
        for (size_t i = 0; i < 32; ++i) {
            const float* r = &ref[(p0 + i) * V];
            const float* g = &got[(p0 + i) * V];
            const bool same = argmax(g, V) == argmax(r, V);
            const double diff = test::maxAbsDiff(g, r, V);
            agree += same;
            maxDiff = std::max(maxDiff, diff);
            if (topMargin(r, V) > 2 * diff) { // no error of this size can flip the argmax
                ++decided;
                decidedAgree += same;
            }
        }
        std::printf("[ %s %s ] tensors %d, min cosine %.6f; teacher-forced top-1 %d/32 (%d/%d "
                    "where margin > 2 x error); max |logit diff| %.4f of max |logit| %.2f\n",
                    GetParam().c_str(), s.name, nQuantised, worstCos, agree, decidedAgree, decided,
                    maxDiff, logitScale);
        EXPECT_EQ(decidedAgree, decided) << GetParam() << " " << s.name;
    }
}

TEST_P(QuantisedForwardTest, FastMatchesReferenceAndThreadsDoNotChangeBits) {
    const Scheme s = schemes()[1];
    auto one = load(GetParam(), s.q, 1);
    auto two = load(GetParam(), s.q, 2);
    auto refPath = load(GetParam(), s.q, 1, ForwardPath::Reference);
    ASSERT_TRUE(one && two && refPath);
    const std::vector<float> a = allLogits(*one), b = allLogits(*two), r = allLogits(*refPath);
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)))
        << "1 and 2 threads differ";
    // Reference computes the quantised products with the scalar kernels (bit-identical to the
    // SIMD ones), but its attention and norms accumulate in double: an f32 rounding difference
    // can move an activation across an int8 rounding boundary, a jump of one quantisation step.
    // So the paths agree to quantisation noise, not to f32 rounding.
    const double d = test::maxAbsDiff(a.data(), r.data(), int(a.size()));
    std::printf("[ %s ] quantised Fast vs Reference: max |logit diff| %.4f\n", GetParam().c_str(),
                d);
    EXPECT_LE(d, 0.1);
}

// Token by token (one token per step: decode) the threads split each row phase by columns (the
// norms), the query from the key and value (RoPE, the KV append) and attention by units of heads
// that each quantise their own groups of the o projection's input: 2 and 3 threads must give the
// bits of 1, in both schemes (the dense int8-g64 o projection takes units of whole groups).
TEST_P(QuantisedForwardTest, ThreadsDoNotChangeBitsTokenByToken) {
    for (const Scheme& s : schemes()) {
        std::vector<std::vector<float>> perThreads;
        for (int threads : {1, 2, 3}) {
            auto m = load(GetParam(), s.q, threads);
            ASSERT_TRUE(m);
            KVCache kv;
            std::vector<float> all, step;
            for (int32_t token : m_seq) {
                ASSERT_TRUE(m->forward(std::vector<int32_t>{token}, kv, step).isOk());
                all.insert(all.end(), step.begin(), step.end());
            }
            perThreads.push_back(std::move(all));
        }
        for (size_t i = 1; i < perThreads.size(); ++i) {
            ASSERT_EQ(perThreads[0].size(), perThreads[i].size());
            EXPECT_EQ(0, std::memcmp(perThreads[0].data(), perThreads[i].data(),
                                     perThreads[0].size() * sizeof(float)))
                << GetParam() << " " << s.name << ": " << i + 1 << " threads differ from 1";
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Families, QuantisedForwardTest, ::testing::ValuesIn(test::fixtureNames()),
                         [](const auto& info) { return info.param; });

} // namespace
} // namespace coli
