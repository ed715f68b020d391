#pragma once
// The learned heat the mirror plan ranks by, from the usage database (storage/, docs/storage.md):
// the model is found by its weight identity (storage/model_identity.h: a checkpoint and its
// container share it), its heat records decayed to the model's token clock (storage/heat.h).
// Nothing is created: a database file that does not exist, or a model it does not know, is "no
// history" (ModelHeat::known false), and the plan then ranks by expert bytes.
// In its own library (coli_mirror_heat) so that the mirror's engine side needs no SQLite.
// Thread-safety: opens its own connection on the calling thread and closes it before returning.
#include "core/status.h"
#include "mirror/mirror_plan.h"

#include <string>

namespace coli::mirror {

struct ModelHeat {
    ExpertHeatMap heat;       // decayed to the token clock; empty without history
    bool known = false;       // the database has heat > 0 for this model
    std::string databasePath; // the file read (or that would have been)
    std::string note;         // without history: why ("no usage database at ...", ...)
};

// dbPath empty: the default location (storage/location.h). Errors: those of
// defaultDatabasePath (NotFound: no HOME), Storage::open (Io, Malformed, Unsupported), the model
// identity (reading and hashing the model's source shards: NotFound, Malformed, Io) and loadHeat.
Result<ModelHeat> loadModelHeat(const std::string& modelDir, const std::string& dbPath = {});

} // namespace coli::mirror
