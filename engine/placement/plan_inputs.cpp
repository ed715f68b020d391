#include "placement/plan_inputs.h"

#include "convert/manifest.h"
#include "diskbench/disk_bandwidth.h"
#include "io/safetensors.h"
#include "tiers/expert_cache.h"

namespace coli::placement {

Result<PlanShape> planShape(const Model& model) {
    const tiers::ExpertCache* cache = model.expertCache();
    if (!cache)
        return Status(ErrorCode::InvalidArgument,
                      "the model's experts are resident (loaded without streaming): there is "
                      "no expert placement to plan");
    const ModelSummary s = model.summary();
    PlanShape shape;
    shape.denseBytes = uint64_t(std::max<int64_t>(0, s.denseBytes));
    shape.bytesPerExpert = uint64_t(std::max<int64_t>(0, s.bytesPerExpert));
    shape.slotBytes = cache->slotBytes();
    shape.moeLayers = s.moeLayers;
    shape.expertsPerLayer = s.expertsPerLayer;
    shape.topK = model.config().topK;
    shape.workingSlots = shape.slotBytes ? int(cache->minimumBudget() / shape.slotBytes) : 0;
    return shape;
}

Result<std::vector<diskbench::ReadFile>> modelWeightFiles(const std::string& dir) {
    if (convert::isContainerDir(dir)) {
        auto c = convert::openContainer(dir);
        if (!c) return c.status();
        return diskbench::shardFiles(*c);
    }
    auto ck = Checkpoint::open(dir);
    if (!ck) return ck.status();
    return diskbench::statFiles(ck.value()->shardPaths());
}

} // namespace coli::placement
