#include "learning/learned_usage.h"

#include "storage/model_identity.h"
#include "storage/user_pins.h"

#include <algorithm>

namespace coli::learning {

Result<LearnedUsage> loadLearnedUsage(storage::Storage& db, const std::string& identity,
                                      const std::string& modelPath, int pinCapacity) {
    LearnedUsage u;
    Result<int64_t> model = db.modelId(identity, modelPath);
    if (!model) return model.status();
    u.modelId = *model;
    Result<int64_t> clock = db.tokenClock(u.modelId);
    if (!clock) return clock.status();
    u.tokenClock = *clock;
    Result<std::vector<storage::HeatRecord>> heat = db.loadHeat(u.modelId);
    if (!heat) return heat.status();
    u.heat = std::move(heat.value());
    Result<storage::UserPinLists> user = storage::UserPinStore(db).load(u.modelId);
    if (!user) return user.status();
    for (const storage::PinnedExpert& p : user->pins)
        u.userPins.push_back({p.layer, p.expert});
    for (const storage::PinnedExpert& p : user->exclusions)
        u.exclusions.push_back({p.layer, p.expert});
    const size_t candidates =
        size_t(std::max(0, pinCapacity)) + u.userPins.size() + u.exclusions.size();
    Result<std::vector<storage::HeatRecord>> hottest =
        db.hottest(u.modelId, pinCapacity > 0 ? candidates : 0, u.tokenClock);
    if (!hottest) return hottest.status();
    for (const storage::HeatRecord& r : *hottest)
        u.pins.push_back({r.layer, r.expert});
    return u;
}

Result<LearnedUsage> loadLearnedUsageFor(storage::Storage& db, const std::string& modelDir,
                                         int pinCapacity) {
    Result<std::string> identity = storage::modelIdentity(modelDir, &db);
    if (!identity) return identity.status();
    return loadLearnedUsage(db, *identity, modelDir, pinCapacity);
}

Status saveUsage(storage::Storage& db, int64_t modelId, const UsageSnapshot& snapshot) {
    COLI_RETURN_IF_ERROR(db.saveHeat(modelId, snapshot.heat, snapshot.tokenClock));
    std::vector<storage::Pin> pins;
    pins.reserve(snapshot.pins.size() + snapshot.vramPins.size());
    auto inVram = [&](const tiers::ExpertId& id) {
        return std::find(snapshot.vramPins.begin(), snapshot.vramPins.end(), id) !=
               snapshot.vramPins.end();
    };
    for (const tiers::ExpertId& id : snapshot.vramPins)
        pins.push_back({id.layer, id.expert, storage::PinTier::Vram});
    for (const tiers::ExpertId& id : snapshot.pins)
        if (!inVram(id)) pins.push_back({id.layer, id.expert, storage::PinTier::Ram});
    return db.setPins(modelId, pins);
}

std::vector<tiers::ExpertId> vramPinCandidates(const LearnedUsage& usage) {
    std::vector<tiers::ExpertId> out;
    auto has = [](const std::vector<tiers::ExpertId>& v, const tiers::ExpertId& id) {
        return std::find(v.begin(), v.end(), id) != v.end();
    };
    for (const tiers::ExpertId& id : usage.pins)
        if (!has(usage.exclusions, id) && !has(usage.userPins, id)) out.push_back(id);
    return out;
}

int applyLearnedUsage(tiers::ExpertCache& cache, const LearnedUsage& usage,
                      std::span<const tiers::ExpertId> vramPins) {
    cache.setTokenClock(usage.tokenClock);
    for (const storage::HeatRecord& r : usage.heat)
        cache.setHeat({r.layer, r.expert}, r.heat, r.lastSeen);
    // The user's choices first, so that learned pins only fill the places they leave.
    const int applied = cache.setUserPins(usage.userPins);
    cache.setExclusions(usage.exclusions);
    if (vramPins.empty()) {
        cache.setPins(usage.pins);
    } else {
        std::vector<tiers::ExpertId> ram;
        for (const tiers::ExpertId& id : usage.pins)
            if (std::find(vramPins.begin(), vramPins.end(), id) == vramPins.end())
                ram.push_back(id);
        cache.setPins(ram);
    }
    return applied;
}

UsageSnapshot endTurnSnapshot(tiers::ExpertCache& cache,
                              std::span<const tiers::ExpertId> vramPins) {
    cache.rebalancePins();
    UsageSnapshot s;
    const std::vector<double> heat = cache.heatSnapshot();
    const int perLayer = cache.expertsPerLayer();
    for (size_t k = 0; k < heat.size(); ++k)
        if (heat[k] > 0) s.heat.push_back({int(k / perLayer), int(k % perLayer), heat[k]});
    s.tokenClock = cache.tokenClock();
    s.pins = cache.pins();
    s.vramPins.assign(vramPins.begin(), vramPins.end());
    return s;
}

} // namespace coli::learning
