#pragma once
// Where a Fast-path forward spends its time, phase by phase. The Fast path (forward_fast.cpp,
// fast_mla.cpp) runs each chunk of tokens as phases separated by team barriers (fast_team.h);
// with a PhaseTimes given (ForwardTimes::phases), every thread adds, per phase, the time from its
// previous barrier to this phase's barrier (work: its share of the phase) and the time it then
// waited there for the others (wait: the imbalance between threads). `coli bench decode
// --resident --phases` prints the sums (docs/performance.md has tables of them).
// Cost: one branch per barrier when off; two steady_clock reads per barrier and thread when on.
#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace coli {

// The phases, each named after the work that ends at its barrier. A phase a model does not have
// (MLA's q_a norm, a dense layer's MLP) is never recorded.
enum class Phase : uint8_t {
    Embedding,     // the chunk's embedding rows
    AttentionNorm, // RMSNorm before attention, quantised for the projections
    Projections,   // q/k/v projections (MLA: q or q_a and kv_a)
    QLoraNorm,     // MLA: q_a's RMSNorm
    QbProjection,  // MLA: q_b
    RopeKvAppend,  // q/k norms, clipping, RoPE, the new rows appended to the KV cache
    Attention,     // scores, softmax and values over the KV cache (o's input quantised)
    OQuantise,     // o's input quantised in a phase of its own (some head sizes)
    OProjection,   // o projection and the residual add
    FfnNorm,       // RMSNorm before the MLP or MoE block
    Router,        // router (and shared-expert gate) projection
    Routing,       // top-k, the expert cache's layer start, lookahead (master)
    Gather,        // routed experts' input rows gathered (tokens of a chunk)
    GateUp,        // gate/up projections (split rows, or the streamed expert at hand)
    Down,          // down projections when a barrier follows them alone
    WholeExperts,  // decode: whole routed experts per thread (+ the shared expert's gate/up)
    ExpertHandout, // streamed: the next expert handed out by the cache (master)
    DownCombine,   // down projections, the experts' weighted sum and the residual add
    FinalNorm,     // the final RMSNorm
    LmHead,        // the LM head (no barrier follows: the chunk's end)
    kCount
};
constexpr size_t kPhaseCount = size_t(Phase::kCount);

// The phase's name as printed ("q/k/v projections", ...). Thread-safety: pure.
std::string_view phaseName(Phase p);

// One thread's sums for one phase: seconds of work, seconds waited at the barrier, and how many
// times the phase ran (once per layer and chunk for most).
struct PhaseCell {
    double workSeconds = 0;
    double waitSeconds = 0;
    int64_t count = 0;
};

// Per-thread, per-phase sums over the chunks a forward() runs; forward() ADDS to them. Which
// chunks: decode steps (one token) when prefill is false, chunks of more than one token when it
// is true. threads grows to the team's size; row i is thread i's (0 = the master).
// Thread-safety: during a forward() each thread writes only its own row; read it after forward()
// returns, and do not share one PhaseTimes between concurrent forward() calls.
struct PhaseTimes {
    bool prefill = false;
    int64_t chunks = 0; // chunks recorded
    std::vector<std::array<PhaseCell, kPhaseCount>> threads;
};

} // namespace coli
