#pragma once
// Internal: the VRAM tier of a loaded model (docs/gpu.md): routed experts copied to a Vulkan
// device and computed there, bit-identical to the CPU (gpu/expert_runner.h). Owned by ModelImpl;
// used by the Fast forward pass's master thread only (docs/design.md "Threading contract": the
// master thread owns the device's queue).
// Placement today: with experts resident in RAM, every expert when they fit in the VRAM budget;
// otherwise (and always with streamed experts) experts as they are routed, until the budget is
// full (no eviction yet). Streamed experts are copied to VRAM from the RAM slot the CPU computed
// them from.
#include "core/status.h"
#include "forward/model.h"
#include "gpu/expert_runner.h"
#include "model/weights.h"
#include "tiers/expert_source.h"

#include <memory>
#include <span>
#include <string>
#include <vector>

namespace coli {

class VramExperts {
public:
    // Opens opt.gpu's device, runs the self-test, reserves min(budget, all experts) slots and
    // uploads what fits. Returns null (and *note says why, or is empty for --gpu none) when the
    // tier cannot run: no device, a failed self-test, f32 or mixed-format experts, a budget below
    // one expert. Errors: InvalidArgument when opt.gpu names no device (the message lists them).
    // streamed: the expert source when experts stream (their formats come from it), else null.
    static Result<std::unique_ptr<VramExperts>> open(const ExpertTierOptions& opt,
                                                     const ModelConfig& cfg, const ModelWeights& w,
                                                     const tiers::ExpertSource* streamed,
                                                     int maxJobs, std::string* note);
    ~VramExperts();

    // The VRAM slot of (layer, expert), -1 when it is not in VRAM.
    int slotOf(int layer, int expert) const { return m_slot[size_t(layer) * m_nExperts + expert]; }
    // Copies the expert into a free slot when there is one and its formats are the tier's
    // (admission as routed). Returns whether it is in VRAM now. While a batch is in flight only
    // free slots are written, which the batch does not read.
    bool admit(int layer, int expert, const SwiGluView& w);

    gpu::ExpertRunner& runner() { return *m_runner; }
    // Counters (cumulative): experts and (expert, token) jobs computed on the GPU, jobs the guard
    // flagged (recomputed on the CPU), bytes uploaded, seconds waited for the device.
    GpuCounters counters() const { return m_counters; }
    GpuCounters& mutableCounters() { return m_counters; }
    const std::string& deviceName() const { return m_device; }
    // ExpertTierOptions::gpuTestFlagEvery: whether the next job counts as flagged (test hook).
    bool testFlagNext() { return m_flagEvery > 0 && (m_jobSerial++ % m_flagEvery) == 0; }
    std::string description() const;

private:
    VramExperts() = default;
    std::unique_ptr<gpu::GpuContext> m_ctx;
    std::unique_ptr<gpu::ExpertRunner> m_runner;
    std::vector<int> m_slot; // [n_layers * n_experts]
    int m_nExperts = 0;
    int m_used = 0;
    GpuCounters m_counters;
    std::string m_device;
    std::string m_selfTest;
    int m_flagEvery = 0;
    int64_t m_jobSerial = 0;
};

} // namespace coli
