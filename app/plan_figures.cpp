#include "plan_figures.h"

#include "diskbench/disk_bandwidth.h"
#include "placement/memory_bandwidth.h"
#include "placement/placement_plan.h"
#include "placement/plan_inputs.h"
#include "runtime/expert_budget.h"
#include "storage/heat.h"
#include "tiers/expert_cache.h"

#include <vector>

namespace coli::app {

PlanRates measurePlanRates(const std::string& modelDir) {
    PlanRates r;
    placement::MemoryBandwidthOptions mo;
    mo.repetitions = 3;
    mo.bufferBytes = size_t(256) << 20; // the app keeps its footprint small; see performance.md
    if (auto m = placement::measureMemoryReadBandwidth(mo))
        r.memBytesPerSecond = m->bytesPerSecond;
    else
        r.error = m.status().message();
    auto files = placement::modelWeightFiles(modelDir);
    if (!files) {
        r.error += (r.error.empty() ? "" : "; ") + files.status().message();
        return r;
    }
    diskbench::BandwidthOptions bo;
    bo.totalBytes = 64ull << 20;
    if (auto d = diskbench::measureReadBandwidth(*files, bo))
        r.diskBytesPerSecond = d->bytesPerSecond;
    else
        r.error += (r.error.empty() ? "" : "; ") + d.status().message();
    return r;
}

PlanFigures computePlanFigures(const Model& model, const PlanRates& rates) {
    PlanFigures f;
    const tiers::ExpertCache* cache = model.expertCache();
    auto shape = placement::planShape(model);
    if (!cache || !shape) {
        f.error = shape ? "no expert cache" : shape.status().message();
        return f;
    }
    const int capacity = expertsThatFit(cache->budget(), shape->slotBytes, shape->workingSlots,
                                        shape->totalExperts());
    // The learned heat as records decayed to now (lastSeen = now: no further decay).
    const std::vector<double> heat = cache->heatSnapshot();
    const int64_t now = cache->tokenClock();
    const int perLayer = cache->expertsPerLayer();
    std::vector<storage::HeatRecord> records;
    for (size_t i = 0; i < heat.size(); ++i)
        if (heat[i] > 0) records.push_back({int(i) / perLayer, int(i) % perLayer, heat[i], now});
    const bool haveHeat = !records.empty();
    const double h =
        haveHeat ? placement::heatHitRate(records, capacity, now, storage::kDefaultHalfLifeTokens)
                 : 0.0;
    auto plan = placement::makePlan(*shape, cache->budget(), h,
                                    haveHeat ? placement::HitRateSource::Heat
                                             : placement::HitRateSource::None,
                                    rates.memBytesPerSecond, rates.diskBytesPerSecond);
    if (!plan) {
        f.error = plan.status().message();
        return f;
    }
    f.valid = true;
    f.expertsThatFit = plan->expertsThatFit;
    const bool all = plan->expertsThatFit >= shape->totalExperts();
    const bool none = plan->expertsThatFit == 0;
    if (all || none || haveHeat) {
        f.hitRate = plan->hitRate;
        f.hitSource = all ? "all fit" : none ? "none fit" : "heat";
        if (plan->tokensPerSecond > 0) f.tokensPerSecond = plan->tokensPerSecond;
    }
    f.error = rates.error;
    return f;
}

} // namespace coli::app
