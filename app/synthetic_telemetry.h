#pragma once
// A synthetic MoE model's tier telemetry, for the Brain view without weights (issue 12): the same
// TierStatus snapshots the engine publishes, for a model of L layers x E routed experts (default
// 75 x 256 = 19,200 experts, 8 routed per layer per token), one snapshot per decoded token.
//
// What it simulates, per token and MoE layer: the router picks `topK` distinct experts, drawn
// from a skewed (Zipf-like) popularity that differs per layer and drifts with a "topic" that
// changes every `topicTokens` tokens; each pick is then served like the expert cache serves it:
// pinned (the hottest experts of the model's start, `pinnedPerLayer` per layer), cached (an LRU of
// `cacheExperts` experts), or read from disk (the expert shows as Loading for `loadTokens` tokens,
// then Cached; the least recently used cached expert goes back to Disk) or, with vramExperts,
// computed in VRAM. User pins
// (toggleUserPin) are kept resident and carry tiers::kUserPinFlag. Counters, residency and the
// ExpertMap's cumulative hits follow the engine's definitions (engine/tiers/tier_telemetry.h), so
// the sum of all hits equals counters.routed.
//
// Deterministic: the same options give the same snapshots, byte for byte (one seeded
// std::mt19937_64, no std:: distributions). Stepped by its caller: step() advances one token;
// live use calls it from a timer at `tokensPerSecond`.
// Thread-safety: a plain object; one thread at a time.
#include "tier_status.h"

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace coli::app {

struct SyntheticOptions {
    int nLayers = 75;        // decoder layers, dense ones included
    int nExperts = 256;      // routed experts per MoE layer
    int topK = 8;            // experts routed per MoE layer per token
    int denseLayers = 0;     // the first `denseLayers` layers have no routed experts (state None)
    int pinnedPerLayer = 16; // experts pinned per MoE layer at the start (the hottest)
    int cacheExperts = 2400; // LRU cache capacity, experts (all layers together)
    int loadTokens = 2;      // tokens a disk read stays in flight
    int topicTokens = 40;    // tokens between changes of the routing's drift
    int turnTokens = 160;    // tokens per synthetic answer (a turn starts every turnTokens)
    double tokensPerSecond = 10; // the live rate (SyntheticDriver's timer)
    // Bytes of one expert read: 3 MiB, an int4 expert whose gate, up and down are 2048 x 1024.
    uint64_t expertBytes = 3u << 20;
    // Experts a simulated VRAM tier holds (0: none). As in the engine (docs/gpu.md), an expert
    // enters VRAM when it is routed while ready in RAM, until the tier is full (no eviction);
    // later routings of it are VRAM hits.
    int vramExperts = 0;
    uint64_t seed = 12;
};

// Parses "LxE" (e.g. "75x256") into options with the defaults; nullopt and *error (what is wrong)
// when the text is not two positive integers with 1 <= L <= 1024 and 1 <= E <= 4096, or E is
// smaller than the top-k (8).
std::optional<SyntheticOptions> parseSyntheticShape(const std::string& text, std::string* error);

class SyntheticTelemetry {
public:
    // Options are clamped into range (topK <= nExperts, denseLayers < nLayers, ...).
    explicit SyntheticTelemetry(SyntheticOptions opt = {});

    // Advances one decoded token and returns the new snapshot (serial + 1).
    const TierStatus& step();
    const TierStatus& status() const { return m_status; }
    const SyntheticOptions& options() const { return m_opt; }
    uint64_t tokens() const { return m_tokens; }
    // True when the token of the last step() began a new answer (every turnTokens tokens; the
    // first token is one).
    bool turnStarted() const { return m_turnStarted; }

    // A click on (layer, expert): pins it as a user pin (resident at once in this simulation,
    // shown with kUserPinFlag); a user pin or a learned pin is unpinned (it stays cached).
    // Out-of-range cells and dense layers are ignored (false).
    bool toggleUserPin(int layer, int expert);

private:
    uint64_t nextBits();
    double nextUnit(); // [0, 1)
    void drift();
    void publish();
    int moeLayers() const { return m_opt.nLayers - m_opt.denseLayers; }

    SyntheticOptions m_opt;
    std::mt19937_64 m_rng;
    TierStatus m_status;
    uint64_t m_tokens = 0;
    bool m_turnStarted = false;
    // Per MoE-layer popularity: cumulative weights over experts (for sampling by bisection).
    std::vector<std::vector<double>> m_cumulative;
    std::vector<std::vector<double>> m_base; // the fixed Zipf weights per layer
    std::vector<int> m_topicShift;           // per layer: rotates which experts are hot now
    std::vector<uint64_t> m_lastUse;         // per cell: token of the last routing (LRU)
    std::vector<int> m_loadLeft;             // per cell: tokens until a read completes
    std::vector<uint8_t> m_userPinned;       // per cell
    int m_cached = 0;                        // cells in Cached or Loading state
    int m_vram = 0;                          // cells in Vram state
};

} // namespace coli::app
