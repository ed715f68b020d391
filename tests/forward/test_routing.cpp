// selectExperts (forward/routing.h), every family's routing rule on hand-made router logits. The
// expected experts and gates are worked out here from the rule as transformers writes it
// (OlmoeSparseMoeBlock, MixtralSparseMoeBlock, GraniteMoeTopKGating, DeepseekV2Moe and
// DeepseekV3MoE route_tokens_to_experts), in double, never by calling the engine a second time.
#include "forward/routing.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace coli {
namespace {

struct Routed {
    std::vector<int> sel;
    std::vector<float> weights;
};

Routed route(const ModelConfig& c, const std::vector<float>& logits,
             const std::vector<float>& bias = {}) {
    EXPECT_EQ(int(logits.size()), c.nExperts);
    std::vector<float> scratch(size_t(routingScratchFloats(c)), -1.0f);
    Routed r{std::vector<int>(size_t(c.topK), -1), std::vector<float>(size_t(c.topK), -1.0f)};
    selectExperts(c, logits.data(), bias.empty() ? nullptr : bias.data(), scratch.data(),
                  r.sel.data(), r.weights.data());
    return r;
}

// Softmax over all of x, in double.
std::vector<double> softmaxD(const std::vector<float>& x) {
    double m = x[0], z = 0;
    for (float v : x)
        m = std::max(m, double(v));
    std::vector<double> p;
    for (float v : x)
        p.push_back(std::exp(double(v) - m));
    for (double v : p)
        z += v;
    for (double& v : p)
        v /= z;
    return p;
}

double sigmoidD(double x) {
    return 1.0 / (1.0 + std::exp(-x));
}

void expectGates(const Routed& r, const std::vector<int>& sel, const std::vector<double>& w) {
    EXPECT_EQ(r.sel, sel);
    ASSERT_EQ(r.weights.size(), w.size());
    for (size_t j = 0; j < w.size(); ++j)
        EXPECT_NEAR(r.weights[j], w[j], 1e-6 * std::max(1.0, std::fabs(w[j]))) << "slot " << j;
}

// OLMoE / Qwen: softmax over all 8 experts, top-k of the probabilities.
ModelConfig softmaxTopK(int k, bool norm) {
    ModelConfig c;
    c.nExperts = 8;
    c.topK = k;
    c.normTopkProb = norm;
    return c;
}

const std::vector<float> kLogits = {0.5f, 2.0f, -1.0f, 1.0f, 0.0f, 3.0f, 0.25f, -0.5f};

TEST(Routing, SoftmaxTopKWithoutRenormalisation) {
    const std::vector<double> p = softmaxD(kLogits);
    // Descending: e5 (3.0), e1 (2.0), e3 (1.0).
    expectGates(route(softmaxTopK(3, false), kLogits), {5, 1, 3}, {p[5], p[1], p[3]});
}

TEST(Routing, SoftmaxTopKRenormalised) {
    // norm_topk_prob: p / sum of the chosen p, i.e. the softmax of the chosen logits.
    const double a = std::exp(3.0), b = std::exp(2.0), d = std::exp(1.0);
    const Routed r = route(softmaxTopK(3, true), kLogits);
    expectGates(r, {5, 1, 3}, {a / (a + b + d), b / (a + b + d), d / (a + b + d)});
    EXPECT_NEAR(r.weights[0] + r.weights[1] + r.weights[2], 1.0, 1e-6);
}

TEST(Routing, GraniteSoftmaxOverTheTopKLogits) {
    ModelConfig c = softmaxTopK(2, true);
    c.routerSoftmaxOverTopk = true;
    const double a = std::exp(3.0), b = std::exp(2.0);
    expectGates(route(c, kLogits), {5, 1}, {a / (a + b), b / (a + b)});
    // Softmax over the two picked logits only: shifting the others changes nothing.
    std::vector<float> lower = kLogits;
    for (int e : {0, 2, 3, 4, 6, 7})
        lower[size_t(e)] -= 5.0f;
    expectGates(route(c, lower), {5, 1}, {a / (a + b), b / (a + b)});
}

TEST(Routing, TiesGoToTheLowerExpertId) {
    const std::vector<float> tied = {1.0f, 2.0f, 0.0f, 2.0f, -1.0f, 2.0f, 0.5f, 1.0f};
    const std::vector<double> p = softmaxD(tied);
    expectGates(route(softmaxTopK(2, false), tied), {1, 3}, {p[1], p[3]});
    expectGates(route(softmaxTopK(4, false), tied), {1, 3, 5, 0}, {p[1], p[3], p[5], p[0]});
    ModelConfig g = softmaxTopK(3, true);
    g.routerSoftmaxOverTopk = true;
    expectGates(route(g, tied), {1, 3, 5}, {1 / 3.0, 1 / 3.0, 1 / 3.0});
}

// DeepSeek-V2 group_limited_greedy: 8 experts in 4 groups of 2, each group scored by its best
// probability, the best 2 groups kept; weights are the chosen (unmasked) probabilities times
// routed_scaling_factor, not renormalised.
ModelConfig deepseekV2(int k) {
    ModelConfig c;
    c.family = Family::DeepseekV2;
    c.nExperts = 8;
    c.topK = k;
    c.scoring = RouterScoring::Softmax;
    c.groupSelection = GroupSelection::BestScore;
    c.nGroup = 4;
    c.topkGroup = 2;
    c.routedScalingFactor = 1.5f;
    return c;
}

TEST(Routing, DeepseekV2GroupLimitedGreedyChangesTheChoice) {
    // Groups {0,1} {2,3} {4,5} {6,7}. Best per group: 5.0, 4.0, 3.5, -1.0: groups 0 and 1 kept.
    // Over all experts the top 3 would be e0 (5.0), e2 (4.0), e4 (3.5); e4's group is dropped,
    // so the third is e1 (1.0), the best left in the kept groups.
    const std::vector<float> logits = {5.0f, 1.0f, 4.0f, 0.0f, 3.5f, 3.4f, -1.0f, -2.0f};
    const std::vector<double> p = softmaxD(logits);
    ModelConfig none = deepseekV2(3);
    none.groupSelection = GroupSelection::None; // "greedy"
    expectGates(route(none, logits), {0, 2, 4}, {1.5 * p[0], 1.5 * p[2], 1.5 * p[4]});
    expectGates(route(deepseekV2(3), logits), {0, 2, 1}, {1.5 * p[0], 1.5 * p[2], 1.5 * p[1]});
    // Keeping 3 groups brings e4 back.
    ModelConfig three = deepseekV2(3);
    three.topkGroup = 3;
    expectGates(route(three, logits), {0, 2, 4}, {1.5 * p[0], 1.5 * p[2], 1.5 * p[4]});
}

TEST(Routing, DeepseekV2GroupTiesGoToTheLowerGroup) {
    // Groups 1 and 2 tie on their best (2.0); group 3 leads. Group 1 is kept (e2, e3), group 2
    // (e4 = 2.0, e5 = 1.9) is dropped: e6, e3, then e7 (0.0) over e2 (-1.0).
    const std::vector<float> logits = {0.0f, 0.5f, -1.0f, 2.0f, 2.0f, 1.9f, 3.0f, 0.0f};
    const std::vector<double> p = softmaxD(logits);
    expectGates(route(deepseekV2(3), logits), {6, 3, 7}, {1.5 * p[6], 1.5 * p[3], 1.5 * p[7]});
}

// DeepSeek-V3 noaux_tc: sigmoid scores p, selection scores s = p + e_score_correction_bias; each
// group of 2 scored by the sum of its two best s, the best 2 of 4 groups kept, top-k of s among
// them; weights = p (uncorrected) / (sum of the chosen p + 1e-20) * routed_scaling_factor.
ModelConfig deepseekV3(int k) {
    ModelConfig c;
    c.family = Family::DeepseekV3;
    c.nExperts = 8;
    c.topK = k;
    c.scoring = RouterScoring::Sigmoid;
    c.groupSelection = GroupSelection::TopTwoSum;
    c.nGroup = 4;
    c.topkGroup = 2;
    c.routerBias = true;
    c.normTopkProb = true;
    c.routedScalingFactor = 2.5f;
    return c;
}

TEST(Routing, DeepseekV3BiasChangesTheChoiceNotTheWeights) {
    const std::vector<float> logits = {2.0f, -1.0f, 1.0f, 0.9f, 1.5f, -2.0f, 0.0f, 0.0f};
    std::vector<double> p;
    for (float l : logits)
        p.push_back(sigmoidD(l));
    // Without bias: group sums 0.881+0.269 = 1.150, 0.731+0.711 = 1.442, 0.818+0.119 = 0.937,
    // 1.0: groups 1 and 0 kept; top 2 are e0 (0.881) and e2 (0.731).
    const std::vector<float> zero(8, 0.0f);
    {
        const double sum = p[0] + p[2] + 1e-20;
        expectGates(route(deepseekV3(2), logits, zero), {0, 2},
                    {2.5 * p[0] / sum, 2.5 * p[2] / sum});
    }
    // +0.3 on group 2: its sum becomes 1.537, groups 2 and 1 are kept, group 0 (and e0, the best
    // uncorrected score) is dropped; s4 = 1.118 leads, then e2 (0.731) over e3 (0.711) and e5
    // (0.419). The weights stay the uncorrected p4 and p2, renormalised and times 2.5.
    const std::vector<float> bias = {0.0f, 0.0f, 0.0f, 0.0f, 0.3f, 0.3f, 0.0f, 0.0f};
    const double sum = p[4] + p[2] + 1e-20;
    const Routed r = route(deepseekV3(2), logits, bias);
    expectGates(r, {4, 2}, {2.5 * p[4] / sum, 2.5 * p[2] / sum});
    EXPECT_NEAR(r.weights[0] + r.weights[1], 2.5, 1e-6);
    // Had the corrected s been used for the weights, the first would be 2.5 * 1.118 / 1.849.
    EXPECT_GT(std::fabs(r.weights[0] - 2.5 * (p[4] + 0.3) / (p[4] + 0.3 + p[2])), 0.05);
}

TEST(Routing, DeepseekV3GroupScoreIsTheSumOfTheTwoBest) {
    // Group 0 has the single best expert (0.95 + 0.05) but the smaller sum; groups 1 (0.6 + 0.6)
    // and 2 (0.55 + 0.5) win on the sum of their two best (scores given as sigmoids via logit).
    auto logit = [](double q) { return float(std::log(q / (1 - q))); };
    const std::vector<double> q = {0.95, 0.05, 0.6, 0.6, 0.55, 0.5, 0.3, 0.3};
    std::vector<float> logits;
    for (double v : q)
        logits.push_back(logit(v));
    std::vector<double> p;
    for (float l : logits)
        p.push_back(sigmoidD(l));
    const std::vector<float> zero(8, 0.0f);
    ModelConfig c = deepseekV3(3);
    const double sum = p[2] + p[3] + p[4] + 1e-20;
    // e2 and e3 tie (0.6): the lower id first.
    expectGates(route(c, logits, zero), {2, 3, 4},
                {2.5 * p[2] / sum, 2.5 * p[3] / sum, 2.5 * p[4] / sum});
    // Without renormalisation: the sigmoid scores times the factor.
    c.normTopkProb = false;
    expectGates(route(c, logits, zero), {2, 3, 4}, {2.5 * p[2], 2.5 * p[3], 2.5 * p[4]});
}

// The experts of dropped groups get selection score 0.0 (transformers' masked_fill(..., 0.0)),
// so when a kept expert's corrected score is negative, a dropped group's expert (the lowest id
// among the zeros) is chosen before it. (DeepSeek's own inference code fills -inf instead and
// would choose e1; the fixtures' min_router_gap keeps them clear of this case.)
TEST(Routing, DeepseekV3MaskedExpertsScoreZero) {
    const std::vector<float> logits(8, 0.0f); // p = 0.5 everywhere
    const std::vector<float> bias = {1.0f, -0.9f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f};
    ModelConfig c = deepseekV3(2);
    c.topkGroup = 1; // group 0 (1.5 - 0.4 = 1.1) against -1.0 for the others
    const double sum = 0.5 + 0.5 + 1e-20;
    expectGates(route(c, logits, bias), {0, 2}, {2.5 * 0.5 / sum, 2.5 * 0.5 / sum});
}

TEST(Routing, ScratchCoversExpertsAndGroups) {
    ModelConfig c = deepseekV3(2);
    EXPECT_GE(routingScratchFloats(c), 2 * c.nExperts + 2 * c.nGroup);
    EXPECT_GE(routingScratchFloats(softmaxTopK(2, false)), 2 * 8);
}

} // namespace
} // namespace coli
