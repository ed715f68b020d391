#include "usage_learning.h"

#include "options.h"

#include "storage/location.h"

namespace coli::cli {

std::unique_ptr<UsageLearning> UsageLearning::start(const std::string& modelDir, Model& model,
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
    auto usage = learning::loadLearnedUsageFor(**db, modelDir,
                                               cache.pinCapacity() + model.vramPinCapacity());
    if (!usage) return fail(usage.status().message());
    // The hottest go to VRAM, the next hottest to the RAM hot-store.
    const std::vector<tiers::ExpertId> vramPins =
        model.setVramPins(learning::vramPinCandidates(*usage));
    const int userPins = learning::applyLearnedUsage(cache, *usage, vramPins);
    if (userPins < int(usage->userPins.size()))
        printWarning(std::to_string(usage->userPins.size() - size_t(userPins)) + " of " +
                     std::to_string(usage->userPins.size()) +
                     " user pins left out: the hot-store holds " +
                     std::to_string(cache.pinCapacity()) +
                     " experts under this RAM budget (the oldest user pins were applied)");

    std::unique_ptr<UsageLearning> u(new UsageLearning());
    u->m_db = std::move(db.value());
    u->m_cache = &cache;
    u->m_modelRef = &model;
    u->m_vramPinsAtStart = int(vramPins.size());
    u->m_model = usage->modelId;
    u->m_path = *path;
    u->m_pinsAtStart = int(cache.pins().size());
    return u;
}

void UsageLearning::endTurn() {
    const Status st = learning::saveUsage(
        *m_db, m_model, learning::endTurnSnapshot(*m_cache, m_modelRef->vramPins()));
    if (!st.isOk() && !m_warned) {
        m_warned = true;
        printWarning("usage not saved: " + st.message());
    }
}

} // namespace coli::cli
