#pragma once
// The placement plan of `coli plan`, the model wizard and the app's Tiers view: what a model costs
// in RAM and per token at a RAM budget for its routed experts, and the decode speed to expect
// (docs/performance.md "Placement plan", docs/cli.md "coli plan").
//
// Time model (decode, one token): every resident byte the token touches is read from memory at
// R_mem, and every routed expert that misses the cache is first read from disk at R_disk:
//     B_mem  = denseBytes + moeLayers * topK * slotBytes             (bytes from memory / token)
//     B_disk = (1 - h) * moeLayers * topK * bytesPerExpert           (bytes from disk / token)
//     t_token = B_mem / R_mem + B_disk / R_disk,   tok/s = 1 / t_token
// with h the expected hit rate. Assumptions, stated so the figure can be judged:
//   - no overlap between disk reads and compute: a missed expert is read when its layer is
//     routed and the layer waits for it (the engine's prefetch hides part of it; the model
//     ignores that, so its tok/s is a floor on the I/O side);
//   - decode is memory-bound: the kernels stream their weights near R_mem (docs/performance.md:
//     0.67-0.90 of MemRead), so compute is the memory term, attention over the KV cache and
//     sampling are left out (small at short contexts);
//   - denseBytes counts the whole embedding table though a token reads one row of it (exact for
//     the rest of the dense weights, a small excess unless the vocabulary is large); it is the
//     stored size, which is what RAM holds for a colibri container (an unconverted BF16
//     checkpoint is widened to f32 in RAM, so there the memory term is low by up to 2x for the
//     dense part);
//   - an expert's memory bytes are its slotBytes: the stored blob for a container; for an
//     unconverted checkpoint the f32 it is widened to plus the raw bytes staged for that (which
//     the kernels do not read again: an excess of up to 1/2 there);
//   - every routed expert of the token is read from memory once by the kernels, hit or miss (a
//     miss lands in its slot first).
// R_mem is placement/memory_bandwidth.h's streaming read (the MemRead of `coli bench kernels`),
// R_disk diskbench::measureReadBandwidth over the model's weight files.
//
// Capacity: the experts the budget holds, runtime/expert_budget.h's expertsThatFit (the engine's
// own rule: budget slots less the working set). Hit rate h, by source:
//   - Trace / Recorded: the cache simulator (engine/cachesim) under the engine's policy (LFRU at
//     the engine's eviction half-life, tiers::CacheOptions) at that capacity, prefill chunk 1 -
//     the number `coli cache-sim --policy lfru --capacity N` prints for the same trace;
//   - Heat: the share of the learned heat held by the hottest N experts (N = capacity):
//       h = sum of the N largest decayed heats / sum of all decayed heats,
//     heat decayed to the model's token clock (storage::rankHottest). Heat counts routings, so
//     this is the hit rate of a cache that holds exactly the N most-routed experts (a static
//     hot-store of N), the engine's pinning without its LFRU turnover.
// Thread-safety: pure functions over their arguments; safe from any thread.
#include "cachesim/trace_reader.h"
#include "core/status.h"
#include "storage/heat.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace coli::placement {

// The model's shape as the plan needs it (from Model::summary() and the expert cache).
struct PlanShape {
    uint64_t denseBytes = 0;     // every weight that is not a routed expert (ModelSummary)
    uint64_t bytesPerExpert = 0; // one routed expert as stored and read (ModelSummary)
    uint64_t slotBytes = 0;      // one cache slot (ExpertCache::slotBytes; >= bytesPerExpert)
    int moeLayers = 0;
    int expertsPerLayer = 0;
    int topK = 0;
    int workingSlots = 0; // ExpertCache::workingSlots(topK, I/O queue depth)
    int totalExperts() const { return moeLayers * expertsPerLayer; }
    uint64_t expertBytes() const { return uint64_t(totalExperts()) * bytesPerExpert; }
    uint64_t minimumBudget() const { return uint64_t(workingSlots) * slotBytes; }
};

enum class HitRateSource {
    None,     // no estimate: every expert fits (h = 1) or nothing fits (h = 0)
    Trace,    // a given routing trace, simulated
    Heat,     // learned heat (the usage database), the formula above
    Recorded, // a trace recorded from the built-in prompt, simulated
};
// "none", "trace", "heat", "recorded".
const char* hitRateSourceName(HitRateSource s);

struct PlacementPlan {
    PlanShape shape;
    uint64_t budgetBytes = 0;       // RAM for routed experts, working set included
    uint64_t workingSetBytes = 0;   // the part reads in flight and the token's experts take
    uint64_t cachedExpertBytes = 0; // expertsThatFit * slotBytes: the hot-store and cache
    int expertsThatFit = 0;         // of shape.totalExperts()
    double hitRate = 0;             // h in [0, 1]
    HitRateSource hitRateSource = HitRateSource::None;
    double memBytesPerToken = 0;   // B_mem
    double diskBytesPerToken = 0;  // B_disk
    double memBytesPerSecond = 0;  // R_mem
    double diskBytesPerSecond = 0; // R_disk
    double secondsPerToken = 0;    // t_token (0 when a rate is missing)
    double tokensPerSecond = 0;    // 1 / t_token (0 when a rate is missing)
};

// The plan at `budgetBytes` (clamped up to shape.minimumBudget(): the engine refuses less) with
// hit rate `hitRate` from `source` and the two measured rates (bytes/s; 0 = unknown, then the
// time is 0). When every expert fits the hit rate is 1 and when none does 0, whatever is given
// (source None). Errors: InvalidArgument for a shape without experts or slots, a slot smaller
// than an expert, a hit rate outside [0, 1] or negative rates.
Result<PlacementPlan> makePlan(const PlanShape& shape, uint64_t budgetBytes, double hitRate,
                               HitRateSource source, double memBytesPerSecond,
                               double diskBytesPerSecond);

// The heat formula above: share of the decayed heat (at nowTokens, half-life halfLifeTokens > 0)
// held by the `capacity` hottest records. 0 when there is no heat; 1 when capacity covers every
// record with heat. Negative capacity counts as 0.
double heatHitRate(std::span<const storage::HeatRecord> records, int capacity, int64_t nowTokens,
                   double halfLifeTokens);

// The simulator's hit rate of `traces` under the engine's policy (LFRU, the engine's eviction
// half-life, prefill chunk 1) at `capacity` experts. Errors: those of buildAccessSequence and
// simulate (InvalidArgument naming the traces), and InvalidArgument when the traces' shape
// (MoE layers x experts, top-k) is not `shape`'s (a trace of another model).
Result<double> traceHitRate(std::span<const cachesim::RoutingTraceFile> traces,
                            const PlanShape& shape, int capacity);

} // namespace coli::placement
