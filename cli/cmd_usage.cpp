// coli usage path | reset [MODEL_DIR]: the usage database (storage/, docs/storage.md) that
// issue 5's learned pins read: where it is, and forgetting what it learned.
#include "commands.h"
#include "exit_codes.h"
#include "options.h"

#include "storage/database.h"
#include "storage/location.h"
#include "storage/model_identity.h"

#include <fmt/core.h>

#include <memory>
#include <optional>
#include <string>

namespace coli::cli {
namespace {

struct UsageOptions {
    std::string db; // empty: the default location
    std::string modelDir;
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
    return {app, [o, path] { return path->parsed() ? runPath(*o) : runReset(*o); }};
}

} // namespace coli::cli
