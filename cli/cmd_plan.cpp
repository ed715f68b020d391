// coli plan MODEL_DIR [--ram-budget SIZE] [--trace FILE]: what the model costs in RAM and per
// token at a RAM budget, the expected hit rate and the expected decode speed from the measured
// memory and disk bandwidth (engine/placement/placement_plan.h). See docs/cli.md "coli plan".
#include "commands.h"
#include "exit_codes.h"
#include "options.h"
#include "signals.h"

#include "diskbench/disk_bandwidth.h"
#include "placement/memory_bandwidth.h"
#include "placement/placement_plan.h"
#include "placement/plan_inputs.h"
#include "placement/routing_recorder.h"
#include "runtime/expert_budget.h"
#include "storage/database.h"
#include "storage/location.h"
#include "storage/model_identity.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace coli::cli {
namespace {

struct PlanOptions {
    ModelOptions model;
    std::string trace;
    bool json = false;
    std::optional<double> memGBps, diskGBps; // given rates (GB/s, 10^9 bytes/s)
    uint64_t diskReadBytes = 256ull << 20;   // bytes the disk measurement reads at most
};

// The learned heat of the model in the usage database, as a hit rate at `capacity`; nullopt when
// the database has no heat for the model (or cannot be read: a warning).
std::optional<double> heatHitRate(const PlanOptions& o, int capacity, std::string* dbPath) {
    Result<std::string> path = o.model.usageDb.empty() ? storage::defaultDatabasePath()
                                                       : Result<std::string>(o.model.usageDb);
    if (!path) {
        printWarning("usage database: " + path.status().message() + "; heat not used");
        return std::nullopt;
    }
    *dbPath = *path;
    auto db = storage::Storage::open(*path);
    if (!db) {
        printWarning("usage database: " + db.status().message() + "; heat not used");
        return std::nullopt;
    }
    auto identity = storage::modelIdentity(o.model.dir, db.value().get());
    if (!identity) {
        printWarning(identity.status().message() + "; heat not used");
        return std::nullopt;
    }
    auto id = db.value()->findModel(*identity);
    if (!id || !id.value()) return std::nullopt;
    auto heat = db.value()->loadHeat(**id);
    auto clock = db.value()->tokenClock(**id);
    if (!heat || !clock) {
        printWarning("usage database: " + (heat ? clock.status() : heat.status()).message() +
                     "; heat not used");
        return std::nullopt;
    }
    bool any = false;
    for (const auto& r : *heat)
        any = any || r.heat > 0;
    if (!any) return std::nullopt;
    return placement::heatHitRate(*heat, capacity, *clock, storage::kDefaultHalfLifeTokens);
}

std::string gbps(double bytesPerSecond) {
    return fmt::format("{:.2f} GB/s", bytesPerSecond / 1e9);
}

int runPlan(const PlanOptions& o) {
    installSigintHandler();
    int code = kExitOk;
    auto lm = loadModel(o.model, code);
    if (!lm) return code;
    auto shape = placement::planShape(lm->model());
    if (!shape) {
        printError(shape.status().message());
        return kExitUsage;
    }
    const uint64_t budget = lm->model().expertCache()->budget();
    const int capacity =
        expertsThatFit(budget, shape->slotBytes, shape->workingSlots, shape->totalExperts());

    // Hit rate: a given trace, else learned heat, else a trace recorded from the built-in prompt.
    double hitRate = 0;
    placement::HitRateSource source = placement::HitRateSource::None;
    std::string sourceDetail;
    nlohmann::ordered_json recorded; // the recorded trace's prompt and length (JSON only)
    const bool needHitRate = capacity > 0 && capacity < shape->totalExperts();
    // A given trace is always read and checked against the model, even when the budget alone
    // decides the hit rate (every expert fits, or none).
    if (!o.trace.empty()) {
        auto t = cachesim::readRoutingTrace(o.trace);
        if (!t) {
            printError("--trace: " + t.status().message());
            return kExitUsage;
        }
        auto h = placement::traceHitRate({&t.value(), 1}, *shape, capacity);
        if (!h) {
            printError("--trace: " + h.status().message());
            return kExitUsage;
        }
        hitRate = *h;
        source = placement::HitRateSource::Trace;
        sourceDetail =
            fmt::format("cache simulator (lfru) over {} ({} tokens)", o.trace, t->nTokens());
    }
    if (needHitRate && source == placement::HitRateSource::None && !o.model.noLearn) {
        std::string dbPath;
        if (auto h = heatHitRate(o, capacity, &dbPath)) {
            hitRate = *h;
            source = placement::HitRateSource::Heat;
            sourceDetail = fmt::format("share of learned heat in the hottest {} experts ({})",
                                       capacity, dbPath);
        }
    }
    if (needHitRate && source == placement::HitRateSource::None) {
        auto t = placement::recordRoutingTrace(*lm, placement::builtinPlanPrompt(),
                                               placement::kBuiltinPlanNewTokens, &interruptFlag(),
                                               "the built-in prompt");
        if (!t) {
            printError(t.status().message());
            return t.status().code() == ErrorCode::Cancelled ? kExitInterrupted : kExitGeneration;
        }
        auto h = placement::traceHitRate({&t.value(), 1}, *shape, capacity);
        if (!h) {
            printError(h.status().message());
            return kExitInternal;
        }
        hitRate = *h;
        source = placement::HitRateSource::Recorded;
        recorded = {{"prompt", placement::builtinPlanPrompt()},
                    {"new_tokens", placement::kBuiltinPlanNewTokens},
                    {"tokens", t->nTokens()}};
        sourceDetail = fmt::format("cache simulator (lfru) over the built-in prompt ({} tokens "
                                   "recorded)",
                                   t->nTokens());
    }

    // Rates: given, else measured.
    double memRate = 0, diskRate = 0;
    std::string memFrom, diskFrom;
    if (o.memGBps) {
        memRate = *o.memGBps * 1e9;
        memFrom = "given (--mem-bandwidth)";
    } else {
        auto m = placement::measureMemoryReadBandwidth();
        if (!m) {
            printError("memory bandwidth: " + m.status().message());
            return kExitInternal;
        }
        memRate = m->bytesPerSecond;
        memFrom = fmt::format("measured: streaming read of {} MiB, median of {}, {} threads",
                              m->bufferBytes >> 20, m->repetitions, m->threads);
    }
    if (o.diskGBps) {
        diskRate = *o.diskGBps * 1e9;
        diskFrom = "given (--disk-bandwidth)";
    } else {
        auto files = placement::modelWeightFiles(o.model.dir);
        if (!files) {
            printError(files.status().message());
            return kExitModel;
        }
        diskbench::BandwidthOptions bo;
        bo.totalBytes = o.diskReadBytes;
        auto d = diskbench::measureReadBandwidth(*files, bo);
        if (!d) {
            printError("disk bandwidth: " + d.status().message());
            return kExitModel;
        }
        diskRate = d->bytesPerSecond;
        diskFrom = fmt::format("measured: {} MiB of random reads over {} weight file{}, {}",
                               d->bytes >> 20, files->size(), files->size() == 1 ? "" : "s",
                               d->directIo ? "O_DIRECT"
                                           : "buffered (no O_DIRECT: may be the "
                                             "page cache's speed)");
    }

    auto plan = placement::makePlan(*shape, budget, hitRate, source, memRate, diskRate);
    if (!plan) {
        printError(plan.status().message());
        return kExitInternal;
    }
    const placement::PlacementPlan& p = *plan;
    if (p.hitRateSource == placement::HitRateSource::None)
        sourceDetail = p.expertsThatFit == 0 ? "no expert fits beside the working set"
                                             : "every expert fits in the budget";

    if (o.json) {
        nlohmann::ordered_json j = {
            {"format", "coli-plan"},
            {"version", 1},
            {"model", o.model.dir},
            {"dense_bytes", p.shape.denseBytes},
            {"bytes_per_expert", p.shape.bytesPerExpert},
            {"slot_bytes", p.shape.slotBytes},
            {"expert_bytes", p.shape.expertBytes()},
            {"total_experts", p.shape.totalExperts()},
            {"moe_layers", p.shape.moeLayers},
            {"experts_per_layer", p.shape.expertsPerLayer},
            {"top_k", p.shape.topK},
            {"budget_bytes", p.budgetBytes},
            {"working_set_bytes", p.workingSetBytes},
            {"working_slots", p.shape.workingSlots},
            {"cached_expert_bytes", p.cachedExpertBytes},
            {"experts_that_fit", p.expertsThatFit},
            {"hit_rate", p.hitRate},
            {"hit_rate_source", placement::hitRateSourceName(p.hitRateSource)},
            {"hit_rate_detail", sourceDetail},
            {"recorded_trace", recorded},
            {"mem_bytes_per_token", p.memBytesPerToken},
            {"disk_bytes_per_token", p.diskBytesPerToken},
            {"mem_bytes_per_second", p.memBytesPerSecond},
            {"mem_bandwidth_source", memFrom},
            {"disk_bytes_per_second", p.diskBytesPerSecond},
            {"disk_bandwidth_source", diskFrom},
            {"seconds_per_token", p.secondsPerToken},
            {"tokens_per_second", p.tokensPerSecond},
        };
        fmt::print("{}\n", j.dump(2));
        return kExitOk;
    }
    const double total = double(p.shape.totalExperts());
    fmt::print("model:               {}\n", o.model.dir);
    fmt::print("dense (resident):    {}\n", formatBytes(p.shape.denseBytes));
    fmt::print("experts:             {} ({} MoE layers x {}, top-{}), {} each, {} in all\n",
               p.shape.totalExperts(), p.shape.moeLayers, p.shape.expertsPerLayer, p.shape.topK,
               formatBytes(p.shape.bytesPerExpert), formatBytes(p.shape.expertBytes()));
    fmt::print("RAM budget:          {} = working set {} ({} slots) + cache {} ({} of {} experts, "
               "{:.1f} %)\n",
               formatBytes(p.budgetBytes), formatBytes(p.workingSetBytes), p.shape.workingSlots,
               formatBytes(p.cachedExpertBytes), p.expertsThatFit, p.shape.totalExperts(),
               total > 0 ? 100.0 * p.expertsThatFit / total : 0.0);
    fmt::print("expected hit rate:   {:.1f} %  [{}: {}]\n", 100.0 * p.hitRate,
               placement::hitRateSourceName(p.hitRateSource), sourceDetail);
    fmt::print("memory read/token:   {}  (dense + {} routed experts)\n",
               formatBytes(uint64_t(p.memBytesPerToken)), p.shape.moeLayers * p.shape.topK);
    fmt::print("disk read/token:     {}  (the misses)\n",
               formatBytes(uint64_t(p.diskBytesPerToken)));
    fmt::print("memory bandwidth:    {}  [{}]\n", gbps(p.memBytesPerSecond), memFrom);
    fmt::print("disk bandwidth:      {}  [{}]\n", gbps(p.diskBytesPerSecond), diskFrom);
    fmt::print("expected speed:      {:.2f} tok/s  ({:.1f} ms/token = memory {:.1f} + disk {:.1f}; "
               "no overlap assumed)\n",
               p.tokensPerSecond, 1e3 * p.secondsPerToken,
               p.memBytesPerSecond > 0 ? 1e3 * p.memBytesPerToken / p.memBytesPerSecond : 0.0,
               p.diskBytesPerSecond > 0 ? 1e3 * p.diskBytesPerToken / p.diskBytesPerSecond : 0.0);
    return kExitOk;
}

} // namespace

