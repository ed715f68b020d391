#pragma once
// Synthetic routing data with planted topic structure, for the Atlas's tests and benchmark (no
// model needed): tokens of T topics are routed through n_layers MoE layers of n_experts each,
// top-k per layer, by Gumbel top-k sampling of per-expert logits (Kool et al. 2019), where a
// planted specialist of topic c gets `bias` added to its logit on topic-c tokens. The counts are
// then what the topic probe measures: shares per topic, routed tokens per expert and the
// co-activation of experts in one layer's top-k or in consecutive layers.
//
// Deterministic for a given spec (its own splitmix64 generator, no std distributions).
// Cost: O(T * tokens * n_layers * (n_experts + top_k^2)) time, O(n_layers * n_experts^2) memory
// for the pair counts (39 MB at 75 x 256). Thread-safety: a pure function.
#include "viz/affinity.h"

#include <cstdint>
#include <vector>

namespace coli::viz {

struct SyntheticRoutingSpec {
    int nLayers = 75;
    int nExperts = 256; // per layer
    int topK = 8;
    int nTopics = 12;
    int tokensPerTopic = 2000;
    double specialistFraction = 0.3; // experts given a planted topic
    double bias = 3.0;               // logit added on their topic's tokens
    uint64_t seed = 1;
};

struct SyntheticRouting {
    RoutingProfile profile;
    std::vector<int> plantedTopic; // [n_layers * n_experts]: the planted topic, or -1
};

// Errors: InvalidArgument when a size is below 1, topK > nExperts, or the pair counts would not
// fit (n_layers * n_experts^2 above 2^31).
Result<SyntheticRouting> makeSyntheticRouting(const SyntheticRoutingSpec& spec);

} // namespace coli::viz
