// coli bench decode MODEL_DIR: decode tokens/s with streamed experts at several RAM budgets, cold
// and warm, with bytes read per token, hit rates per tier and the I/O pool's efficiency as a
// ratio of the disk's bandwidth measured in the same run with the same request size and queue
// depth (docs/performance.md: median and min-max of the runs). A benchmark: nothing is asserted
// about speed; the tokens are (every run must decode the reference's, else it stops with an error;
// the reference is a resident load when every expert fits in memory, else the first streamed run).
#include "cmd_bench_decode.h"
#include "bench_stats.h"
#include "cmd_bench_resident.h"
#include "diskbench/io_bench.h"
#include "exit_codes.h"
#include "options.h"
#include "startup/omp_defaults.h"

#include "core/number_text.h"
#include "forward/model.h"
#include "runtime/expert_budget.h"
#include "tiers/expert_cache.h"
#include "tokenizer/tokenizer.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
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
    std::string readMode; // IoPool::readModeText() of a streamed run
};

tiers::TierCounters minus(const tiers::TierCounters& b, const tiers::TierCounters& a) {
    tiers::TierCounters d;
    d.routed = b.routed - a.routed;
    d.hitsPinned = b.hitsPinned - a.hitsPinned;
    d.hitsCache = b.hitsCache - a.hitsCache;
    d.inFlightHits = b.inFlightHits - a.inFlightHits;
    d.misses = b.misses - a.misses;
    d.bytesRead = b.bytesRead - a.bytesRead;
    d.ioWaitSeconds = b.ioWaitSeconds - a.ioWaitSeconds;
    d.tokens = b.tokens - a.tokens;
    return d;
}

// A --budgets item: "N%" of every expert (0 < N <= 100) into *percent, else a plain byte count
// (0 = the working set; no unit suffix, docs/cli.md) into *bytes. Returns "" or the problem.
std::string parseBudget(const std::string& text, std::optional<double>* percent, uint64_t* bytes) {
    if (!text.empty() && text.back() == '%') {
        double pct = 0;
        const std::string num = text.substr(0, text.size() - 1);
        if (!parseDecimal(num, 0, 100, &pct).empty() || pct <= 0)
            return "bad percentage '" + text + "' (0 < N <= 100)";
        *percent = pct;
        return {};
    }
    *percent = std::nullopt;
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
        return "'" + text + "' is not 0, N% or a byte count";
    return parseUnsigned(text, 0, std::numeric_limits<uint64_t>::max(), bytes);
}

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
// resident.
ModelLoadOptions loadOptions(const BenchDecodeOptions& o, bool stream) {
    ModelLoadOptions lo;
    lo.threads = o.threads;
    lo.tiers.stream = stream;
    lo.tiers.ioQueueDepth = o.ioDepth;
    lo.tiers.directIo = directIoMode(o.directIo, o.buffered);
    return lo;
}

// One measured run: fresh model (empty cache), prompt, `tokens` greedy decode steps.
Result<RunResult> runOnce(const BenchDecodeOptions& o, const Tokenizer& tok, bool stream,
                          const std::string& budget) {
    auto model = Model::load(o.model, loadOptions(o, stream));
    if (!model) return model.status();
    Model& m = **model;
    RunResult r;
    tiers::ExpertCache* cache = m.expertCache();
    if (cache) {
        Result<uint64_t> b = budgetBytes(budget, *cache);
        if (!b) return b.status();
        COLI_RETURN_IF_ERROR(cache->setBudget(*b));
        r.budgetBytes = cache->budget();
    }
    std::vector<int32_t> ids = tok.encode(o.prompt, true);
    if (ids.empty()) return Status(ErrorCode::InvalidArgument, "the prompt gives no tokens");
    KVCache kv;
    std::vector<float> logits;
    COLI_RETURN_IF_ERROR(m.forward(ids, kv, logits));
    const tiers::TierCounters before = cache ? cache->telemetry().counters : tiers::TierCounters{};
    const auto t0 = Clock::now();
    for (int i = 0; i < o.tokens; ++i) {
        const int32_t next =
            int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
        r.ids.push_back(next);
        COLI_RETURN_IF_ERROR(m.forward(std::span<const int32_t>(&next, 1), kv, logits));
    }
    r.decodeTokensPerSecond = o.tokens / seconds(t0, Clock::now());
    if (cache) {
        cache->waitIdle();
        r.decode = minus(cache->telemetry().counters, before);
        r.io = cache->pool().stats();
        r.readMode = cache->pool().readModeText();
    }
    return r;
}

struct Row {
    std::string state, budget;
    uint64_t budgetBytes = 0;
    std::vector<double> tokps, waitShare, poolMBps, diskMBps, ratio;
    tiers::TierCounters last; // decode counters of the last run (the runs read the same bytes)
};

int fail(const Status& s, int code) {
    fmt::print(stderr, "coli: error: {}\n", s.message());
    return code;
}

