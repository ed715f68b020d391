// coli bench decode MODEL_DIR: decode tokens/s with streamed experts at several RAM budgets, cold
// and warm, with bytes read per token, hit rates per tier and the I/O pool's efficiency as a
// ratio of the disk's bandwidth measured in the same run with the same request size and queue
// depth (docs/performance.md: median and min-max of the runs). A benchmark: nothing is asserted
// about speed; the tokens are (every run must decode the reference's, else it stops with an error;
// the reference is a resident load when every expert fits in memory, else the first streamed run;
// with --gpu a streamed run without the GPU). With --gpu each RAM budget is crossed with every VRAM
// budget (--vram-budgets), and the rows get the GPU columns (bench_gpu_columns.h).
#include "cmd_bench_decode.h"
#include "bench_gpu_columns.h"
#include "bench_phase_table.h"
#include "bench_stats.h"
#include "cmd_bench_resident.h"
#include "diskbench/io_bench.h"
#include "exit_codes.h"
#include "options.h"
#include "startup/omp_defaults.h"

#include "forward/model.h"
#include "runtime/expert_budget.h"
#include "tiers/expert_cache.h"
#include "tokenizer/tokenizer.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace coli::cli {
namespace {

struct BenchDecodeOptions {
    std::string model;
    std::string prompt = "The GNU General Public License is a free, copyleft license for "
                         "software and other kinds of works.";
    int tokens = 32;
    std::vector<std::string> budgets = {"0", "12.5%", "25%", "50%", "100%"};
    std::vector<std::string> states = {"cold", "warm"};
    int runs = 5;
    int ioDepth = 4;
    bool directIo = false; // --direct-io
    bool buffered = false; // --buffered
    int threads = 0;
    // --reference: the tokens every run must decode come from a resident load ("resident"), from
    // the first streamed run ("streamed"), or "auto": resident when every expert fits in the
    // memory available (a model bigger than memory cannot be loaded whole: it would be killed).
    std::string reference = "auto";
    bool resident = false;    // --resident: the memory roofline rows (cmd_bench_resident.h)
    std::vector<int> prefill; // --prefill lengths (with --resident)
    bool phases = false;      // --phases: per-phase times of the decode steps
    std::string gpu = "none"; // --gpu NAME|auto|none: the VRAM axis (bench_gpu_columns.h)
    // --vram-budgets; empty: {"0", "50%", "100%"} with a GPU, else {"0"}.
    std::vector<std::string> vramBudgets;
};

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

std::string range(const std::vector<double>& v, const char* f) {
    if (v.empty()) return "-";
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    return fmt::format(fmt::runtime(std::string(f) + "-" + f), *lo, *hi);
}

struct RunResult {
    std::vector<int32_t> ids;
    double decodeTokensPerSecond = 0;
    tiers::TierCounters decode; // counters over the decode steps only
    aio::IoStats io;            // the cache's pool over the whole run
    uint64_t budgetBytes = 0;
    std::string readMode;          // IoPool::readModeText() of a streamed run
    bool gpu = false;              // the run had a GPU tier
    GpuCounters gpuDecode, gpuRun; // over the decode steps; over the prompt and decode
};

// Budget text -> bytes: "0" (the working set), "N%" of every expert (plus the working set), or a
// size in bytes.
Result<uint64_t> budgetBytes(const std::string& text, const tiers::ExpertCache& cache) {
    const uint64_t all = uint64_t(cache.telemetry().residency.totalExperts) * cache.slotBytes();
    std::optional<double> pct;
    uint64_t bytes = 0;
    if (std::string e = parseBudget(text, &pct, &bytes); !e.empty())
        return Status(ErrorCode::InvalidArgument, "--budgets: " + e);
    if (!pct) return bytes;
    return cache.minimumBudget() +
           uint64_t(std::llround(double(all) * *pct / 100.0 / double(cache.slotBytes()))) *
               cache.slotBytes();
}

// How every load of the bench opens the model: its threads and I/O settings, experts streamed or
// resident, and `vramBytes` of VRAM on --gpu's device (0: no GPU tier).
ModelLoadOptions loadOptions(const BenchDecodeOptions& o, bool stream, uint64_t vramBytes = 0) {
    ModelLoadOptions lo;
    lo.threads = o.threads;
    lo.tiers.stream = stream;
    lo.tiers.ioQueueDepth = o.ioDepth;
    lo.tiers.directIo = directIoMode(o.directIo, o.buffered);
    lo.tiers.gpu = vramBytes ? o.gpu : "none";
    lo.tiers.vramBudgetBytes = vramBytes;
    return lo;
}

// The model of a run (or of a whole row with --cache hot): loaded with empty caches, its expert
// cache set to `budget`. On an error *code is the exit code (kExitUsage for a budget, else
// kExitModel).
Result<std::unique_ptr<Model>> loadForRun(const BenchDecodeOptions& o, bool stream,
                                          const std::string& budget, uint64_t vramBytes,
                                          int* code) {
    *code = kExitModel;
    auto model = Model::load(o.model, loadOptions(o, stream, vramBytes));
    if (!model) return model.status();
    Model& m = **model;
    if (vramBytes && !m.gpuActive()) // the device refused (its self-test, memory): no tier
        return Status(ErrorCode::Unsupported, "--gpu " + o.gpu + ": " + m.gpuNote());
    if (tiers::ExpertCache* cache = m.expertCache()) {
        Result<uint64_t> b = budgetBytes(budget, *cache);
        if (!b) {
            *code = kExitUsage;
            return b.status();
        }
        COLI_RETURN_IF_ERROR(cache->setBudget(*b));
    }
    return std::move(*model);
}

// One measured run on `m`: a new KV cache, the prompt, `tokens` greedy decode steps; the model's
// caches are as earlier runs left them (empty for a fresh model).
// phases: when set, the decode steps' per-phase times are added to it.
Result<RunResult> decodeOnce(const BenchDecodeOptions& o, const Tokenizer& tok, Model& m,
                             PhaseTimes* phases = nullptr) {
    RunResult r;
    r.gpu = m.gpuActive();
    tiers::ExpertCache* cache = m.expertCache();
    if (cache) r.budgetBytes = cache->budget();
    const aio::IoStats io0 = cache ? cache->pool().stats() : aio::IoStats{};
    const GpuCounters g0 = m.gpuCounters();
    std::vector<int32_t> ids = tok.encode(o.prompt, true);
    if (ids.empty()) return Status(ErrorCode::InvalidArgument, "the prompt gives no tokens");
    KVCache kv;
    std::vector<float> logits;
    COLI_RETURN_IF_ERROR(m.forward(ids, kv, logits));
    const tiers::TierCounters before = cache ? cache->telemetry().counters : tiers::TierCounters{};
    const GpuCounters g1 = m.gpuCounters();
    ForwardTimes times;
    times.phases = phases;
    const auto t0 = Clock::now();
    for (int i = 0; i < o.tokens; ++i) {
        const int32_t next =
            int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
        r.ids.push_back(next);
        COLI_RETURN_IF_ERROR(
            m.forward(std::span<const int32_t>(&next, 1), kv, logits, false, nullptr, &times));
    }
    r.decodeTokensPerSecond = o.tokens / seconds(t0, Clock::now());
    r.gpuDecode = gpuDelta(m.gpuCounters(), g1);
    r.gpuRun = gpuDelta(m.gpuCounters(), g0);
    if (cache) {
        cache->waitIdle();
        r.decode = cache->telemetry().counters - before;
        r.io = cache->pool().stats() - io0;
        r.readMode = cache->pool().readModeText();
    }
    return r;
}

// One run on a fresh model (empty caches): loadForRun, then decodeOnce.
Result<RunResult> runOnce(const BenchDecodeOptions& o, const Tokenizer& tok, bool stream,
                          const std::string& budget, uint64_t vramBytes, int* code,
                          PhaseTimes* phases = nullptr) {
    auto m = loadForRun(o, stream, budget, vramBytes, code);
    if (!m) return m.status();
    return decodeOnce(o, tok, **m, phases);
}

struct Row {
    std::string state, budget, vram;
    uint64_t budgetBytes = 0, vramBytes = 0;
    std::vector<double> tokps, waitShare, poolMBps, diskMBps, ratio;
    tiers::TierCounters last; // decode counters of the last run (the runs read the same bytes)
    GpuRowFigures gpu;
    PhaseTimes phases; // --phases: the measured runs' decode steps
    int measured = 0;  // runs summed in phases
};

int fail(const Status& s, int code) {
    fmt::print(stderr, "coli: error: {}\n", s.message());
    return code;
}

// Whether every routed expert fits in the memory available after the dense weights are loaded
// (the default budget's rule, runtime/expert_budget.h: the whole model when it fits); `why`
// receives the figures. With --gpu, *axis receives the VRAM axis (the device, the expert size).
Result<bool> everyExpertFits(const BenchDecodeOptions& o, std::string* why,
                             std::optional<VramAxis>* axis) {
    auto model = Model::load(o.model, loadOptions(o, true));
    if (!model) return model.status();
    if (o.gpu != "none") {
        Result<VramAxis> a = vramAxis(o.gpu, **model);
        if (!a) return a.status();
        *axis = *a;
    }
    const tiers::ExpertCache* cache = (*model)->expertCache();
    if (!cache) return true;
    auto mem = availableMemory();
    if (!mem) return mem.status();
    const uint64_t all = maximumExpertBudget(*cache), room = defaultExpertBudget(*cache, *mem);
    *why = fmt::format("every expert needs {}, the memory available allows {}", formatBytes(all),
                       formatBytes(room));
    return room >= all;
}

int runBenchDecode(const BenchDecodeOptions& o) {
    auto tok = Tokenizer::fromFile(o.model + "/tokenizer.json");
    if (!tok) return fail(tok.status(), kExitModel);
    std::optional<convert::Container> box;
    if (convert::isContainerDir(o.model)) {
        auto c = convert::openContainer(o.model);
        if (!c) return fail(c.status(), kExitModel);
        box = std::move(c.value());
    }
    // The correctness gate: every run decodes the reference's tokens (placement never changes
    // them).
    bool resident = o.reference == "resident";
    std::string why;
    std::optional<VramAxis> axis;
    if (o.reference == "auto" || o.gpu != "none") {
        std::string figures;
        auto fits = everyExpertFits(o, &figures, &axis);
        if (!fits) return fail(fits.status(), kExitModel);
        if (o.reference == "auto") {
            resident = *fits;
            why = figures;
        }
    }
    // The VRAM budgets in bytes (0: no GPU tier), checked before the first row.
    std::vector<uint64_t> vramBytes;
    for (const std::string& v : o.vramBudgets) {
        Result<uint64_t> b = axis ? vramBudgetBytes(v, *axis) : Result<uint64_t>(uint64_t(0));
        if (!b) return fail(b.status(), kExitUsage);
        vramBytes.push_back(*b);
    }
    int code = kExitModel;
    std::optional<RunResult> ref;
    if (resident || axis) { // with a GPU the reference is always the CPU's
        auto r = runOnce(o, **tok, !resident, resident ? "" : "0", 0, &code);
        if (!r) return fail(r.status(), code);
        ref = std::move(*r);
    }
    fmt::print("model:      {}\n", o.model);
    fmt::print("decode:     {} greedy tokens after a {}-token prompt; {} measured runs after one "
               "warm-up per row; threads {}\n",
               o.tokens, (*tok)->encode(o.prompt, true).size(), o.runs,
               o.threads > 0 ? std::to_string(o.threads) : std::string("all"));
    fmt::print("OpenMP:     {}\n", startup::ompWaitDescription());
    if (axis) fmt::print("gpu:        {}\n", describeVramAxis(*axis));
    if (resident)
        fmt::print("resident:   {:.2f} tok/s (every expert in RAM, read at load)\n",
                   ref->decodeTokensPerSecond);
    else if (ref)
        fmt::print("resident:   not run ({}); every run must decode the tokens of a streamed run "
                   "at the working set without a GPU\n",
                   why.empty() ? "--reference streamed" : why);
    else
        fmt::print("resident:   not run ({}); every run must decode the first streamed run's "
                   "tokens\n",
                   why.empty() ? "--reference streamed" : why);
    // The rows of each cache state: every RAM budget crossed with every VRAM budget.
    std::vector<std::pair<std::string, size_t>> cells;
    for (const std::string& b : o.budgets)
        for (size_t v = 0; v < o.vramBudgets.size(); ++v)
            cells.emplace_back(b, v);
    std::vector<Row> rows;
    std::string readMode;
    for (const std::string& state : o.states) {
        const bool cold = state == "cold";
        for (const auto& [budget, v] : cells) {
            Row row;
            row.state = state;
            row.budget = budget;
            row.vram = o.vramBudgets[v];
            row.vramBytes = vramBytes[v];
            // hot: one model for the row's warm-up and runs, so its expert cache keeps its slots.
            std::unique_ptr<Model> held;
            if (state == "hot") {
                auto m = loadForRun(o, true, budget, row.vramBytes, &code);
                if (!m) return fail(m.status(), code);
                held = std::move(*m);
            }
            for (int run = -1; run < o.runs; ++run) {
                if (cold && box) {
                    const Status dropped = diskbench::dropCaches(diskbench::shardFiles(*box));
                    if (!dropped.isOk()) return fail(dropped, kExitModel);
                }
                PhaseTimes* phases = o.phases && run >= 0 ? &row.phases : nullptr;
                auto r = held ? decodeOnce(o, **tok, *held, phases)
                              : runOnce(o, **tok, true, budget, row.vramBytes, &code, phases);
                if (o.phases && run >= 0) ++row.measured;
                if (!r) return fail(r.status(), code);
                if (!ref) ref = *r; // the first streamed run is the reference
                if (r->ids != ref->ids)
                    return fail({ErrorCode::Internal,
                                 fmt::format("budget {}{} ({}) decoded other tokens than the {}: "
                                             "placement changed the output",
                                             budget, axis ? ", VRAM " + row.vram : "", state,
                                             resident ? "resident model"
                                             : axis   ? "CPU's streamed run"
                                                      : "first streamed run")},
                                kExitGeneration);
                readMode = r->readMode;
                if (run < 0) continue; // warm-up
                row.budgetBytes = r->budgetBytes;
                row.last = r->decode;
                row.gpu.active = r->gpu;
                row.gpu.vramShare =
                    r->decode.routed ? double(r->decode.hitsVram) / double(r->decode.routed) : 0;
                row.gpu.add(r->gpuDecode, r->gpuRun, o.tokens);
                row.tokps.push_back(r->decodeTokensPerSecond);
                row.waitShare.push_back(r->decode.ioWaitSeconds * r->decodeTokensPerSecond /
                                        o.tokens); // wait seconds / decode seconds
                const double pool =
                    r->io.busySeconds > 0 ? double(r->io.bytes) / r->io.busySeconds : 0;
                row.poolMBps.push_back(pool / 1e6);
                if (box) {
                    // The disk's limit for this request size and queue depth, right after (A B).
                    const uint64_t len = box->experts.front().length;
                    auto reads = diskbench::randomReads(diskbench::shardFiles(*box), len,
                                                        uint64_t(16 * o.ioDepth), uint32_t(run));
                    if (!reads) return fail(reads.status(), kExitModel);
                    (void)diskbench::dropCaches(diskbench::shardFiles(*box));
                    aio::IoOptions io;
                    io.queueDepth = o.ioDepth;
                    io.directIo = aio::DirectIo::On;
                    auto disk = diskbench::runReads(diskbench::shardFiles(*box),
                                                    diskbench::ReadBatches{*reads}, io, false);
                    if (!disk) return fail(disk.status(), kExitModel);
                    row.diskMBps.push_back(disk->bytesPerSecond() / 1e6);
                    if (pool > 0 && disk->bytesPerSecond() > 0)
                        row.ratio.push_back(pool / disk->bytesPerSecond());
                }
            }
            rows.push_back(row);
        }
    }
    fmt::print("reads:      {} (streamed experts)\n", readMode);
    fmt::print("cache:      cold = POSIX_FADV_DONTNEED on every shard before each run; warm = "
               "the page cache keeps what earlier runs read, the expert cache starts empty; hot = "
               "both keep what the row's earlier runs read (one model per row)\n");
    // With --gpu: the VRAM budget after the RAM budget, the GPU columns last.
    const auto vramCells = [&](const std::string& a, const std::string& b) {
        return axis ? fmt::format(" {:>6} {:>8}", a, b) : std::string();
    };
    fmt::print("{:<5} {:>7} {:>10}{} {:>9} {:>13} {:>10} {:>6} {:>6} {:>6} {:>6} {:>6} {:>9} "
               "{:>9} {:>7}{}\n",
               "state", "budget", "MiB", vramCells("vram", "vramMiB"), "tok/s", "tok/s_min-max",
               "MiB/token", "hit%", "pin%", "fly%", "dem%", "wait%", "poolMB/s", "diskMB/s",
               "io/disk", axis ? fmt::format(" {}", gpuColumnsHeader()) : std::string());
    for (const Row& r : rows) {
        const tiers::TierCounters& c = r.last;
        const double routed = c.routed ? double(c.routed) : 1;
        const double hits = double(c.hitsPinned + c.hitsCache - c.inFlightHits);
        // Runs that read nothing (hot, everything in its slots) have no pool speed; a row without
        // a disk measurement (a checkpoint, or nothing read) no ratio.
        const bool read =
            std::any_of(r.poolMBps.begin(), r.poolMBps.end(), [](double v) { return v > 0; });
        fmt::print("{:<5} {:>7} {:>10.1f}{} {:>9.2f} {:>13} {:>10.2f} {:>6.1f} {:>6.1f} {:>6.1f} "
                   "{:>6.1f} {:>6.1f} {:>9} {:>9.1f} {:>7}{}\n",
                   r.state, r.budget, double(r.budgetBytes) / (1 << 20),
                   vramCells(r.vram, fmt::format("{:.1f}", double(r.vramBytes) / (1 << 20))),
                   median(r.tokps), range(r.tokps, "{:.2f}"),
                   c.tokens ? double(c.bytesRead) / double(c.tokens) / (1 << 20) : 0.0,
                   100 * hits / routed, 100 * double(c.hitsPinned) / routed,
                   100 * double(c.inFlightHits) / routed, 100 * double(c.misses) / routed,
                   100 * median(r.waitShare),
                   read ? fmt::format("{:.1f}", median(r.poolMBps)) : "-", median(r.diskMBps),
                   r.ratio.empty() ? "-" : fmt::format("{:.3f}", median(r.ratio)),
                   axis ? fmt::format(" {}", gpuColumns(r.gpu)) : std::string());
    }
    if (o.phases)
        for (const Row& r : rows)
            fmt::print("phases:     {} {}{}: decode steps of the {} runs, ms per token (work: a "
                       "thread's share of the phase up to its barrier; wait: at the barrier)\n{}",
                       r.state, r.budget, axis ? ", VRAM " + r.vram : std::string(), r.measured,
                       phaseTable(r.phases, double(r.measured) * o.tokens, "token"));
    fmt::print("hit% = ready in RAM when routed (pin% of them pinned), fly% = being read by a "
               "prefetch, dem% = read on demand; wait% = compute thread waiting for reads; "
               "poolMB/s = expert bytes / time the I/O pool was busy; diskMB/s = O_DIRECT random "
               "reads of one expert's length at the same queue depth, measured after each run; "
               "io/disk = their ratio (median; goal >= 0.8)\n");
    if (axis) fmt::print("{}\n", gpuColumnsLegend());
    return kExitOk;
}

} // namespace

