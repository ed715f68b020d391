#include "usage_learning.h"

#include "options.h"

#include "storage/location.h"
#include "storage/model_identity.h"

#include <fmt/core.h>

namespace coli::cli {

std::unique_ptr<UsageLearning> UsageLearning::start(const std::string& modelDir,
                                                    tiers::ExpertCache& cache,
                                                    const std::string& dbPath) {
    auto fail = [](const std::string& what) {
        printWarning("usage learning off: " + what);
        return nullptr;
    };
    Result<std::string> path = dbPath.empty() ? storage::defaultDatabasePath() : dbPath;
    if (!path) return fail(path.status().message());
    auto db = storage::Storage::open(*path);
    if (!db) return fail(db.status().message());
    auto identity = storage::modelIdentity(modelDir, db->get());
    if (!identity) return fail(identity.status().message());
    auto model = (*db)->modelId(*identity, modelDir);
    if (!model) return fail(model.status().message());
    auto clock = (*db)->tokenClock(*model);
    if (!clock) return fail(clock.status().message());
    auto heat = (*db)->loadHeat(*model);
    if (!heat) return fail(heat.status().message());
    cache.setTokenClock(*clock);
    for (const storage::HeatRecord& r : *heat)
        cache.setHeat({r.layer, r.expert}, r.heat, r.lastSeen);
    auto hottest = (*db)->hottest(*model, size_t(std::max(0, cache.pinCapacity())), *clock);
    if (!hottest) return fail(hottest.status().message());
    std::vector<tiers::ExpertId> pins;
    for (const storage::HeatRecord& r : *hottest)
        pins.push_back({r.layer, r.expert});
    cache.setPins(pins);

    std::unique_ptr<UsageLearning> u(new UsageLearning());
    u->m_db = std::move(db.value());
    u->m_cache = &cache;
    u->m_model = *model;
    u->m_path = *path;
    u->m_pinsAtStart = int(cache.pins().size());
    return u;
}

void UsageLearning::endTurn() {
    m_cache->rebalancePins();
    const std::vector<double> heat = m_cache->heatSnapshot();
    std::vector<storage::ExpertHeat> entries;
    const int perLayer = m_cache->expertsPerLayer();
    for (size_t k = 0; k < heat.size(); ++k)
        if (heat[k] > 0) entries.push_back({int(k / perLayer), int(k % perLayer), heat[k]});
    Status st = m_db->saveHeat(m_model, entries, m_cache->tokenClock());
    if (st.isOk()) {
        std::vector<storage::Pin> pins;
        for (const tiers::ExpertId& id : m_cache->pins())
            pins.push_back({id.layer, id.expert, storage::PinTier::Ram});
        st = m_db->setPins(m_model, pins);
    }
    if (!st.isOk() && !m_warned) {
        m_warned = true;
        printWarning("usage not saved: " + st.message());
    }
}

} // namespace coli::cli
