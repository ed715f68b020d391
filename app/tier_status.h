#pragma once
// What the Tiers view draws, as one plain value published latest-wins by the engine thread after
// every forward step (a decode token or a prefill chunk), after a load and after a budget or
// prefetch change (threading contract rule 4: aggregated in the engine, sampled by the GUI at
// ~30 Hz; never one event per expert). Counters are cumulative since the model was loaded: the
// GUI takes differences for "the last token" and "this session".
// Thread-safety: a plain value.
#include "plan_figures.h"
#include "tiers/tier_telemetry.h"

#include <cstdint>
#include <string>

namespace coli::app {

struct TierStatus {
    uint64_t serial = 0;    // incremented at every publication (0: no model with streamed experts)
    uint64_t loadId = 0;    // the Load command of the model (another: a new session)
    bool streaming = false; // routed experts stream through the expert cache
    tiers::TierCounters counters; // cumulative since load
    tiers::TierCounters last;     // the last forward step's counters (after - before); its
                                  // `tokens` is the step's tokens (1 for a decode token)
    // The decode steps' part of `counters` (steps after a turn's prompt ran); counters -
    // decodeCounters is the prompts' part. A prefill chunk reads each routed expert once for all
    // its tokens, so the two read per token differ and are shown apart.
    tiers::TierCounters decodeCounters;
    tiers::TierCounters lastDecode; // the last decode step's counters (tokens == 1)
    tiers::TierResidency residency; // after the last step
    int pinCapacity = 0;            // experts the hot-store may hold under this budget
    uint64_t minimumBudget = 0;     // bytes: the working set (the smallest budget allowed)
    uint64_t maximumBudget = 0;     // bytes: every routed expert + the working set
    bool prefetch = false;          // router-lookahead prefetch on
    bool directIo = false;          // every expert file read through O_DIRECT
    // "O_DIRECT", "buffered" or "O_DIRECT (N of M files buffered)" (aio::IoPool::readModeText)
    std::string readMode;
    std::string backend;          // "io_uring" or "pread-threads"
    uint64_t expertReadBytes = 0; // bytes read from disk per expert
    std::string source;           // what the experts are read from ("colibri container", ...)
    tiers::ExpertMap experts;     // per-expert state and cumulative hits (Brain, Atlas)
    double busySeconds = 0;       // engine-thread wall time spent generating since load (seconds)
    // The placement plan at the budget in force (plan_figures.h), beside the measured figures:
    // recomputed at load, budget change, learned usage and after each answer.
    PlanFigures plan;
    double lastDecodeTokensPerSecond = -1; // the last answer's decode tok/s; -1 before one
    tiers::MirrorStatus mirror;            // the mirror on a second disk (docs/mirror.md), if any
};

} // namespace coli::app
