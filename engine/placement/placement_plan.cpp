#include "placement/placement_plan.h"

#include "cachesim/access_sequence.h"
#include "cachesim/simulator.h"
#include "runtime/expert_budget.h"
#include "tiers/expert_cache.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace coli::placement {

const char* hitRateSourceName(HitRateSource s) {
    switch (s) {
    case HitRateSource::None:
        return "none";
    case HitRateSource::Trace:
        return "trace";
    case HitRateSource::Heat:
        return "heat";
    case HitRateSource::Recorded:
        return "recorded";
    }
    return "none";
}

Result<PlacementPlan> makePlan(const PlanShape& shape, uint64_t budgetBytes, double hitRate,
                               HitRateSource source, double memBytesPerSecond,
                               double diskBytesPerSecond) {
    if (shape.totalExperts() <= 0 || shape.topK <= 0 || shape.bytesPerExpert == 0 ||
        shape.slotBytes == 0)
        return Status(ErrorCode::InvalidArgument,
                      "plan: the model has no routed experts to place (MoE layers " +
                          std::to_string(shape.moeLayers) + ", experts per layer " +
                          std::to_string(shape.expertsPerLayer) + ", bytes per expert " +
                          std::to_string(shape.bytesPerExpert) + ")");
    if (shape.slotBytes < shape.bytesPerExpert)
        return Status(ErrorCode::InvalidArgument,
                      "plan: a cache slot of " + std::to_string(shape.slotBytes) +
                          " bytes cannot hold an expert of " +
                          std::to_string(shape.bytesPerExpert) + " bytes");
    if (!(hitRate >= 0 && hitRate <= 1))
        return Status(ErrorCode::InvalidArgument,
                      "plan: hit rate " + std::to_string(hitRate) + " is outside [0, 1]");
    if (!(memBytesPerSecond >= 0) || !(diskBytesPerSecond >= 0))
        return Status(ErrorCode::InvalidArgument, "plan: a bandwidth is negative or not a number");

    PlacementPlan p;
    p.shape = shape;
    p.budgetBytes = std::max(budgetBytes, shape.minimumBudget());
    p.workingSetBytes = shape.minimumBudget();
    p.expertsThatFit =
        expertsThatFit(p.budgetBytes, shape.slotBytes, shape.workingSlots, shape.totalExperts());
    p.cachedExpertBytes = uint64_t(p.expertsThatFit) * shape.slotBytes;
    p.hitRate = hitRate;
    p.hitRateSource = source;
    if (p.expertsThatFit >= shape.totalExperts()) {
        p.hitRate = 1; // every expert resident: nothing is read twice from disk in steady state
        p.hitRateSource = HitRateSource::None;
    } else if (p.expertsThatFit == 0) {
        p.hitRate = 0;
        p.hitRateSource = HitRateSource::None;
    }
    const double routed = double(shape.moeLayers) * double(shape.topK); // experts per token
    p.memBytesPerToken = double(shape.denseBytes) + routed * double(shape.slotBytes);
    p.diskBytesPerToken = (1.0 - p.hitRate) * routed * double(shape.bytesPerExpert);
    p.memBytesPerSecond = memBytesPerSecond;
    p.diskBytesPerSecond = diskBytesPerSecond;
    const bool needDisk = p.diskBytesPerToken > 0;
    if (memBytesPerSecond > 0 && (!needDisk || diskBytesPerSecond > 0)) {
        p.secondsPerToken = p.memBytesPerToken / memBytesPerSecond +
                            (needDisk ? p.diskBytesPerToken / diskBytesPerSecond : 0.0);
        p.tokensPerSecond = p.secondsPerToken > 0 ? 1.0 / p.secondsPerToken : 0.0;
    }
    return p;
}

double heatHitRate(std::span<const storage::HeatRecord> records, int capacity, int64_t nowTokens,
                   double halfLifeTokens) {
    const std::vector<storage::HeatRecord> ranked =
        storage::rankHottest({records.begin(), records.end()}, std::numeric_limits<size_t>::max(),
                             nowTokens, halfLifeTokens);
    double total = 0, held = 0;
    for (size_t i = 0; i < ranked.size(); ++i) {
        total += ranked[i].heat;
        if (i < size_t(std::max(0, capacity))) held += ranked[i].heat;
    }
    return total > 0 ? held / total : 0.0;
}

Result<double> traceHitRate(std::span<const cachesim::RoutingTraceFile> traces,
                            const PlanShape& shape, int capacity) {
    auto seq = cachesim::buildAccessSequence(traces, /*chunk=*/1);
    if (!seq) return seq.status();
    if (seq->totalExperts() != shape.totalExperts() || seq->topK != shape.topK)
        return Status(
            ErrorCode::InvalidArgument,
            "trace " + traces.front().name + ": " + std::to_string(seq->moeLayers.size()) +
                " MoE layers x " + std::to_string(seq->nExperts) + " experts, top-" +
                std::to_string(seq->topK) + ", but the model has " +
                std::to_string(shape.moeLayers) + " x " + std::to_string(shape.expertsPerLayer) +
                ", top-" + std::to_string(shape.topK) + " (a trace of another model?)");
    cachesim::SimOptions o;
    o.policy = cachesim::Policy::Lfru;
    o.capacity = std::max(0, capacity);
    o.halfLifeTokens = tiers::CacheOptions{}.evictionHalfLifeTokens;
    auto r = cachesim::simulate(*seq, o);
    if (!r) return r.status();
    return r->hitRate();
}

} // namespace coli::placement
