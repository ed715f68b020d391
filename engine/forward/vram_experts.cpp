#include "forward/vram_experts.h"

#include "gpu/devices.h"
#include "gpu/self_test.h"

#include <fmt/format.h>

#include <algorithm>

namespace coli {

namespace {

// The format shared by every routed expert's gate/up and down, or why there is none.
bool expertFormats(const ModelWeights& w, gpu::ExpertShape* s, std::string* why) {
    bool first = true;
    for (const auto& layer : w.experts)
        for (const SwiGluWeights& e : layer) {
            if (!e.gate.quantised() || !e.up.quantised() || !e.down.quantised()) {
                *why = "the routed experts are f32 (the GPU tier computes quantised experts: "
                       "convert the model or --quantise experts=int4-g64)";
                return false;
            }
            if (first) {
                s->gateUp = e.gate.qfmt;
                s->down = e.down.qfmt;
                first = false;
            }
            if (e.gate.qfmt != s->gateUp || e.up.qfmt != s->gateUp || e.down.qfmt != s->down) {
                *why = "the routed experts mix formats";
                return false;
            }
        }
    if (first) *why = "the model has no routed experts in RAM";
    return !first;
}

} // namespace

VramExperts::~VramExperts() = default;

Result<std::unique_ptr<VramExperts>>
VramExperts::open(const ExpertTierOptions& opt, const ModelConfig& cfg, const ModelWeights& w,
                  const tiers::ExpertSource* streamed, int maxJobs, std::string* note) {
    note->clear();
    if (opt.gpu == "none") return std::unique_ptr<VramExperts>();
    gpu::ExpertShape shape;
    shape.dModel = cfg.dModel;
    shape.ffn = cfg.expertFfn;
    std::string why;
    if (streamed ? !streamed->quantisedFormats(&shape.gateUp, &shape.down)
                 : !expertFormats(w, &shape, &why)) {
        if (streamed)
            why = "the streamed experts are not quantised alike (the GPU tier computes int4/int8 "
                  "experts: convert the model)";
        *note = "no GPU tier: " + why;
        return std::unique_ptr<VramExperts>();
    }
    Result<std::vector<gpu::DeviceInfo>> devices = gpu::listDevices();
    if (!devices) {
        if (opt.gpu != "auto")
            return Status(ErrorCode::InvalidArgument,
                          "--gpu " + opt.gpu + ": " + devices.status().message());
        *note = "no GPU tier: " + devices.status().message();
        return std::unique_ptr<VramExperts>();
    }
    Result<int> index = gpu::chooseDevice(*devices, opt.gpu, note);
    if (!index) return index.status();
    if (*index < 0) return std::unique_ptr<VramExperts>();
    const gpu::DeviceInfo& dev = (*devices)[size_t(*index)];
    Result<std::unique_ptr<gpu::GpuContext>> ctx = gpu::GpuContext::create(dev);
    if (!ctx) {
        *note = "no GPU tier: " + ctx.status().message();
        return std::unique_ptr<VramExperts>();
    }
    if (opt.gpuTestStaging) (*ctx)->setStagedUploadsForTesting(true);
    gpu::SelfTestOptions so;
    so.cachePath =
        opt.gpuSelfTestCache.empty() ? gpu::defaultSelfTestCache() : opt.gpuSelfTestCache;
    Result<gpu::SelfTestResult> test = gpu::runSelfTest(**ctx, so);
    if (!test || !test->passed) {
        *note = test ? test->message
                     : dev.name + ": GPU self-test could not run (" + test.status().message() +
                           "); experts run on the CPU";
        return std::unique_ptr<VramExperts>();
    }
    const uint64_t per = shape.expertBytes();
    const uint64_t budget = opt.vramBudgetBytes
                                ? opt.vramBudgetBytes
                                : gpu::defaultVramBudget(dev, dev.deviceLocalBytes / 4);
    int total = 0;
    for (int l = 0; l < cfg.nLayers; ++l)
        total += cfg.sparseLayer[size_t(l)] ? cfg.nExperts : 0;
    const int slots = int(std::min<uint64_t>(uint64_t(total), budget / per));
    if (slots < 1) {
        *note = fmt::format("no GPU tier: a VRAM budget of {} bytes holds no expert ({} bytes)",
                            budget, per);
        return std::unique_ptr<VramExperts>();
    }
    Result<std::unique_ptr<gpu::ExpertRunner>> runner =
        gpu::ExpertRunner::create(**ctx, shape, slots, maxJobs);
    if (!runner) {
        *note = "no GPU tier: " + runner.status().message();
        return std::unique_ptr<VramExperts>();
    }
    std::unique_ptr<VramExperts> v(new VramExperts);
    v->m_ctx = std::move(*ctx);
    v->m_runner = std::move(*runner);
    v->m_place.emplace(cfg.nLayers, cfg.nExperts, slots);
    v->m_busy.assign(size_t(slots), 0);
    v->m_device = dev.name;
    v->m_selfTest = test->message;
    v->m_flagEvery = opt.gpuTestFlagEvery;
    v->m_shared = dev.sharesSystemMemory;
    v->m_total = total;
    v->m_budget = budget;
    v->m_counters.capacity = slots;
    v->m_counters.expertBytes = per;
    if (slots == total && !streamed) // everything fits: place it all now
        for (int l = 0; l < cfg.nLayers; ++l)
            for (int e = 0; e < int(w.experts[size_t(l)].size()); ++e)
                if (!v->admit(l, e, w.experts[size_t(l)][size_t(e)])) break;
    *note = v->description();
    return v;
}

bool VramExperts::copy(int slot, const SwiGluView& w) {
    const gpu::ExpertShape& s = m_runner->shape();
    if (!w.gate.q || !w.up.q || !w.down.q || w.gate.qfmt != s.gateUp || w.up.qfmt != s.gateUp ||
        w.down.qfmt != s.down || !m_runner->upload(slot, w.gate.q, w.up.q, w.down.q).isOk()) {
        m_place->release(slot);
        return false;
    }
    m_place->markReady(slot);
    m_counters.uploadedBytes += s.expertBytes();
    return true;
}

bool VramExperts::admit(int layer, int expert, const SwiGluView& w, tiers::ExpertId* evicted) {
    if (evicted) *evicted = {-1, -1};
    if (m_place->ready({layer, expert})) return true;
    tiers::ExpertId out{-1, -1};
    const int slot = m_place->place(
        {layer, expert}, [this](int s) { return m_busy[size_t(s)] != 0; }, &out);
    if (slot < 0) return false;
    if (evicted) *evicted = out;
    return copy(slot, w);
}

std::vector<tiers::ExpertId> VramExperts::setPins(const std::vector<tiers::ExpertId>& hottestFirst,
                                                  const ModelWeights* w) {
    const auto copies =
        m_place->setPins(hottestFirst, [this](int s) { return m_busy[size_t(s)] != 0; });
    if (w)
        for (const tiers::VramPlacement::Assignment& a : copies)
            copy(a.slot, w->experts[size_t(a.id.layer)][size_t(a.id.expert)]);
    return m_place->pins();
}

Result<std::vector<tiers::ExpertId>> VramExperts::setBudget(uint64_t bytes) {
    const uint64_t per = m_runner->shape().expertBytes();
    const int slots = int(std::min<uint64_t>(uint64_t(m_total), bytes / per));
    if (slots < 1)
        return Status(
            ErrorCode::InvalidArgument,
            fmt::format("a VRAM budget of {} bytes holds no expert ({} bytes each)", bytes, per));
    Result<int> firstLost = m_runner->resize(slots);
    if (!firstLost) return firstLost.status();
    std::vector<tiers::ExpertId> left = m_place->resize(slots, *firstLost);
    m_busy.assign(size_t(slots), 0);
    m_counters.capacity = slots;
    m_budget = bytes;
    return left;
}

uint64_t VramExperts::ramBytes() const {
    return m_shared ? uint64_t(m_runner->slots()) * m_runner->shape().expertBytes()
                    : m_runner->stagingBytes();
}

std::string VramExperts::description() const {
    const uint64_t per = m_runner->shape().expertBytes();
    return fmt::format("GPU tier: {} experts in VRAM ({:.2f} MiB each, {:.1f} MiB). {}",
                       m_runner->slots(), double(per) / 1048576.0,
                       double(per) * m_runner->slots() / 1048576.0, m_selfTest);
}

} // namespace coli
