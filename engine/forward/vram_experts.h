#pragma once
// Internal: the VRAM tier of a loaded model (docs/gpu.md): routed experts copied to a Vulkan
// device and computed there, bit-identical to the CPU (gpu/expert_runner.h). Owned by ModelImpl;
// used by the Fast forward pass's master thread only (docs/design.md "Threading contract": the
// master thread owns the device's queue).
// Which experts hold the slots is tiers::VramPlacement's choice (learned pins, then LFU with
// forgetting and an admission margin; everything when it fits). Streamed experts are copied to
// VRAM from the RAM slot the CPU computed them from; resident ones from their RAM copy.
#include "core/status.h"
#include "forward/model.h"
#include "gpu/expert_runner.h"
#include "model/weights.h"
#include "tiers/expert_source.h"
#include "tiers/vram_placement.h"

#include <algorithm>
#include <memory>
#include <optional>
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
    // On a device sharing the system's memory the default budget (gpu::defaultVramBudget) is at
    // most a quarter of the shared heap, and with streamed experts the tier's bytes count in the
    // RAM budget (ExpertCache::setVramCapacity).
    static Result<std::unique_ptr<VramExperts>> open(const ExpertTierOptions& opt,
                                                     const ModelConfig& cfg, const ModelWeights& w,
                                                     const tiers::ExpertSource* streamed,
                                                     int maxJobs, std::string* note);
    ~VramExperts();

    // The VRAM slot of (layer, expert) when its bytes are there, -1 otherwise.
    int slotOf(int layer, int expert) const {
        return m_place->ready({layer, expert}) ? m_place->slotOf({layer, expert}) : -1;
    }
    // Heat: `count` tokens of the current chunk routed to (layer, expert); call before admit().
    void use(int layer, int expert, int count) { m_place->use({layer, expert}, count); }
    // n tokens were processed (the heat clock).
    void endTokens(int n) { m_place->endTokens(n); }
    // Copies the expert to VRAM when the placement gives it a slot (a reserved pin slot, a free
    // one, or a colder expert's that no batch reads) and its formats are the tier's. Returns
    // whether it is in VRAM now; *evicted (when not null) receives the expert it replaced, or
    // {-1, -1}.
    bool admit(int layer, int expert, const SwiGluView& w, tiers::ExpertId* evicted = nullptr);
    // Learned VRAM pins (tiers::VramPlacement::setPins): the hottest first. Resident experts
    // (`w` not null) are copied now; streamed ones fill their reserved slot when first routed.
    // Returns the pins now in force. Call before the first forward() (with streamed experts
    // nothing is in VRAM yet, so no expert the expert cache shows in VRAM is replaced).
    std::vector<tiers::ExpertId> setPins(const std::vector<tiers::ExpertId>& hottestFirst,
                                         const ModelWeights* w);
    std::vector<tiers::ExpertId> pins() const { return m_place->pins(); }
    // Model::setVramBudget: the slots become min(every routed expert, bytes / expert bytes).
    // Returns the experts that left VRAM. Errors: InvalidArgument below one expert; those of
    // gpu::ExpertRunner::resize (nothing changes then).
    Result<std::vector<tiers::ExpertId>> setBudget(uint64_t bytes);
    int pinCapacity() const { return m_place->pinCapacity(); }
    // The slots of the batch being built or in flight (never overwritten): gpuSubmit marks each
    // job's slot, clearBusy() after the batch was waited for.
    void markBusy(int slot) { m_busy[size_t(slot)] = 1; }
    void clearBusy() { std::fill(m_busy.begin(), m_busy.end(), 0); }

    gpu::ExpertRunner& runner() { return *m_runner; }
    // Counters (cumulative): experts and (expert, token) jobs computed on the GPU, jobs the guard
    // flagged (recomputed on the CPU), bytes uploaded, seconds waited for the device.
    GpuCounters counters() const {
        GpuCounters c = m_counters;
        c.resident = m_place->readyCount();
        c.evictions = m_place->evictions();
        return c;
    }
    GpuCounters& mutableCounters() { return m_counters; }
    const std::string& deviceName() const { return m_device; }
    // The device's memory is the system's (gpu::DeviceInfo::sharesSystemMemory).
    bool sharesSystemMemory() const { return m_shared; }
    // System RAM the tier holds (bytes): every slot on a device sharing the system's memory, else
    // the upload staging ring (gpu::ExpertRunner::stagingBytes). It counts in the RAM budget.
    uint64_t ramBytes() const;
    uint64_t budgetBytes() const { return m_budget; } // the VRAM budget in force (bytes)
    // ExpertTierOptions::gpuTestFlagEvery: whether the next job counts as flagged (test hook).
    bool testFlagNext() { return m_flagEvery > 0 && (m_jobSerial++ % m_flagEvery) == 0; }
    std::string description() const;

private:
    VramExperts() = default;
    std::unique_ptr<gpu::GpuContext> m_ctx;
    std::unique_ptr<gpu::ExpertRunner> m_runner;
    bool copy(int slot, const SwiGluView& w);
    std::optional<tiers::VramPlacement> m_place; // set in open()
    std::vector<uint8_t> m_busy;                 // [slots]
    GpuCounters m_counters;
    std::string m_device;
    std::string m_selfTest;
    int m_flagEvery = 0;
    bool m_shared = false;
    int m_total = 0; // routed experts of the model
    uint64_t m_budget = 0;
    int64_t m_jobSerial = 0;
};

} // namespace coli