Command addPlanCommand(CLI::App& root) {
    auto o = std::make_shared<PlanOptions>();
    CLI::App* cmd = root.add_subcommand(
        "plan", "Plan the expert placement: RAM budget split, expected hit rate, bytes read per "
                "token and expected tok/s from the measured memory and disk bandwidth");
    cmd->footer(std::string("Time model and hit-rate sources: docs/cli.md \"coli plan\".\n") +
                kExitCodesHelp);
    addModelOptions(*cmd, o->model);
    addPlacementOptions(*cmd, o->model);
    cmd->add_option("--trace", o->trace,
                    "Routing trace (JSON lines from coli trace) for the hit rate (default: the "
                    "learned heat, else a trace recorded from a built-in prompt)")
        ->type_name("FILE")
        ->check(nonEmptyPath());
    cmd->add_flag("--json", o->json, "Print the plan as JSON");
    cmd->add_option("--mem-bandwidth", o->memGBps,
                    "Memory read bandwidth in GB/s instead of measuring it")
        ->type_name("GBPS")
        ->check(numberIn(1e-6, 1e6));
    cmd->add_option("--disk-bandwidth", o->diskGBps,
                    "Disk read bandwidth in GB/s instead of measuring it")
        ->type_name("GBPS")
        ->check(numberIn(1e-6, 1e6));
    cmd->add_option("--disk-read", o->diskReadBytes,
                    "Bytes the disk measurement reads at most (default 256MiB)")
        ->type_name("SIZE")
        ->transform(byteSize());
    return {cmd, [o] { return runPlan(*o); }};
}

} // namespace coli::cli
