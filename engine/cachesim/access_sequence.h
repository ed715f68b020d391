#pragma once
// The expert-cache access sequence of one or more routing traces, in the engine's order
// (docs/design.md "Expert tiers", steps 1-3):
// - a step is one decode token, or a chunk of up to `chunk` prompt tokens (prefill); generated
//   tokens are always decoded one per step, as the engine does; a chunk never spans two traces;
// - within a step, MoE layers in order; per layer a group: the union of the experts its tokens
//   routed to, each distinct expert one cache access, in order of first routing;
// - the routings of the group (every (token, expert) choice, token-major) are what the usage heat
//   counts; the token clock advances by the step's token count after its last layer.
// Traces are concatenated (one long session: the cache and the heat carry over between them).
// Thread-safety: plain values.
#include "cachesim/trace_reader.h"
#include "core/status.h"

#include <cstdint>
#include <span>
#include <vector>

namespace coli::cachesim {

struct AccessSequence {
    int nLayers = 0;  // model layers: the expert key is layer * nExperts + expert
    int nExperts = 0; // routed experts per layer
    std::vector<int> moeLayers;
    int topK = 0;       // experts per token per MoE layer (the traces' top_k)
    int64_t tokens = 0; // tokens over all traces
    int64_t steps = 0;

    struct Group {
        uint32_t accessBegin = 0, accessEnd = 0;   // range of `accesses`
        uint32_t routingBegin = 0, routingEnd = 0; // range of `routings`
        int64_t advanceAfter = 0; // tokens the clock moves after the group (0 inside a step)
    };
    std::vector<int32_t> accesses; // expert keys, in cache-access order
    std::vector<int32_t> routings; // expert keys, one per (token, expert) routing
    std::vector<Group> groups;

    // Experts the cache can ever hold: MoE layers x experts per layer.
    int totalExperts() const { return int(moeLayers.size()) * nExperts; }
    int layerOf(int32_t key) const { return key / nExperts; }
    int expertOf(int32_t key) const { return key % nExperts; }
};

// Builds the sequence of `traces` (all with the same n_layers, n_experts, top_k and moe_layers)
// for prefill chunks of `chunk` >= 1 tokens. InvalidArgument for no traces, chunk < 1 or traces
// of different shapes (the message names both files); Unsupported above 2^31 accesses.
Result<AccessSequence> buildAccessSequence(std::span<const RoutingTraceFile> traces, int chunk);

} // namespace coli::cachesim
