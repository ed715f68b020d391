#include "bench_gpu_columns.h"
#include "bench_stats.h"

#include "core/number_text.h"
#include "gpu/devices.h"
#include "gpu/expert_runner.h"
#include "runtime/expert_budget.h"
#include "tiers/expert_cache.h"
#include "tiers/expert_source.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace coli::cli {

std::string parseBudget(const std::string& text, std::optional<double>* percent, uint64_t* bytes) {
    if (!text.empty() && text.back() == '%') {
        double pct = 0;
        const std::string num = text.substr(0, text.size() - 1);
        if (!parseDecimal(num, 0, 100, &pct).empty() || pct <= 0)
            return "bad percentage '" + text + "' (0 < N <= 100)";
        *percent = pct;
        return {};
    }
    *percent = std::nullopt;
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
        return "'" + text + "' is not 0, N% or a byte count";
    return parseUnsigned(text, 0, std::numeric_limits<uint64_t>::max(), bytes);
}

Result<VramAxis> vramAxis(const std::string& gpu, const Model& streamed) {
    const tiers::ExpertCache* cache = streamed.expertCache();
    gpu::ExpertShape shape;
    if (!cache || !cache->source().quantisedFormats(&shape.gateUp, &shape.down))
        return Status(ErrorCode::Unsupported,
                      "--gpu " + gpu +
                          ": the routed experts are not quantised alike (the GPU tier computes "
                          "int4/int8 experts: convert the model with `coli convert`)");
    Result<std::vector<gpu::DeviceInfo>> devices = gpu::listDevices();
    if (!devices)
        return Status(ErrorCode::Unsupported, "--gpu " + gpu + ": " + devices.status().message());
    std::string note;
    Result<int> index = gpu::chooseDevice(*devices, gpu, &note);
    if (!index) return index.status();
    if (*index < 0) { // auto found none; the note says what was skipped
        const std::string prefix = "no GPU tier: ";
        if (note.rfind(prefix, 0) == 0) note.erase(0, prefix.size());
        return Status(ErrorCode::Unsupported,
                      "--gpu " + gpu + ": no GPU found" + (note.empty() ? "" : "; " + note));
    }
    const ModelConfig& cfg = streamed.config();
    shape.dModel = cfg.dModel;
    shape.ffn = cfg.expertFfn;
    VramAxis a;
    a.gpu = gpu;
    const gpu::DeviceInfo& dev = (*devices)[size_t(*index)];
    a.device = dev.name;
    a.timestampBits = dev.timestampValidBits;
    a.timestampPeriodNs = dev.timestampPeriodNs;
    for (int l = 0; l < cfg.nLayers; ++l)
        a.totalExperts += cfg.sparseLayer[size_t(l)] ? cfg.nExperts : 0;
    a.expertBytes = shape.expertBytes();
    return a;
}

Result<VramAxis> probeVramAxis(const std::string& dir, const std::string& gpu, int threads) {
    ModelLoadOptions lo;
    lo.threads = threads;
    lo.tiers.stream = true;
    auto model = Model::load(dir, lo);
    if (!model) return model.status();
    return vramAxis(gpu, **model);
}

Result<uint64_t> vramBudgetBytes(const std::string& text, const VramAxis& axis) {
    std::optional<double> pct;
    uint64_t bytes = 0;
    if (std::string e = parseBudget(text, &pct, &bytes); !e.empty())
        return Status(ErrorCode::InvalidArgument, "--vram-budgets: " + e);
    if (pct)
        return uint64_t(
                   std::max<long long>(1, std::llround(double(axis.totalExperts) * *pct / 100.0))) *
               axis.expertBytes;
    if (bytes > 0 && bytes < axis.expertBytes)
        return Status(ErrorCode::InvalidArgument,
                      fmt::format("--vram-budgets: {} bytes hold no expert ({} bytes each)", bytes,
                                  axis.expertBytes));
    return bytes;
}

GpuCounters gpuDelta(const GpuCounters& after, const GpuCounters& before) {
    GpuCounters d = after;
    d.experts -= before.experts;
    d.jobs -= before.jobs;
    d.flagged -= before.flagged;
    d.uploadedBytes -= before.uploadedBytes;
    d.waitSeconds -= before.waitSeconds;
    d.deviceSeconds -= before.deviceSeconds;
    d.evictions -= before.evictions;
    return d;
}

void GpuRowFigures::add(const GpuCounters& decodeSteps, const GpuCounters& wholeRun, int tokens) {
    decode = decodeSteps;
    run = wholeRun;
    deviceMsPerToken.push_back(decodeSteps.deviceSeconds * 1e3 / tokens);
    waitMsPerToken.push_back(decodeSteps.waitSeconds * 1e3 / tokens);
}

std::string gpuColumnsHeader() {
    return fmt::format("{:>6} {:>9} {:>10} {:>8} {:>6} {:>5}", "vram%", "gpu_ms/t", "gwait_ms/t",
                       "MBup/run", "evict", "flag");
}

std::string gpuColumns(const GpuRowFigures& f) {
    if (!f.active)
        return fmt::format("{:>6.1f} {:>9} {:>10} {:>8} {:>6} {:>5}", 0.0, "-", "-", "-", "-", "-");
    // Jobs ran but no time was measured: the queue has no timestamps.
    const bool untimed = f.decode.jobs > 0 && f.decode.deviceSeconds == 0;
    return fmt::format("{:>6.1f} {:>9} {:>10.3f} {:>8.2f} {:>6} {:>5}", 100 * f.vramShare,
                       untimed ? std::string("n/a")
                               : fmt::format("{:.3f}", median(f.deviceMsPerToken)),
                       median(f.waitMsPerToken), double(f.run.uploadedBytes) / 1e6, f.run.evictions,
                       f.decode.flagged);
}

std::string gpuColumnsLegend() {
    return "vram% = routed experts computed in VRAM; gpu_ms/t = the device's time on expert "
           "batches per decoded token (Vulkan timestamps around each batch; n/a: the queue has "
           "no timestamps); gwait_ms/t = the forward pass waiting for the device per token "
           "(medians); MBup/run = expert bytes copied to VRAM and evict = experts replaced there "
           "over the last run (prompt and decode); flag = its decode jobs the guard sent back to "
           "the CPU; '-' = no GPU tier (VRAM budget 0)";
}

std::string describeVramAxis(const VramAxis& a) {
    const std::string stamps = a.timestampBits ? fmt::format("timestamps {} bits x {:g} ns",
                                                             a.timestampBits, a.timestampPeriodNs)
                                               : std::string("no timestamps (gpu_ms/t n/a)");
    return fmt::format("{} (--gpu {}), {}; VRAM budgets: 0 = no GPU tier, N% of the {} routed "
                       "experts ({} each, {} all), or bytes",
                       a.device, a.gpu, stamps, a.totalExperts, formatBytes(a.expertBytes),
                       formatBytes(a.allBytes()));
}

} // namespace coli::cli
