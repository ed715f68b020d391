#pragma once
// Internal: the VRAM tier of a loaded model (docs/gpu.md): routed experts copied to a Vulkan
// device and computed there, bit-identical to the CPU (gpu/expert_runner.h). Owned by ModelImpl;
// used by the Fast forward pass's master thread only (docs/design.md "Threading contract": the
// master thread owns the device's queue).
// Placement today (experts resident in RAM): every expert when they fit in the VRAM budget, else
// experts as they are routed, until the budget is full (no eviction yet).
#include "core/status.h"
#include "forward/model.h"
#include "gpu/expert_runner.h"
#include "model/weights.h"

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
    static Result<std::unique_ptr<VramExperts>> open(const ExpertTierOptions& opt,
                                                     const ModelConfig& cfg, const ModelWeights& w,
                                                     int maxJobs, std::string* note);
    ~VramExperts();

    // The VRAM slot of (layer, expert), -1 when it is not in VRAM.
    int slotOf(int layer, int expert) const { return m_slot[size_t(layer) * m_nExperts + expert]; }
    // Copies the expert into a free slot when there is one (admission as routed). Returns whether
    // it is in VRAM now. Not while a batch is in flight.
    bool admit(int layer, int expert, const SwiGluWeights& w);

    gpu::ExpertRunner& runner() { return *m_runner; }
    // Counters (cumulative): experts and (expert, token) jobs computed on the GPU, jobs the guard
    // flagged (recomputed on the CPU), bytes uploaded, seconds waited for the device.
    GpuCounters counters() const { return m_counters; }
    GpuCounters& mutableCounters() { return m_counters; }
    const std::string& deviceName() const { return m_device; }
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
};

} // namespace coli
