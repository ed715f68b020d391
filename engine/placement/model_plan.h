#pragma once
// The whole placement plan of a loaded model, as `coli plan` prints it and the model wizard's
// Check page shows it: the shape (plan_inputs.h), the hit rate at the expert cache's budget in
// force from the best source there is, the measured (or given) memory and disk read rates, and
// placement_plan.h's makePlan over them. One function so that the CLI and the app cannot drift.
//
// Hit rate, in order (docs/cli.md "coli plan"):
//   1. a routing trace file (ModelPlanOptions::traceFile), read and checked against the model
//      even when the budget alone decides the hit rate;
//   2. the learned heat of the usage database (unless useHeat is false), when it has heat > 0 for
//      the model (found by weight identity, storage/model_identity.h);
//   3. a trace recorded by running the built-in prompt (routing_recorder.h: about 60 prompt
//      tokens and kBuiltinPlanNewTokens greedy ones), simulated.
// Steps 2 and 3 run only when the budget holds some experts but not all (otherwise h is 0 or 1).
// Thread-safety: call from the thread that owns the model's forward() (step 3 runs it); the
// progress callback runs on that thread. Opens and closes its own database connection.
#include "core/status.h"
#include "placement/placement_plan.h"
#include "runtime/session.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace coli::placement {

struct ModelPlanOptions {
    std::string traceFile; // a `coli trace` JSON-lines file; "" = none
    bool useHeat = true;   // false: never read the usage database (`--no-learn`)
    std::string usageDb;   // the usage database; "" = storage::defaultDatabasePath()
    std::optional<double> memBytesPerSecond;   // given R_mem (bytes/s) instead of measuring it
    std::optional<double> diskBytesPerSecond;  // given R_disk (bytes/s) instead of measuring it
    uint64_t diskReadBytes = 256ull << 20;     // bytes the disk measurement reads at most
    const std::atomic<bool>* cancel = nullptr; // checked while recording the built-in prompt
    // Called before each long step: "recording" (running the built-in prompt), "memory"
    // (measuring R_mem, about a second), "disk" (measuring R_disk).
    std::function<void(const std::string& step)> progress;
};

// Which step failed (the CLI maps it to an exit code).
enum class PlanStep { None, Shape, Trace, Record, Memory, Disk, Plan };

struct ModelPlanReport {
    PlacementPlan plan;
    std::string hitRateDetail; // where h came from, in words ("share of learned heat in ...")
    std::string memFrom;       // "measured: streaming read of 256 MiB, ..." or "given"
    std::string diskFrom;      // "measured: 256 MiB of random reads over 3 weight files, ..."
    int recordedTokens = 0;    // source Recorded: the trace's tokens (prompt + generated)
    // Problems that did not stop the plan: the usage database could not be read (heat not used).
    std::vector<std::string> warnings;
    // The VRAM tier (docs/gpu.md), when the model has one: its device, the experts its budget
    // holds, and the expected share of routed experts computed there: the hit rate of the same
    // source at the tier's size (heat: its hottest experts; a trace: the RAM cache's policy
    // simulated at that size, an estimate of VramPlacement's). The time model does not count
    // the GPU yet (plan.secondsPerToken is the CPU's).
    std::string gpuDevice; // "" = no GPU tier
    int vramExperts = 0;
    uint64_t vramBudgetBytes = 0;
    double vramShare = 0;
    bool vramShareKnown = false; // no source gave it (no heat, and h needed no trace)
};

// The plan of `lm` (loaded from `modelDir` with streamed experts) at its expert cache's budget.
// Errors (failedAt, when not null, says the step): InvalidArgument (Shape: the experts do not
// stream; Trace: "--trace: " + the trace's error or a trace of another model), the forward
// pass's error or Cancelled (Record), Internal/Io (Memory: "memory bandwidth: ..."), those of
// modelWeightFiles and measureReadBandwidth naming the file (Disk: "disk bandwidth: ...").
Result<ModelPlanReport> planLoadedModel(const LoadedModel& lm, const std::string& modelDir,
                                        const ModelPlanOptions& options,
                                        PlanStep* failedAt = nullptr);

} // namespace coli::placement
