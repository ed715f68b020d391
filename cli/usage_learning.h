#pragma once
// The CLI's link between the expert cache and the usage database (docs/design.md "Expert tiers"
// step 5 "learn", docs/storage.md): at start the model's saved heat is loaded into the cache and
// its hottest experts within the hot-store size are pinned; at each turn end (and at exit) the
// decayed heat and the pins are saved in one transaction each. A database that cannot be opened, is
// corrupt or locked gives one warning and the run goes on without learning; nothing is lost.
// Built on the thread-split functions of learning/learned_usage.h, called here on one thread.
// Thread-safety: one thread (the CLI's), which opens and uses the connection.
#include "core/status.h"
#include "forward/model.h"
#include "learning/learned_usage.h"
#include "storage/database.h"
#include "tiers/expert_cache.h"

#include <memory>
#include <string>

namespace coli::cli {

class UsageLearning {
public:
    // Opens the database (dbPath, or the XDG default when empty), finds the model by its weight
    // identity (storage/model_identity.h), loads its heat into `cache` and pins the hottest.
    // With a GPU tier (model.gpuActive()) the hottest experts are first pinned in VRAM
    // (Model::setVramPins; stored as tier 'vram'), the next hottest in RAM.
    // Returns null after printing a warning when any step fails (the run continues unlearned).
    static std::unique_ptr<UsageLearning> start(const std::string& modelDir, Model& model,
                                                tiers::ExpertCache& cache,
                                                const std::string& dbPath = {});
    // A turn ended: hysteresis pin swaps (ExpertCache::rebalancePins), then the heat of every
    // expert with heat > 0 and the pins are saved. A failure is printed as a warning once.
    void endTurn();
    int64_t modelId() const { return m_model; }
    const std::string& databasePath() const { return m_path; }
    int pinsAtStart() const { return m_pinsAtStart; }
    int vramPinsAtStart() const { return m_vramPinsAtStart; }

private:
    UsageLearning() = default;
    std::unique_ptr<storage::Storage> m_db;
    tiers::ExpertCache* m_cache = nullptr;
    Model* m_modelRef = nullptr;
    int64_t m_model = 0;
    std::string m_path;
    int m_pinsAtStart = 0;
    int m_vramPinsAtStart = 0;
    bool m_warned = false;
};

} // namespace coli::cli
