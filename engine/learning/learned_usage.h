#pragma once
// Learning usage across runs (docs/design.md "Expert tiers" step 5 "learn"; docs/storage.md,
// docs/tiers.md "Learning"): the glue between the expert cache and the usage database, shared by
// the CLI (cli/usage_learning.h, one thread) and the app (two threads).
//
// The work is split by thread (docs/design.md threading rule 6: a Storage is used only by the
// thread that opened it, the cache's layer sequence by the engine thread; values cross threads,
// never handles):
//   storage thread:  identify the model, read its heat and the experts to pin (loadLearnedUsage),
//                    and save a turn's heat and pins (saveUsage);
//   engine thread:   put the learned heat and pins into the cache before the first generation
//                    (applyLearnedUsage), and at each turn end rebalance the pins and take the
//                    values to save (endTurnSnapshot).
// LearnedUsage and UsageSnapshot are plain values: copy or move them between the threads.
//
// A turn, in the app:  engine: snapshot = endTurnSnapshot(cache)  -> post the value ->
//                      storage: saveUsage(db, usage.modelId, snapshot).
// Nothing here throws or exits; database problems come back as a Status naming the file.
#include "core/status.h"
#include "storage/database.h"
#include "tiers/expert_cache.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace coli::learning {

// What the database knows about one model, read on the storage thread.
struct LearnedUsage {
    int64_t modelId = 0;    // the model's row in the database (Storage::modelId)
    int64_t tokenClock = 0; // where the model's token clock continues (Storage::tokenClock)
    std::vector<storage::HeatRecord> heat; // every stored record (heat as of its lastSeen)
    // The learned pin candidates, hottest first (Storage::hottest decayed to tokenClock): the
    // pinCapacity given to loadLearnedUsage plus as many as there are user pins and exclusions
    // (the cache skips those, so the rest of the hot-store still fills).
    std::vector<tiers::ExpertId> pins;
    // The user's own pins, oldest first (storage/user_pins.h): applied before learned pins.
    std::vector<tiers::ExpertId> userPins;
    // Learned pins the user unpinned: never learned pins until the user resets them.
    std::vector<tiers::ExpertId> exclusions;
};

// What a turn end saves, taken on the engine thread.
struct UsageSnapshot {
    int64_t tokenClock = 0;                // the cache's token clock (heat is as of it)
    std::vector<storage::ExpertHeat> heat; // every expert with learned heat > 0, by (layer, expert)
    std::vector<tiers::ExpertId> pins;     // the hot-store after rebalancing (ExpertCache::pins)
    // The VRAM tier's learned pins (Model::vramPins), stored with tier 'vram'; an expert in both
    // lists is stored once, as a VRAM pin.
    std::vector<tiers::ExpertId> vramPins;
};

// ---- storage thread ----

// The model with weight identity `identity` (storage/model_identity.h; created when new, with
// `modelPath` recorded as where it was last opened), its token clock, stored heat, user pins and
// exclusions, and the hottest experts within pinCapacity (negative counts as 0; see pins).
// Errors: those of Storage::modelId / tokenClock / loadHeat / hottest and UserPinStore::load:
// InvalidArgument (empty identity), Io (locked after the busy timeout, read-only, disk full),
// each naming the file.
Result<LearnedUsage> loadLearnedUsage(storage::Storage& db, const std::string& identity,
                                      const std::string& modelPath, int pinCapacity);
// The same for a model folder: its identity is computed first (storage::modelIdentity with `db`
// as the file-hash cache: a container reads its manifest; an unconverted checkpoint is hashed
// once per file version, which takes a while for a large one). Errors: also those of
// storage::modelIdentity (NotFound, Malformed, Io naming the file).
Result<LearnedUsage> loadLearnedUsageFor(storage::Storage& db, const std::string& modelDir,
                                         int pinCapacity);
// Saves a turn: the snapshot's heat (as of its token clock), then the pins (tier 'vram' for
// vramPins, 'ram' for the other pins), one
// transaction each; the pins are not written when the heat could not be. Errors: those of
// Storage::saveHeat / setPins (InvalidArgument, NotFound for an unknown model, Io: locked,
// read-only, disk full), naming the file; the database keeps what it had.
Status saveUsage(storage::Storage& db, int64_t modelId, const UsageSnapshot& snapshot);

// ---- engine thread (the thread that runs generate(); the cache's calls are thread-safe, but
// pins and the token clock must not change under a generation) ----

// Continues the learned state in the cache: its token clock, every heat record, then the user
// pins first (ExpertCache::setUserPins, oldest first while they fit), the exclusions, and the
// learned pins in the places left (ExpertCache::setPins: excluded and user-pinned experts are
// skipped, those beyond the capacity dropped, reads start for the rest). Call it before the
// model's first generation: the stored clock replaces the cache's. Returns how many user pins
// were applied (fewer than usage.userPins when the hot-store is too small: the caller says so).
// vramPins: experts the VRAM tier pinned from usage.pins (Model::setVramPins, called first): the
// device computes them, so they take no learned RAM pin.
int applyLearnedUsage(tiers::ExpertCache& cache, const LearnedUsage& usage,
                      std::span<const tiers::ExpertId> vramPins = {});
// The learned pin candidates for the VRAM tier: usage.pins without the exclusions and user pins
// (user pins are RAM pins the user chose; the VRAM tier takes the hottest of the rest).
std::vector<tiers::ExpertId> vramPinCandidates(const LearnedUsage& usage);
// A turn ended: rebalances the learned pins (ExpertCache::rebalancePins, hysteresis: user pins
// stay, excluded experts are never chosen), then returns the token clock, every expert's learned
// heat > 0 and the pins (learned and user), as plain values; vramPins as given (Model::vramPins).
UsageSnapshot endTurnSnapshot(tiers::ExpertCache& cache,
                              std::span<const tiers::ExpertId> vramPins = {});

} // namespace coli::learning
