#include "mirror/mirror_heat.h"

#include "storage/database.h"
#include "storage/heat.h"
#include "storage/location.h"
#include "storage/model_identity.h"

#include <filesystem>

namespace coli::mirror {

Result<ModelHeat> loadModelHeat(const std::string& modelDir, const std::string& dbPath) {
    ModelHeat out;
    Result<std::string> path = dbPath.empty() ? storage::defaultDatabasePath() : dbPath;
    if (!path) return path.status();
    out.databasePath = path.value();
    std::error_code ec;
    if (!std::filesystem::exists(out.databasePath, ec)) {
        out.note = "no usage database at " + out.databasePath;
        return out;
    }
    auto db = storage::Storage::open(out.databasePath);
    if (!db) return db.status();
    auto identity = storage::modelIdentity(modelDir, db.value().get());
    if (!identity) return identity.status();
    auto model = db.value()->findModel(identity.value());
    if (!model) return model.status();
    if (!model.value()) {
        out.note = "no usage recorded for this model in " + out.databasePath;
        return out;
    }
    auto clock = db.value()->tokenClock(*model.value());
    if (!clock) return clock.status();
    auto records = db.value()->loadHeat(*model.value());
    if (!records) return records.status();
    for (const storage::HeatRecord& r : records.value()) {
        const double h = storage::decayedHeat(r.heat, r.lastSeen, clock.value(),
                                              storage::kDefaultHalfLifeTokens);
        if (h > 0) out.heat[{r.layer, r.expert}] = h;
    }
    out.known = !out.heat.empty();
    if (!out.known)
        out.note =
            "the usage recorded for this model in " + out.databasePath + " has no expert heat";
    return out;
}

} // namespace coli::mirror
