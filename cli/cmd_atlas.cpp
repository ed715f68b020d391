// coli atlas MODEL_DIR [--topics FILE] [--usage-db PATH] [--json FILE]: the topic probe (issue 12;
// docs/cli.md, docs/visualisation.md "Topic probe"). Routes every prompt of a topic set through
// the model (prefill only), stores the per-expert topic counts, co-activation and the Atlas's 3D
// positions in the usage database, and prints per topic its specialists and their
// leave-one-prompt-out agreement, and the 5-NN topic purity of the specialists in the embedding.
#include "commands.h"
#include "exit_codes.h"
#include "options.h"
#include "signals.h"

#include "atlas/default_topics.h"
#include "atlas/probe_atlas.h"
#include "probe/topic_probe.h"
#include "storage/atlas_store.h"
#include "storage/database.h"
#include "storage/location.h"
#include "storage/model_identity.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <unistd.h>

namespace coli::cli {
namespace {

struct AtlasOptions {
    ModelOptions model;
    std::string topics; // empty: the model's default set
    std::string usageDb;
    std::string jsonOut;
    // Test-only: smaller topics than issue 12's minimum (hidden from --help).
    int minPrompts = probe::kMinPromptsPerTopic;
    int64_t minTokens = probe::kMinTokensPerTopic;
};

std::string binDir() {
    std::error_code ec;
    const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::string(".") : exe.parent_path().string();
}

std::string figure(double v) {
    return fmt::format("{:.2f}", v);
}

nlohmann::json toJson(const probe::ProbeResult& r, const atlas::ProbeAtlas& a,
                      const std::string& modelDir, const std::string& topicFile, int64_t probeId) {
    nlohmann::json topics = nlohmann::json::array(), details = nlohmann::json::array();
    for (const atlas::TopicFigures& t : a.topics) {
        topics.push_back(t.label);
        details.push_back(
            {{"id", t.id},
             {"label", t.label},
             {"prompts", t.prompts},
             {"tokens", t.tokens},
             {"specialists", t.specialists},
             {"loo_agreement", t.specialists > 0 ? nlohmann::json(t.agreement) : nlohmann::json()},
             {"purity",
              a.purity && t.specialists > 0 ? nlohmann::json(t.purity) : nlohmann::json()}});
    }
    nlohmann::json experts = nlohmann::json::array();
    for (const atlas::ExpertPoint& x : a.experts)
        experts.push_back(
            {{"layer", x.layer},
             {"expert", x.expert},
             {"position", {x.x, x.y, x.z}},
             {"dominant_topic", x.dominant >= 0 ? nlohmann::json(x.dominant) : nlohmann::json()},
             {"specialist", x.specialist},
             {"shares", x.shares}});
    return {{"format", "colibri-atlas"},
            {"version", 1},
            {"model", modelDir},
            {"topic_set",
             {{"file", topicFile}, {"name", r.topicSetName}, {"sha256", r.topicSetSha256}}},
            {"probe_id", probeId},
            {"layers", r.nLayers},
            {"experts_per_layer", r.nExperts},
            {"moe_layers", r.moeLayers},
            {"top_k", r.topK},
            {"tokens", r.tokens},
            {"topics", topics},
            {"topic_details", details},
            {"figures",
             {{"specialists", a.specialists},
              {"loo_agreement", a.agreement},
              {"loo_cases", a.agreementCases},
              {"purity_5nn", a.purity ? nlohmann::json(*a.purity) : nlohmann::json()},
              {"purity_note", a.purityNote}}},
            {"experts", experts}};
}

int runAtlas(const AtlasOptions& o) {
    installSigintHandler();
    Result<std::string> dbPath = o.usageDb.empty() ? storage::defaultDatabasePath() : o.usageDb;
    if (!dbPath) {
        printError(dbPath.status().message());
        return kExitModel;
    }
    auto db = storage::Storage::open(*dbPath);
    if (!db) {
        printError("usage database: " + db.status().message());
        return kExitModel;
    }
    auto identity = storage::modelIdentity(o.model.dir, db->get());
    if (!identity) {
        printError(
            fmt::format("cannot load model {}: {}", o.model.dir, identity.status().message()));
        return kExitModel;
    }
    std::string topicFile = o.topics;
    if (topicFile.empty()) {
        auto chosen = atlas::defaultTopicFile(binDir(), *identity, db->get());
        if (!chosen) {
            printError("the default topic set: " + chosen.status().message());
            return kExitModel;
        }
        topicFile = *chosen;
    }
    auto set = probe::loadTopicSet(topicFile);
    if (!set) {
        printError(set.status().message());
        return kExitUsage;
    }

    int code = kExitOk;
    auto lm = loadModel(o.model, code); // experts resident: nothing learns (ModelOptions default)
    if (!lm) return code;

    probe::ProbeOptions po;
    po.minPrompts = o.minPrompts;
    po.minTokens = o.minTokens;
    const bool tty = isatty(STDERR_FILENO);
    int lastPercent = -1;
    auto progress = [&](const probe::ProbeProgress& p) {
        if (!tty || p.tokensTotal <= 0) return;
        const int percent = int(100 * p.tokensDone / p.tokensTotal);
        if (percent == lastPercent) return;
        lastPercent = percent;
        fmt::print(stderr, "\rprobing {:<24} {:>7} of {} tokens {:3d}%",
                   set->topics[size_t(p.topic)].id, p.tokensDone, p.tokensTotal, percent);
        std::fflush(stderr);
    };
    auto result = probe::runTopicProbe(*lm, *set, po, progress, &interruptFlag());
    if (tty) fmt::print(stderr, "\r{:<70}\r", "");
    if (!result) {
        switch (result.status().code()) {
        case ErrorCode::Cancelled:
            printError("interrupted");
            return kExitInterrupted;
        case ErrorCode::InvalidArgument:
            printError(result.status().message());
            return kExitUsage;
        case ErrorCode::Unsupported:
            printError(result.status().message());
            return kExitModel;
        default:
            printError(result.status().message());
            return kExitGeneration;
        }
    }
    auto analysed = atlas::analyseProbe(*result);
    if (!analysed) {
        printError(analysed.status().message());
        return kExitGeneration;
    }
    const probe::ProbeResult& r = *result;
    const atlas::ProbeAtlas& a = *analysed;

    auto modelId = (*db)->modelId(*identity, o.model.dir);
    Result<int64_t> probeId =
        modelId ? storage::AtlasStore(**db).saveProbe(*modelId, atlas::toStoredProbe(r, a))
                : Result<int64_t>(modelId.status());
    if (!probeId) {
        printError("the probe was not stored: " + probeId.status().message());
        return kExitModel;
    }

    fmt::print("atlas: {} MoE layers x {} experts, top-{}; topic set \"{}\" ({})\n",
               r.moeLayers.size(), r.nExperts, r.topK, r.topicSetName, topicFile);
    fmt::print("{:<28} {:>7} {:>8} {:>11} {:>13} {:>11}\n", "topic", "prompts", "tokens",
               "specialists", "LOO agreement", "5-NN purity");
    for (const atlas::TopicFigures& t : a.topics)
        fmt::print("{:<28} {:>7} {:>8} {:>11} {:>13} {:>11}\n", t.label, t.prompts, t.tokens,
                   t.specialists, t.specialists > 0 ? figure(t.agreement) : "-",
                   t.specialists > 0 && a.purity ? figure(t.purity) : "-");
    fmt::print("{:<28} {:>7} {:>8} {:>11} {:>13} {:>11}\n", "all topics", r.prompts.size(),
               r.tokens, a.specialists, a.specialists > 0 ? figure(a.agreement) : "-",
               a.purity ? figure(*a.purity) : "-");
    fmt::print("specialist: share in a topic >= 3x its balanced share (balanced >= 1%); LOO "
               "agreement over {} (specialist, left-out prompt) cases; 5-NN purity in the 3D "
               "embedding{}\n",
               a.agreementCases, a.purity ? "" : " not measured: " + a.purityNote);
    fmt::print("stored as probe {} in {}\n", *probeId, *dbPath);

    if (!o.jsonOut.empty())
        return writeJsonOption(o.jsonOut, toJson(r, a, o.model.dir, topicFile, *probeId));
    return kExitOk;
}

} // namespace

Command addAtlasCommand(CLI::App& root) {
    auto o = std::make_shared<AtlasOptions>();
    CLI::App* cmd = root.add_subcommand(
        "atlas", "Topic probe: route a fixed prompt set per topic through the model (prefill "
                 "only), store each expert's topic shares and its place in the 3D Atlas");
    cmd->footer(std::string("Default topics: resources/topics/default-model.json for the shipped "
                            "model, general.json for others. At least 20 prompts and 2,000 "
                            "tokens per topic. See docs/cli.md.\n") +
                kExitCodesHelp);
    addModelOptions(*cmd, o->model);
    cmd->add_option("--topics", o->topics, "Topic set file (colibri-topics JSON)")
        ->type_name("FILE")
        ->check(nonEmptyPath("leave the option out for the model's default set"));
    cmd->add_option("--usage-db", o->usageDb,
                    "Usage database file (default: $XDG_DATA_HOME/colibri/colibri.db)")
        ->type_name("PATH")
        ->check(nonEmptyPath("leave the option out for the default database"));
    cmd->add_option("--json", o->jsonOut,
                    "Write per expert its layer, index, topic shares, dominant topic, specialist "
                    "flag and 3D position, plus the topics and the figures")
        ->type_name("FILE")
        ->check(nonEmptyPath());
    // Tests only: probe small fixture topic sets (hidden: an empty group).
    cmd->add_option("--test-min-prompts", o->minPrompts)->group("")->check(integerIn(0, 1 << 20));
    cmd->add_option("--test-min-tokens", o->minTokens)
        ->group("")
        ->check(integerIn(int64_t(0), int64_t(1) << 40));
    return {cmd, [o] { return runAtlas(*o); }};
}

} // namespace coli::cli