// Whether every routed expert fits in the memory available after the dense weights are loaded
// (the default budget's rule, runtime/expert_budget.h: the whole model when it fits); `why`
// receives the figures.
Result<bool> everyExpertFits(const BenchDecodeOptions& o, std::string* why) {
    auto model = Model::load(o.model, loadOptions(o, true));
    if (!model) return model.status();
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
    if (o.reference == "auto") {
        auto fits = everyExpertFits(o, &why);
        if (!fits) return fail(fits.status(), kExitModel);
        resident = *fits;
    }
    std::optional<RunResult> ref;
    if (resident) {
        auto r = runOnce(o, **tok, false, "");
        if (!r) return fail(r.status(), kExitModel);
        ref = std::move(*r);
    }
    fmt::print("model:      {}\n", o.model);
    fmt::print("decode:     {} greedy tokens after a {}-token prompt; {} measured runs after one "
               "warm-up per row; threads {}\n",
               o.tokens, (*tok)->encode(o.prompt, true).size(), o.runs,
               o.threads > 0 ? std::to_string(o.threads) : std::string("all"));
    fmt::print("OpenMP:     {}\n", startup::ompWaitDescription());
    if (ref)
        fmt::print("resident:   {:.2f} tok/s (every expert in RAM, read at load)\n",
                   ref->decodeTokensPerSecond);
    else
        fmt::print("resident:   not run ({}); every run must decode the first streamed run's "
                   "tokens\n",
                   why.empty() ? "--reference streamed" : why);
    std::vector<Row> rows;
    std::string readMode;
    for (const std::string& state : o.states) {
        const bool cold = state == "cold";
        for (const std::string& budget : o.budgets) {
            Row row;
            row.state = state;
            row.budget = budget;
            for (int run = -1; run < o.runs; ++run) {
                if (cold && box) {
                    const Status dropped = diskbench::dropCaches(diskbench::shardFiles(*box));
                    if (!dropped.isOk()) return fail(dropped, kExitModel);
                }
                auto r = runOnce(o, **tok, true, budget);
                if (!r)
                    return fail(r.status(), r.status().code() == ErrorCode::InvalidArgument
                                                ? kExitUsage
                                                : kExitModel);
                if (!ref) ref = *r; // the first streamed run is the reference
                if (r->ids != ref->ids)
                    return fail({ErrorCode::Internal,
                                 fmt::format("budget {} ({}) decoded other tokens than the {}: "
                                             "placement changed the output",
                                             budget, state,
                                             resident ? "resident model" : "first streamed run")},
                                kExitGeneration);
                readMode = r->readMode;
                if (run < 0) continue; // warm-up
                row.budgetBytes = r->budgetBytes;
                row.last = r->decode;
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
               "the page cache keeps what earlier runs read; the expert cache starts empty\n");
    fmt::print("{:<5} {:>7} {:>10} {:>9} {:>13} {:>10} {:>6} {:>6} {:>6} {:>6} {:>6} {:>9} {:>9} "
               "{:>7}\n",
               "state", "budget", "MiB", "tok/s", "tok/s_min-max", "MiB/token", "hit%", "pin%",
               "fly%", "dem%", "wait%", "poolMB/s", "diskMB/s", "io/disk");
    for (const Row& r : rows) {
        const tiers::TierCounters& c = r.last;
        const double routed = c.routed ? double(c.routed) : 1;
        const double hits = double(c.hitsPinned + c.hitsCache - c.inFlightHits);
        fmt::print("{:<5} {:>7} {:>10.1f} {:>9.2f} {:>13} {:>10.2f} {:>6.1f} {:>6.1f} {:>6.1f} "
                   "{:>6.1f} {:>6.1f} {:>9.1f} {:>9.1f} {:>7.3f}\n",
                   r.state, r.budget, double(r.budgetBytes) / (1 << 20), median(r.tokps),
                   range(r.tokps, "{:.2f}"),
                   c.tokens ? double(c.bytesRead) / double(c.tokens) / (1 << 20) : 0.0,
                   100 * hits / routed, 100 * double(c.hitsPinned) / routed,
                   100 * double(c.inFlightHits) / routed, 100 * double(c.misses) / routed,
                   100 * median(r.waitShare), median(r.poolMBps), median(r.diskMBps),
                   median(r.ratio));
    }
    fmt::print("hit% = ready in RAM when routed (pin% of them pinned), fly% = being read by a "
               "prefetch, dem% = read on demand; wait% = compute thread waiting for reads; "
               "poolMB/s = expert bytes / time the I/O pool was busy; diskMB/s = O_DIRECT random "
               "reads of one expert's length at the same queue depth, measured after each run; "
               "io/disk = their ratio (median; goal >= 0.8)\n");
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
    cmd->add_option("--budgets", o->budgets,
                    "RAM budgets: 0 (working set), N% of the experts, or bytes")
        ->type_name("BUDGET,...")
        ->check(CLI::Validator(
            [](std::string& t) {
                std::optional<double> pct;
                uint64_t bytes = 0;
                return parseBudget(t, &pct, &bytes);
            },
            ""))
        ->delimiter(',');
    cmd->add_option("--cache", o->states, "Page-cache states: cold, warm")
        ->type_name("STATE,...")
        ->delimiter(',')
        ->check(CLI::IsMember({"cold", "warm"}));
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
    return {cmd, [o, cmd]() -> int {
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
                return runBenchResident(r);
            }};
}

} // namespace coli::cli
