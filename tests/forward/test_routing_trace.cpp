// Model::forward's RoutingTrace: shapes, ranges, Reference == Fast, batch == token by token, and
// the first layer's routing recomputed here from the raw weights (an independent double-precision
// calculation of the router on a one-token sequence, where attention reduces to o(v(h))).
#include "forward/model.h"
#include "golden_fixture.h"
#include "io/safetensors.h"
#include "model/weights.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>

namespace coli {
namespace {

bool fixtureExists(const std::string& name) {
    return std::filesystem::exists(test::fixtureDir(name) + "/config.json");
}

std::unique_ptr<Model> loadOk(const std::string& name, ForwardPath path) {
    ModelLoadOptions opt;
    opt.path = path;
    auto m = Model::load(test::fixtureDir(name), opt);
    EXPECT_TRUE(m.isOk()) << m.status().toString();
    return m.isOk() ? std::move(m.value()) : nullptr;
}

// 40 tokens: more than one Fast chunk (32), ids spread over the vocabulary.
std::vector<int32_t> someTokens(int vocab, int n = 40) {
    std::vector<int32_t> t(n);
    for (int i = 0; i < n; ++i)
        t[i] = int32_t((7 + 37 * i + i * i) % vocab);
    return t;
}

RoutingTrace traceOf(Model& m, std::span<const int32_t> tokens) {
    KVCache kv;
    std::vector<float> logits;
    RoutingTrace r;
    Status s = m.forward(tokens, kv, logits, false, &r);
    EXPECT_TRUE(s.isOk()) << s.toString();
    return r;
}

void expectSameExperts(const RoutingTrace& a, const RoutingTrace& b, float weightTol,
                       const std::string& what) {
    ASSERT_EQ(a.nTokens, b.nTokens) << what;
    ASSERT_EQ(a.moeLayers, b.moeLayers) << what;
    ASSERT_EQ(a.topK, b.topK) << what;
    EXPECT_EQ(a.experts, b.experts) << what;
    ASSERT_EQ(a.weights.size(), b.weights.size()) << what;
    for (size_t i = 0; i < a.weights.size(); ++i)
        ASSERT_NEAR(a.weights[i], b.weights[i], weightTol) << what << " slot " << i;
}

TEST(RoutingTrace, ShapesAndRanges) {
    for (const std::string& name : test::fixtureNames()) {
        SCOPED_TRACE(name);
        if (!fixtureExists(name)) GTEST_SKIP() << "fixture " << name << " not generated";
        auto m = loadOk(name, ForwardPath::Fast);
        ASSERT_TRUE(m);
        const ModelConfig& c = m->config();
        const auto tokens = someTokens(c.vocabSize);
        const RoutingTrace r = traceOf(*m, tokens);
        EXPECT_EQ(r.nTokens, int(tokens.size()));
        EXPECT_EQ(r.topK, c.topK);
        ASSERT_GT(r.nMoeLayers(), 0);
        EXPECT_LE(r.nMoeLayers(), c.nLayers);
        EXPECT_TRUE(std::is_sorted(r.moeLayers.begin(), r.moeLayers.end()));
        ASSERT_EQ(r.experts.size(), tokens.size() * r.moeLayers.size() * c.topK);
        ASSERT_EQ(r.weights.size(), r.experts.size());
        const bool sumsToOne = c.normTopkProb || c.routerSoftmaxOverTopk;
        for (int t = 0; t < r.nTokens; ++t)
            for (int i = 0; i < r.nMoeLayers(); ++i) {
                auto e = r.expertsAt(t, i);
                auto w = r.weightsAt(t, i);
                std::vector<int32_t> distinct(e.begin(), e.end());
                std::sort(distinct.begin(), distinct.end());
                EXPECT_EQ(std::unique(distinct.begin(), distinct.end()), distinct.end())
                    << "repeated expert at token " << t << " layer " << r.moeLayers[i];
                float sum = 0;
                for (int j = 0; j < r.topK; ++j) {
                    EXPECT_GE(e[j], 0);
                    EXPECT_LT(e[j], c.nExperts);
                    EXPECT_GT(w[j], 0.0f);
                    // DeepSeek: every weight times routed_scaling_factor.
                    EXPECT_LE(w[j], c.routedScalingFactor);
                    // V3 ranks by the bias-corrected scores; its weights are the uncorrected ones.
                    if (j > 0 && !c.routerBias) {
                        EXPECT_LE(w[j], w[j - 1]) << "not in the router's top-k order";
                    }
                    sum += w[j];
                }
                if (sumsToOne)
                    EXPECT_NEAR(sum, c.routedScalingFactor, 1e-5f);
                else
                    EXPECT_LE(sum, c.routedScalingFactor * (1.0f + 1e-5f));
            }
    }
}

TEST(RoutingTrace, ReferenceAndFastAgree) {
    for (const std::string& name : test::fixtureNames()) {
        SCOPED_TRACE(name);
        if (!fixtureExists(name)) GTEST_SKIP() << "fixture " << name << " not generated";
        auto ref = loadOk(name, ForwardPath::Reference);
        auto fast = loadOk(name, ForwardPath::Fast);
        ASSERT_TRUE(ref && fast);
        const auto tokens = someTokens(ref->config().vocabSize);
        expectSameExperts(traceOf(*ref, tokens), traceOf(*fast, tokens), 1e-5f,
                          name + " reference vs fast");
    }
}

TEST(RoutingTrace, BatchEqualsTokenByToken) {
    for (const std::string& name : test::fixtureNames()) {
        SCOPED_TRACE(name);
        if (!fixtureExists(name)) GTEST_SKIP() << "fixture " << name << " not generated";
        for (ForwardPath path : {ForwardPath::Reference, ForwardPath::Fast}) {
            auto m = loadOk(name, path);
            ASSERT_TRUE(m);
            const auto tokens = someTokens(m->config().vocabSize);
            const RoutingTrace batch = traceOf(*m, tokens);
            // Token by token, concatenated.
            RoutingTrace joined;
            KVCache kv;
            std::vector<float> logits;
            for (size_t t = 0; t < tokens.size(); ++t) {
                RoutingTrace one;
                ASSERT_TRUE(
                    m->forward(std::span(tokens).subspan(t, 1), kv, logits, false, &one).isOk());
                ASSERT_EQ(one.nTokens, 1);
                joined.moeLayers = one.moeLayers;
                joined.topK = one.topK;
                joined.nTokens += 1;
                joined.experts.insert(joined.experts.end(), one.experts.begin(), one.experts.end());
                joined.weights.insert(joined.weights.end(), one.weights.begin(), one.weights.end());
            }
            expectSameExperts(batch, joined, 1e-6f, name + " batch vs token by token");
        }
    }
}

TEST(RoutingTrace, NullTraceChangesNothingAndErrorsLeaveTraceAlone) {
    if (!fixtureExists("mixtral")) GTEST_SKIP() << "fixture mixtral not generated";
    auto m = loadOk("mixtral", ForwardPath::Fast);
    ASSERT_TRUE(m);
    const auto tokens = someTokens(m->config().vocabSize, 5);
    KVCache a, b;
    std::vector<float> la, lb;
    RoutingTrace r;
    ASSERT_TRUE(m->forward(tokens, a, la, true, nullptr).isOk());
    ASSERT_TRUE(m->forward(tokens, b, lb, true, &r).isOk());
    EXPECT_EQ(la, lb); // recording never changes the numbers
    const RoutingTrace before = r;
    std::vector<int32_t> bad = {m->config().vocabSize};
    EXPECT_FALSE(m->forward(bad, b, lb, false, &r).isOk());
    EXPECT_EQ(r.experts, before.experts);
    EXPECT_EQ(r.nTokens, before.nTokens);
}

// ---- an independent recomputation of layer 0's router for a one-token sequence ----

using DVec = std::vector<double>;

DVec matVec(const Matrix& W, const DVec& x, const std::vector<float>& bias) {
    DVec y(W.rows, 0.0);
    for (int r = 0; r < W.rows; ++r) {
        for (int i = 0; i < W.cols; ++i)
            y[r] += double(W.row(r)[i]) * x[i];
        if (!bias.empty()) y[r] += bias[r];
    }
    return y;
}

DVec rms(const DVec& x, const std::vector<float>& w, double eps) {
    double ss = 0;
    for (double v : x)
        ss += v * v;
    const double inv = 1.0 / std::sqrt(ss / double(x.size()) + eps);
    DVec y(x.size());
    for (size_t i = 0; i < x.size(); ++i)
        y[i] = x[i] * inv * w[i];
    return y;
}

TEST(RoutingTrace, FirstLayerMatchesRouterRecomputedFromWeights) {
    int checked = 0;
    for (const std::string& name : test::fixtureNames()) {
        SCOPED_TRACE(name);
        if (!fixtureExists(name)) GTEST_SKIP() << "fixture " << name << " not generated";
        auto cfg = loadConfig(test::fixtureDir(name));
        ASSERT_TRUE(cfg.isOk()) << cfg.status().toString();
        const ModelConfig& c = cfg.value();
        auto ckpt = Checkpoint::open(test::fixtureDir(name));
        ASSERT_TRUE(ckpt.isOk()) << ckpt.status().toString();
        auto w = loadWeights(**ckpt, c);
        ASSERT_TRUE(w.isOk()) << w.status().toString();
        const LayerWeights& L = w->layers[0];
        if (!L.sparse) continue; // this family's first layer is dense
        auto m = loadOk(name, ForwardPath::Reference);
        ASSERT_TRUE(m);
        for (int32_t tok : someTokens(c.vocabSize, 8)) {
            // One token at position 0: attention's softmax has one key (weight 1), so the
            // attention output is o(v(h)) whatever q, k, RoPE and the q/k norms are.
            DVec x(c.dModel);
            for (int i = 0; i < c.dModel; ++i)
                x[i] = double(w->embed.row(tok)[i]) * c.embeddingMultiplier;
            DVec v = matVec(L.v, rms(x, L.attnNorm, c.rmsNormEps), L.vBias);
            if (c.clipQkv > 0)
                for (double& e : v)
                    e = std::clamp(e, -double(c.clipQkv), double(c.clipQkv));
            DVec vHeads(size_t(c.nHeads) * c.headDim); // repeat_kv: query head h reads kv h/group
            const int group = c.nHeads / c.nKvHeads;
            for (int h = 0; h < c.nHeads; ++h)
                for (int i = 0; i < c.headDim; ++i)
                    vHeads[size_t(h) * c.headDim + i] = v[size_t(h / group) * c.headDim + i];
            const DVec a = matVec(L.o, vHeads, L.oBias);
            for (int i = 0; i < c.dModel; ++i)
                x[i] += a[i] * c.residualMultiplier;
            const DVec logits = matVec(L.router, rms(x, L.ffnNorm, c.rmsNormEps), {});

            std::vector<int> order(c.nExperts);
            std::iota(order.begin(), order.end(), 0);
            std::stable_sort(order.begin(), order.end(),
                             [&](int p, int q) { return logits[p] > logits[q]; });
            // Near-ties could flip either way in f32; such a token proves nothing.
            if (logits[order[c.topK - 1]] - logits[order[c.topK]] < 1e-4) continue;
            DVec gate(c.topK);
            if (c.routerSoftmaxOverTopk) {
                double s = 0;
                for (int j = 0; j < c.topK; ++j)
                    s += gate[j] = std::exp(logits[order[j]] - logits[order[0]]);
                for (double& g : gate)
                    g /= s;
            } else {
                double s = 0, top = 0;
                for (int e = 0; e < c.nExperts; ++e)
                    s += std::exp(logits[e] - logits[order[0]]);
                for (int j = 0; j < c.topK; ++j) {
                    gate[j] = std::exp(logits[order[j]] - logits[order[0]]) / s;
                    top += gate[j];
                }
                if (c.normTopkProb)
                    for (double& g : gate)
                        g /= top;
            }
            const RoutingTrace r = traceOf(*m, std::vector<int32_t>{tok});
            ASSERT_EQ(r.moeLayers.front(), 0);
            for (int j = 0; j < c.topK; ++j) {
                EXPECT_EQ(r.expertsAt(0, 0)[j], order[j]) << "token " << tok << " slot " << j;
                EXPECT_NEAR(r.weightsAt(0, 0)[j], gate[j], 1e-5) << "token " << tok;
            }
            ++checked;
        }
    }
    EXPECT_GT(checked, 10) << "too few tokens had a clear top-k to compare";
}

} // namespace
} // namespace coli
