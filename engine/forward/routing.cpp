#include "forward/routing.h"

#include "forward/kernels.h"

#include <algorithm>
#include <cstring>

namespace coli {

int routingScratchFloats(const ModelConfig& c) {
    return 2 * c.nExperts + 2 * std::max(c.nGroup, 1);
}

namespace {

// A group's score: its best selection score, or the sum of its two best (noaux_tc, torch
// topk(2).sum(): the larger first).
float groupScore(GroupSelection g, const float* s, int n) {
    if (g == GroupSelection::BestScore) return *std::max_element(s, s + n);
    int best[2];
    topK(s, n, 2, best);
    return s[best[0]] + s[best[1]];
}

} // namespace

void selectExperts(const ModelConfig& c, const float* logits, const float* bias, float* scratch,
                   int* sel, float* weights) {
    const int E = c.nExperts, K = c.topK;
    if (c.routerSoftmaxOverTopk) { // GraniteMoE (JetMoeTopKGating)
        topK(logits, E, K, sel);
        for (int j = 0; j < K; ++j)
            weights[j] = logits[sel[j]];
        softmax(weights, K);
        return;
    }
    float* p = scratch; // [E] scores
    std::memcpy(p, logits, sizeof(float) * size_t(E));
    if (c.scoring == RouterScoring::Sigmoid) {
        for (int e = 0; e < E; ++e)
            p[e] = sigmoid(p[e]);
    } else {
        softmax(p, E);
    }
    // [E] selection scores: p itself unless a bias or the group mask changes them.
    float* s = p;
    if (bias || c.groupSelection != GroupSelection::None) {
        s = scratch + E;
        for (int e = 0; e < E; ++e)
            s[e] = bias ? p[e] + bias[e] : p[e];
    }
    if (c.groupSelection != GroupSelection::None) {
        const int G = c.nGroup, per = E / G;
        float* g = scratch + 2 * E;                // [G] group scores
        int* kept = reinterpret_cast<int*>(g + G); // [topk_group] (float slots used as ints)
        static_assert(sizeof(int) == sizeof(float));
        for (int i = 0; i < G; ++i)
            g[i] = groupScore(c.groupSelection, s + i * per, per);
        topK(g, G, c.topkGroup, kept);
        // The group scores are no longer needed: g becomes the kept flags (1 = kept).
        std::fill(g, g + G, 0.0f);
        for (int i = 0; i < c.topkGroup; ++i)
            g[kept[i]] = 1.0f;
        for (int i = 0; i < G; ++i)
            if (g[i] == 0.0f) std::fill(s + i * per, s + (i + 1) * per, 0.0f);
    }
    topK(s, E, K, sel);
    float sum = 0.0f;
    for (int j = 0; j < K; ++j) {
        weights[j] = p[sel[j]];
        sum += weights[j];
    }
    if (c.normTopkProb) {
        if (c.scoring == RouterScoring::Sigmoid) sum += 1e-20f; // DeepseekV3MoE's denominator
        for (int j = 0; j < K; ++j)
            weights[j] /= sum;
    }
    if (c.routedScalingFactor != 1.0f)
        for (int j = 0; j < K; ++j)
            weights[j] *= c.routedScalingFactor;
}

} // namespace coli
