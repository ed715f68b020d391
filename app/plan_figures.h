#pragma once
// The placement plan's figures for the Tiers view (engine/placement/placement_plan.h), beside the
// measured ones: the expected hit rate and decode tok/s at the budget in force. Computed on the
// engine thread (docs/design.md threading rules 1 and 4: the engine computes, the GUI samples the
// published value): the rates once per load (measurePlanRates: about a second of reads, at load
// time only), the plan at load, at a budget change, when the learned usage arrives and after each
// answer (plainly arithmetic over the cache's heat: microseconds).
// The app's hit rate comes from learned heat only (the usage database's, then this session's
// routings as the cache learns them): recording a trace of a built-in prompt, as `coli plan`
// does, would run the model for a minute on a large one at every load.
// Thread-safety: plain values; the functions read the model and its cache on the calling thread.
#include "forward/model.h"

#include <string>

namespace coli::app {

struct PlanRates {
    double memBytesPerSecond = 0;  // placement::measureMemoryReadBandwidth (256 MiB buffer)
    double diskBytesPerSecond = 0; // diskbench::measureReadBandwidth over the weight files
    std::string error;             // why a rate is 0 ("" when both were measured)
};

struct PlanFigures {
    bool valid = false;          // false: no streamed experts, or the plan failed (see error)
    double hitRate = -1;         // expected hit rate in [0, 1]; -1: no learned heat yet
    std::string hitSource;       // "heat", "all fit", "none fit", "" (no estimate)
    int expertsThatFit = 0;      // of the routed experts
    double tokensPerSecond = -1; // expected decode tok/s; -1: unknown (no hit rate or no rates)
    std::string error;
};

// Measures the memory read bandwidth and the disk's over the model folder's weight files
// (placement/plan_inputs.h). A failed measurement leaves its rate 0 and says why in `error`.
PlanRates measurePlanRates(const std::string& modelDir);

// The plan at the expert cache's budget in force, with the hit rate from the cache's learned
// heat (placement::heatHitRate over ExpertCache::heatSnapshot, decayed to now).
PlanFigures computePlanFigures(const Model& model, const PlanRates& rates);

} // namespace coli::app
