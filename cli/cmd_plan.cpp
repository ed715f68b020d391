// coli plan MODEL_DIR [--ram-budget SIZE] [--trace FILE]: what the model costs in RAM and per
// token at a RAM budget, the expected hit rate and the expected decode speed from the measured
// memory and disk bandwidth (engine/placement/placement_plan.h). See docs/cli.md "coli plan".
#include "commands.h"
#include "exit_codes.h"
#include "options.h"
#include "signals.h"

#include "placement/model_plan.h"
#include "placement/routing_recorder.h"
#include "runtime/expert_budget.h"

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

std::string gbps(double bytesPerSecond) {
    return fmt::format("{:.2f} GB/s", bytesPerSecond / 1e9);
}

int runPlan(const PlanOptions& o) {
    installSigintHandler();
    int code = kExitOk;
    auto lm = loadModel(o.model, code);
    if (!lm) return code;
    placement::ModelPlanOptions po;
    po.traceFile = o.trace;
    po.useHeat = !o.model.noLearn;
    po.usageDb = o.model.usageDb;
    if (o.memGBps) po.memBytesPerSecond = *o.memGBps * 1e9;
    if (o.diskGBps) po.diskBytesPerSecond = *o.diskGBps * 1e9;
    po.diskReadBytes = o.diskReadBytes;
    po.cancel = &interruptFlag();
    placement::PlanStep failedAt = placement::PlanStep::None;
    auto report = placement::planLoadedModel(*lm, o.model.dir, po, &failedAt);
    if (!report) {
        printError(report.status().message());
        switch (failedAt) {
        case placement::PlanStep::Shape:
        case placement::PlanStep::Trace:
            return kExitUsage;
        case placement::PlanStep::Record:
            return report.status().code() == ErrorCode::Cancelled ? kExitInterrupted
                                                                  : kExitGeneration;
        case placement::PlanStep::Disk:
            return kExitModel;
        default:
            return kExitInternal;
        }
    }
    for (const std::string& w : report->warnings)
        printWarning(w);
    const std::string& sourceDetail = report->hitRateDetail;
    std::string memFrom = o.memGBps ? "given (--mem-bandwidth)" : report->memFrom;
    std::string diskFrom = o.diskGBps ? "given (--disk-bandwidth)" : report->diskFrom;
    nlohmann::ordered_json recorded; // the recorded trace's prompt and length (JSON only)
    if (report->plan.hitRateSource == placement::HitRateSource::Recorded)
        recorded = {{"prompt", placement::builtinPlanPrompt()},
                    {"new_tokens", placement::kBuiltinPlanNewTokens},
                    {"tokens", report->recordedTokens}};
    const placement::PlacementPlan& p = report->plan;

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
            {"gpu_device", report->gpuDevice},
            {"vram_experts", report->vramExperts},
            {"vram_budget_bytes", report->vramBudgetBytes},
            {"vram_share", report->vramShareKnown ? nlohmann::ordered_json(report->vramShare)
                                                  : nlohmann::ordered_json()},
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
    if (!report->gpuDevice.empty())
        fmt::print("VRAM tier:           {}, {} of {} experts ({}); expected share of routed "
                   "experts computed there: {} (the speed below counts the CPU only)\n",
                   report->gpuDevice, report->vramExperts, p.shape.totalExperts(),
                   formatBytes(report->vramBudgetBytes),
                   report->vramShareKnown ? fmt::format("{:.1f} %", 100.0 * report->vramShare)
                                          : std::string("unknown (no learned heat)"));
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
