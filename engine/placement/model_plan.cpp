#include "placement/model_plan.h"

#include "diskbench/disk_bandwidth.h"
#include "placement/memory_bandwidth.h"
#include "placement/plan_inputs.h"
#include "placement/routing_recorder.h"
#include "runtime/expert_budget.h"
#include "storage/database.h"
#include "storage/location.h"
#include "storage/model_identity.h"

#include <fmt/core.h>

#include <utility>

namespace coli::placement {
namespace {

Status failed(PlanStep step, PlanStep* failedAt, Status st) {
    if (failedAt) *failedAt = step;
    return st;
}

// The learned heat of the model in the usage database as a hit rate at `capacity`; nullopt when
// the database has no heat for the model, or cannot be read (then a warning says why).
std::optional<double> learnedHitRate(const std::string& modelDir, const ModelPlanOptions& o,
                                     int capacity, ModelPlanReport& report) {
    auto warn = [&](const std::string& msg) {
        report.warnings.push_back(msg + "; heat not used");
        return std::nullopt;
    };
    Result<std::string> path =
        o.usageDb.empty() ? storage::defaultDatabasePath() : Result<std::string>(o.usageDb);
    if (!path) return warn("usage database: " + path.status().message());
    auto db = storage::Storage::open(*path);
    if (!db) return warn("usage database: " + db.status().message());
    auto identity = storage::modelIdentity(modelDir, db.value().get());
    if (!identity) return warn(identity.status().message());
    auto id = db.value()->findModel(*identity);
    if (!id || !id.value()) return std::nullopt;
    auto heat = db.value()->loadHeat(**id);
    auto clock = db.value()->tokenClock(**id);
    if (!heat || !clock)
        return warn("usage database: " + (heat ? clock.status() : heat.status()).message());
    bool any = false;
    for (const auto& r : *heat)
        any = any || r.heat > 0;
    if (!any) return std::nullopt;
    report.hitRateDetail =
        fmt::format("share of learned heat in the hottest {} experts ({})", capacity, *path);
    return heatHitRate(*heat, capacity, *clock, storage::kDefaultHalfLifeTokens);
}

} // namespace

Result<ModelPlanReport> planLoadedModel(const LoadedModel& lm, const std::string& modelDir,
                                        const ModelPlanOptions& o, PlanStep* failedAt) {
    if (failedAt) *failedAt = PlanStep::None;
    auto step = [&](const char* s) {
        if (o.progress) o.progress(s);
    };
    ModelPlanReport report;
    auto shape = planShape(lm.model());
    if (!shape) return failed(PlanStep::Shape, failedAt, shape.status());
    // The RAM slots' budget: without what the VRAM tier holds in system RAM.
    const tiers::ExpertCache& cache = *lm.model().expertCache();
    const uint64_t budget = cache.budget() - cache.vramTierRamBytes();
    const int capacity =
        expertsThatFit(budget, shape->slotBytes, shape->workingSlots, shape->totalExperts());

    double hitRate = 0;
    HitRateSource source = HitRateSource::None;
    // The VRAM tier's size, and the hit rate at it from the source that gives h.
    const GpuCounters gpu = lm.model().gpuCounters();
    const int vramCap = lm.model().gpuActive() ? std::min(gpu.capacity, shape->totalExperts()) : 0;
    std::optional<double> vramShare;
    if (vramCap >= shape->totalExperts() && vramCap > 0) vramShare = 1.0;
    const bool needHitRate = capacity > 0 && capacity < shape->totalExperts();
    if (!o.traceFile.empty()) {
        auto t = cachesim::readRoutingTrace(o.traceFile);
        if (!t)
            return failed(PlanStep::Trace, failedAt,
                          Status(t.status().code(), "--trace: " + t.status().message()));
        auto h = traceHitRate({&t.value(), 1}, *shape, capacity);
        if (!h)
            return failed(PlanStep::Trace, failedAt,
                          Status(h.status().code(), "--trace: " + h.status().message()));
        hitRate = *h;
        source = HitRateSource::Trace;
        if (!vramShare && vramCap > 0)
            if (auto v = traceHitRate({&t.value(), 1}, *shape, vramCap)) vramShare = *v;
        report.hitRateDetail =
            fmt::format("cache simulator (lfru) over {} ({} tokens)", o.traceFile, t->nTokens());
    }
    if (needHitRate && source == HitRateSource::None && o.useHeat) {
        if (auto h = learnedHitRate(modelDir, o, capacity, report)) {
            hitRate = *h;
            source = HitRateSource::Heat;
        }
    }
    if (!vramShare && vramCap > 0 && o.useHeat && o.traceFile.empty() &&
        (source == HitRateSource::Heat || !needHitRate)) {
        // h came from heat, or needed no source (heat not asked yet): heat gives the VRAM share.
        const std::string detail = report.hitRateDetail;
        vramShare = learnedHitRate(modelDir, o, vramCap, report);
        report.hitRateDetail = detail;
    }
    const bool needVramShare = vramCap > 0 && !vramShare;
    if ((needHitRate || needVramShare) && source == HitRateSource::None) {
        step("recording");
        auto t = recordRoutingTrace(lm, builtinPlanPrompt(), kBuiltinPlanNewTokens, o.cancel,
                                    "the built-in prompt");
        if (!t) return failed(PlanStep::Record, failedAt, t.status());
        if (needHitRate) {
            auto h = traceHitRate({&t.value(), 1}, *shape, capacity);
            if (!h) return failed(PlanStep::Record, failedAt, h.status());
            hitRate = *h;
            source = HitRateSource::Recorded;
            report.recordedTokens = t->nTokens();
            report.hitRateDetail =
                fmt::format("cache simulator (lfru) over the built-in prompt ({} tokens recorded)",
                            t->nTokens());
        }
        if (needVramShare)
            if (auto v = traceHitRate({&t.value(), 1}, *shape, vramCap)) vramShare = *v;
    }
    report.vramShareKnown = vramShare.has_value();

    double memRate = 0, diskRate = 0;
    if (o.memBytesPerSecond) {
        memRate = *o.memBytesPerSecond;
        report.memFrom = "given";
    } else {
        step("memory");
        auto m = measureMemoryReadBandwidth();
        if (!m)
            return failed(PlanStep::Memory, failedAt,
                          Status(m.status().code(), "memory bandwidth: " + m.status().message()));
        memRate = m->bytesPerSecond;
        report.memFrom = fmt::format("measured: streaming read of {} MiB, median of {}, {} threads",
                                     m->bufferBytes >> 20, m->repetitions, m->threads);
    }
    if (o.diskBytesPerSecond) {
        diskRate = *o.diskBytesPerSecond;
        report.diskFrom = "given";
    } else {
        step("disk");
        auto files = modelWeightFiles(modelDir);
        if (!files) return failed(PlanStep::Disk, failedAt, files.status());
        diskbench::BandwidthOptions bo;
        bo.totalBytes = o.diskReadBytes;
        auto d = diskbench::measureReadBandwidth(*files, bo);
        if (!d)
            return failed(PlanStep::Disk, failedAt,
                          Status(d.status().code(), "disk bandwidth: " + d.status().message()));
        diskRate = d->bytesPerSecond;
        report.diskFrom = fmt::format(
            "measured: {} MiB of random reads over {} weight file{}, {}", d->bytes >> 20,
            files->size(), files->size() == 1 ? "" : "s",
            d->directIo ? "O_DIRECT" : "buffered (no O_DIRECT: may be the page cache's speed)");
    }

    auto plan = makePlan(*shape, budget, hitRate, source, memRate, diskRate);
    if (!plan) return failed(PlanStep::Plan, failedAt, plan.status());
    report.plan = *plan;
    if (lm.model().gpuActive()) {
        report.gpuDevice = lm.model().gpuDevice();
        report.vramExperts = vramCap;
        report.vramBudgetBytes = lm.model().vramBudget();
        report.vramShare = vramShare.value_or(0);
    }
    if (report.plan.hitRateSource == HitRateSource::None)
        report.hitRateDetail = report.plan.expertsThatFit == 0
                                   ? "no expert fits beside the working set"
                                   : "every expert fits in the budget";
    return report;
}

} // namespace coli::placement
