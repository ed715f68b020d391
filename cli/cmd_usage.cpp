// coli usage path | reset [MODEL_DIR] | pin | unpin | pins | reset-exclusions: the usage
// database (storage/, docs/storage.md) that learned pins read: where it is, forgetting what it
// learned, and the user's own pins and exclusions (storage/user_pins.h, docs/tiers.md).
#include "commands.h"
#include "exit_codes.h"
#include "options.h"

#include "storage/database.h"
#include "storage/location.h"
#include "storage/model_identity.h"
#include "storage/user_pins.h"

#include "model/config.h"

#include <fmt/core.h>

#include <memory>
#include <optional>
#include <string>

namespace coli::cli {
namespace {

struct UsageOptions {
    std::string db; // empty: the default location
    std::string modelDir;
    int layer = -1, expert = -1;
};

Result<std::string> databasePath(const UsageOptions& o) {
    if (!o.db.empty()) return o.db;
    return storage::defaultDatabasePath();
}

int runPath(const UsageOptions& o) {
    auto path = databasePath(o);
    if (!path.isOk()) {
        fmt::print(stderr, "coli: error: {}\n", path.status().message());
        return kExitModel;
    }
    fmt::print("{}\n", path.value());
    return kExitOk;
}

int runReset(const UsageOptions& o) {
    auto path = databasePath(o);
    if (!path.isOk()) {
        fmt::print(stderr, "coli: error: {}\n", path.status().message());
        return kExitModel;
    }
    auto db = storage::Storage::open(path.value());
    if (!db.isOk()) {
        fmt::print(stderr, "coli: error: usage database: {}\n", db.status().message());
        return kExitModel;
    }
    std::optional<int64_t> model;
    if (!o.modelDir.empty()) {
        // The identity of the weights (a checkpoint and its container share it).
        auto identity = storage::modelIdentity(o.modelDir, db.value().get());
        if (!identity.isOk()) {
            fmt::print(stderr, "coli: error: {}\n", identity.status().message());
            return kExitModel;
        }
        auto id = db.value()->findModel(identity.value());
        if (!id.isOk()) {
            fmt::print(stderr, "coli: error: usage database: {}\n", id.status().message());
            return kExitModel;
        }
        if (!id.value()) {
            fmt::print("no usage recorded for {} in {}\n", o.modelDir, path.value());
            return kExitOk;
        }
        model = *id.value();
    }
    auto n = db.value()->resetUsage(model);
    if (!n.isOk()) {
        fmt::print(stderr, "coli: error: usage database: {}\n", n.status().message());
        return kExitModel;
    }
    fmt::print("reset usage of {} in {}: {} rows deleted\n",
               o.modelDir.empty() ? std::string("every model") : o.modelDir, path.value(),
               n.value());
    return kExitOk;
}

// The database and the model's row: created for a pin (`create`), else nullopt when the model
// has no usage recorded. Prints the error and returns false on failure.
struct ModelRow {
    std::string path;
    std::unique_ptr<storage::Storage> db;
    std::optional<int64_t> model;
};
bool openModel(const UsageOptions& o, bool create, ModelRow& out) {
    auto path = databasePath(o);
    if (!path.isOk()) {
        fmt::print(stderr, "coli: error: {}\n", path.status().message());
        return false;
    }
    out.path = path.value();
    auto db = storage::Storage::open(out.path);
    if (!db.isOk()) {
        fmt::print(stderr, "coli: error: usage database: {}\n", db.status().message());
        return false;
    }
    out.db = std::move(db.value());
    auto identity = storage::modelIdentity(o.modelDir, out.db.get());
    if (!identity.isOk()) {
        fmt::print(stderr, "coli: error: {}\n", identity.status().message());
        return false;
    }
    if (create) {
        auto id = out.db->modelId(identity.value(), o.modelDir);
        if (!id.isOk()) {
            fmt::print(stderr, "coli: error: usage database: {}\n", id.status().message());
            return false;
        }
        out.model = id.value();
        return true;
    }
    auto id = out.db->findModel(identity.value());
    if (!id.isOk()) {
        fmt::print(stderr, "coli: error: usage database: {}\n", id.status().message());
        return false;
    }
    out.model = id.value();
    return true;
}

// The layer and expert must name a routed expert of the model (config.json).
int checkExpert(const UsageOptions& o) {
    auto cfg = loadConfig(o.modelDir);
    if (!cfg.isOk()) {
        fmt::print(stderr, "coli: error: {}\n", cfg.status().message());
        return kExitModel;
    }
    if (o.layer >= cfg->nLayers || !cfg->sparseLayer[size_t(o.layer)]) {
        fmt::print(stderr,
                   "coli: error: layer {} has no routed experts ({} has {} layers; MoE layers:",
                   o.layer, o.modelDir, cfg->nLayers);
        for (int l = 0; l < cfg->nLayers; ++l)
            if (cfg->sparseLayer[size_t(l)]) fmt::print(stderr, " {}", l);
        fmt::print(stderr, ")\n");
        return kExitUsage;
    }
    if (o.expert >= cfg->nExperts) {
        fmt::print(stderr, "coli: error: expert {} out of range: {} has {} experts per layer\n",
                   o.expert, o.modelDir, cfg->nExperts);
        return kExitUsage;
    }
    return kExitOk;
}

int storageError(const Status& st) {
    fmt::print(stderr, "coli: error: usage database: {}\n", st.message());
    return kExitModel;
}

int runPin(const UsageOptions& o) {
    if (int rc = checkExpert(o); rc != kExitOk) return rc;
    ModelRow r;
    if (!openModel(o, true, r)) return kExitModel;
    auto added = storage::UserPinStore(*r.db).pin(*r.model, o.layer, o.expert);
    if (!added.isOk()) return storageError(added.status());
    fmt::print("{} layer {} expert {} of {}: applied when the model is next loaded\n",
               added.value() ? "pinned" : "already pinned", o.layer, o.expert, o.modelDir);
    return kExitOk;
}

// A user pin is dropped; any other expert is excluded from learned pins (the user does not want
// it pinned), until reset-exclusions.
int runUnpin(const UsageOptions& o) {
    if (int rc = checkExpert(o); rc != kExitOk) return rc;
    ModelRow r;
    if (!openModel(o, true, r)) return kExitModel;
    storage::UserPinStore store(*r.db);
    auto removed = store.unpin(*r.model, o.layer, o.expert);
    if (!removed.isOk()) return storageError(removed.status());
    if (removed.value()) {
        fmt::print("unpinned layer {} expert {} of {}\n", o.layer, o.expert, o.modelDir);
        return kExitOk;
    }
    auto excluded = store.exclude(*r.model, o.layer, o.expert);
    if (!excluded.isOk()) return storageError(excluded.status());
    fmt::print("layer {} expert {} of {} {} excluded from learned pins until `coli usage "
               "reset-exclusions`\n",
               o.layer, o.expert, o.modelDir, excluded.value() ? "is now" : "was already");
    return kExitOk;
}

int runPins(const UsageOptions& o) {
    ModelRow r;
    if (!openModel(o, false, r)) return kExitModel;
    if (!r.model) {
        fmt::print("no usage recorded for {} in {}\n", o.modelDir, r.path);
        return kExitOk;
    }
    auto lists = storage::UserPinStore(*r.db).load(*r.model);
    if (!lists.isOk()) return storageError(lists.status());
    auto line = [](const char* what, const std::vector<storage::PinnedExpert>& v) {
        fmt::print("{} ({}):", what, v.size());
        for (const storage::PinnedExpert& p : v)
            fmt::print(" {}/{}", p.layer, p.expert);
        fmt::print("\n");
    };
    line("user pins, oldest first, layer/expert", lists->pins);
    line("excluded from learned pins", lists->exclusions);
    return kExitOk;
}

int runResetExclusions(const UsageOptions& o) {
    ModelRow r;
    if (!openModel(o, false, r)) return kExitModel;
    if (!r.model) {
        fmt::print("no usage recorded for {} in {}\n", o.modelDir, r.path);
        return kExitOk;
    }
    auto n = storage::UserPinStore(*r.db).resetExclusions(*r.model);
    if (!n.isOk()) return storageError(n.status());
    fmt::print("{} exclusion{} of {} reset: learned pins may choose them again\n", n.value(),
               n.value() == 1 ? "" : "s", o.modelDir);
    return kExitOk;
}

} // namespace

Command addUsageCommand(CLI::App& root) {
    auto* app = root.add_subcommand(
        "usage", "The usage database (expert heat and pins that placement learns)");
    app->require_subcommand(1);
    auto o = std::make_shared<UsageOptions>();
    auto* path = app->add_subcommand("path", "Print where the usage database is");
    path->add_option("--db", o->db, "A database file instead of the default location")
        ->type_name("PATH")
        ->check(nonEmptyPath("leave the option out for the default database"));
    auto* reset = app->add_subcommand(
        "reset", "Forget the learned usage (heat and pins) of one model, or of every model");
    reset
        ->add_option("MODEL_DIR", o->modelDir,
                     "Only this model (a checkpoint or its colibri container)")
        ->type_name("");
    reset->add_option("--db", o->db, "A database file instead of the default location")
        ->type_name("PATH")
        ->check(nonEmptyPath("leave the option out for the default database"));
    auto withDb = [&](CLI::App* sub) {
        sub->add_option("--db", o->db, "A database file instead of the default location")
            ->type_name("PATH")
            ->check(nonEmptyPath("leave the option out for the default database"));
    };
    auto withModel = [&](CLI::App* sub) {
        sub->add_option("MODEL_DIR", o->modelDir, "A checkpoint or its colibri container")
            ->required()
            ->type_name("");
    };
    auto withExpert = [&](CLI::App* sub) {
        sub->add_option("LAYER", o->layer, "The decoder layer (a MoE layer), from 0")
            ->required()
            ->check(CLI::NonNegativeNumber)
            ->type_name("");
        sub->add_option("EXPERT", o->expert, "The routed expert of that layer, from 0")
            ->required()
            ->check(CLI::NonNegativeNumber)
            ->type_name("");
    };
    auto* pin = app->add_subcommand(
        "pin", "Pin an expert in RAM for this model (a user pin: learned pinning keeps it)");
    withModel(pin);
    withExpert(pin);
    withDb(pin);
    auto* unpin = app->add_subcommand(
        "unpin", "Drop a user pin, or keep an expert out of learned pins until reset-exclusions");
    withModel(unpin);
    withExpert(unpin);
    withDb(unpin);
    auto* pins = app->add_subcommand("pins", "List the model's user pins and exclusions");
    withModel(pins);
    withDb(pins);
    auto* resetEx = app->add_subcommand(
        "reset-exclusions", "Let learned pinning choose the experts you unpinned again");
    withModel(resetEx);
    withDb(resetEx);
    return {app, [o, path, pin, unpin, pins, resetEx] {
                if (path->parsed()) return runPath(*o);
                if (pin->parsed()) return runPin(*o);
                if (unpin->parsed()) return runUnpin(*o);
                if (pins->parsed()) return runPins(*o);
                if (resetEx->parsed()) return runResetExclusions(*o);
                return runReset(*o);
            }};
}

} // namespace coli::cli