Command addBenchDecodeCommand(CLI::App& bench) {
    auto o = std::make_shared<BenchDecodeOptions>();
    auto* cmd = bench.add_subcommand(
        "decode", "Decode tok/s with streamed experts at several RAM budgets, cold and warm");
    cmd->add_option("MODEL_DIR", o->model, "Model folder (a colibri container for disk ratios)")
        ->type_name("")
        ->required();
    cmd->add_option("-p,--prompt", o->prompt, "Prompt text")->type_name("TEXT");
    cmd->add_option("-n,--tokens", o->tokens, "Decode steps per run")
        ->type_name("N")
        ->check(integerIn(1, 4096));
    const CLI::Validator budgetText(
        [](std::string& t) {
            std::optional<double> pct;
            uint64_t bytes = 0;
            return parseBudget(t, &pct, &bytes);
        },
        "");
    cmd->add_option("--budgets", o->budgets,
                    "RAM budgets: 0 (working set), N% of the experts, or bytes")
        ->type_name("BUDGET,...")
        ->check(budgetText)
        ->delimiter(',');
    cmd->add_option("--gpu", o->gpu,
                    "The VRAM tier's device for the --vram-budgets rows (a part of its name, as "
                    "`coli info` lists them), auto (a discrete, else an integrated GPU) or none "
                    "(default)")
        ->type_name("NAME|auto|none")
        ->check(nonEmptyPath("use --gpu none for no GPU"));
    cmd->add_option("--vram-budgets", o->vramBudgets,
                    "With --gpu: VRAM budgets, each crossed with every RAM budget: 0 (no GPU "
                    "tier), N% of the routed experts, or bytes (default 0,50%,100%)")
        ->type_name("BUDGET,...")
        ->check(budgetText)
        ->delimiter(',');
    cmd->add_option("--cache", o->states,
                    "Cache states: cold, warm (page cache; the expert cache starts empty each "
                    "run), hot (the expert cache too keeps the row's earlier runs)")
        ->type_name("STATE,...")
        ->delimiter(',')
        ->check(CLI::IsMember({"cold", "warm", "hot"}));
    cmd->add_option("--runs", o->runs, "Measured runs per row after one warm-up")
        ->type_name("N")
        ->check(integerIn(1, 100));
    cmd->add_option("--io-depth", o->ioDepth, "Expert reads in flight")
        ->type_name("N")
        ->check(integerIn(1, 64));
    CLI::Option* direct = cmd->add_flag(
        "--direct-io", o->directIo,
        "Stream experts with O_DIRECT, refusing a file system without it (default: O_DIRECT "
        "where allowed)");
    cmd->add_flag("--buffered", o->buffered, "Stream experts buffered, never O_DIRECT")
        ->excludes(direct);
    cmd->add_option("-t,--threads", o->threads, "CPU threads (0 = all cores)")
        ->type_name("N")
        ->check(integerIn(0, 1024));
    cmd->add_option("--reference", o->reference,
                    "The tokens every run must decode: from a resident load, from the first "
                    "streamed run, or auto: resident when every expert fits in available memory")
        ->type_name("auto|resident|streamed")
        ->check(CLI::IsMember({"auto", "resident", "streamed"}));
    cmd->add_flag("--resident", o->resident,
                  "Every expert in RAM: tok/s against the memory read bandwidth (B_tok, R, ratio)");
    cmd->add_option("--prefill", o->prefill,
                    "With --resident: prefill rows for prompts of these lengths in tokens")
        ->type_name("N,...")
        ->delimiter(',')
        ->check(integerIn(1, 32768));
    cmd->add_flag("--phases", o->phases,
                  "Each thread's time per phase of the forward pass (work and wait at the "
                  "phase's barrier), per decode token (per row of budgets when streamed) and, "
                  "with --resident, per prefill prompt");
    return {cmd, [o, cmd]() -> int {
                if (o->gpu == "none" && !o->vramBudgets.empty()) {
                    fmt::print(stderr, "coli: error: --vram-budgets needs --gpu NAME|auto\n");
                    return kExitUsage;
                }
                if (o->vramBudgets.empty())
                    o->vramBudgets = o->gpu == "none"
                                         ? std::vector<std::string>{"0"}
                                         : std::vector<std::string>{"0", "50%", "100%"};
                if (!o->resident) {
                    if (!o->prefill.empty()) {
                        fmt::print(stderr, "coli: error: --prefill needs --resident\n");
                        return kExitUsage;
                    }
                    return runBenchDecode(*o);
                }
                BenchResidentOptions r;
                r.model = o->model;
                r.prompt = o->prompt;
                r.tokens = cmd->count("--tokens") ? o->tokens : 64;
                r.runs = cmd->count("--runs") ? o->runs : 9;
                r.threads = o->threads;
                r.prefill = o->prefill;
                r.gpu = o->gpu;
                r.vramBudgets = o->vramBudgets;
                r.phases = o->phases;
                return runBenchResident(r);
            }};
}

} // namespace coli::cli
