// coli cache-sim TRACE... [--capacity 10%,25%,50%|N] [--policy lru,lfu,lfru,belady] [--chunk N]:
// replays `coli trace` routing traces against an expert cache of each capacity under each policy
// (engine/cachesim) and prints the hit rates, and each policy's as a fraction of Belady's
// optimum. See docs/cli.md "coli cache-sim".
#include "commands.h"
#include "exit_codes.h"
#include "options.h"

#include "cachesim/access_sequence.h"
#include "cachesim/simulator.h"
#include "cachesim/trace_reader.h"
#include "tiers/expert_cache.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace coli::cli {
namespace {

using cachesim::Policy;

struct CacheSimOptions {
    std::vector<std::string> traces;
    std::string capacities = "10%,25%,50%";
    std::string policies = "lru,lfu,lfru,belady";
    int chunk = 1;
    double halfLife = tiers::CacheOptions{}.evictionHalfLifeTokens; // the engine's LFRU
    int64_t bytesPerExpert = 0;
    std::string jsonOut;
};

std::vector<std::string> splitCommas(const std::string& s) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= s.size()) {
        const size_t comma = std::min(s.find(',', start), s.size());
        out.push_back(s.substr(start, comma - start));
        start = comma + 1;
    }
    return out;
}

// "1,234,567"
std::string grouped(int64_t v) {
    std::string digits = std::to_string(v), out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

int runCacheSim(const CacheSimOptions& o) {
    // Policies: as listed, Belady added last when missing (it is the reference of the ratios).
    std::vector<Policy> policies;
    for (const std::string& name : splitCommas(o.policies)) {
        auto p = cachesim::parsePolicy(name);
        if (!p) {
            printError(fmt::format("--policy: unknown policy '{}' (choose from lru, lfu, lfru, "
                                   "belady)",
                                   name));
            return kExitUsage;
        }
        if (std::find(policies.begin(), policies.end(), *p) == policies.end())
            policies.push_back(*p);
    }
    if (std::find(policies.begin(), policies.end(), Policy::Belady) == policies.end())
        policies.push_back(Policy::Belady);

    std::vector<cachesim::RoutingTraceFile> traces;
    for (const std::string& path : o.traces) {
        auto t = cachesim::readRoutingTrace(path);
        if (!t) {
            printError(t.status().message());
            return kExitUsage;
        }
        traces.push_back(std::move(t.value()));
    }
    auto seq = cachesim::buildAccessSequence(traces, o.chunk);
    if (!seq) {
        printError(seq.status().message());
        return kExitUsage;
    }
    const int total = seq->totalExperts();
    std::vector<int> capacities;
    for (const std::string& text : splitCommas(o.capacities)) {
        auto c = cachesim::parseCapacity(text, total);
        if (!c) {
            printError("--capacity: " + c.status().message());
            return kExitUsage;
        }
        capacities.push_back(*c);
    }

    // results[c][p]
    std::vector<std::vector<cachesim::SimResult>> results(capacities.size());
    for (size_t c = 0; c < capacities.size(); ++c)
        for (Policy p : policies) {
            auto r = cachesim::simulate(*seq, {p, capacities[c], o.halfLife, o.bytesPerExpert});
            if (!r) {
                printError(r.status().message());
                return kExitUsage;
            }
            results[c].push_back(*r);
        }
    const size_t belady =
        size_t(std::find(policies.begin(), policies.end(), Policy::Belady) - policies.begin());

    fmt::print("traces:   {} file{}, {} tokens in {} steps (prefill chunk {}), {} MoE layers x {} "
               "experts = {}, top-{}\n",
               traces.size(), traces.size() == 1 ? "" : "s", grouped(seq->tokens),
               grouped(seq->steps), o.chunk, seq->moeLayers.size(), seq->nExperts, total,
               traces.front().topK);
    fmt::print("accesses: {} (LFRU half-life {} tokens)\n",
               grouped(results.empty() ? 0 : results[0][0].accesses), o.halfLife);
    // Columns of 18 characters; the last cell of a row is not padded.
    auto printRow = [](std::vector<std::string> cells) {
        std::string line;
        for (size_t i = 0; i < cells.size(); ++i)
            line += i + 1 < cells.size() ? fmt::format("{:<18}", cells[i]) : cells[i];
        fmt::print("{}\n", line);
    };
    std::vector<std::string> head = {"capacity"};
    for (Policy p : policies)
        head.push_back(cachesim::policyName(p));
    fmt::print("hit rate (fraction of belady's):\n");
    printRow(head);
    for (size_t c = 0; c < capacities.size(); ++c) {
        std::vector<std::string> row = {fmt::format("{:>4} ({:.1f}%)", capacities[c],
                                                    total ? 100.0 * capacities[c] / total : 0.0)};
        const double best = results[c][belady].hitRate();
        for (const auto& r : results[c])
            row.push_back(fmt::format("{:6.2f}% ({:.3f})", 100.0 * r.hitRate(),
                                      best > 0 ? r.hitRate() / best : 1.0));
        printRow(row);
    }
    if (o.bytesPerExpert > 0) {
        fmt::print("MiB read per token ({} bytes per expert):\n", grouped(o.bytesPerExpert));
        printRow(head);
        for (size_t c = 0; c < capacities.size(); ++c) {
            std::vector<std::string> row = {fmt::format("{:>4}", capacities[c])};
            for (const auto& r : results[c])
                row.push_back(fmt::format("{:.3f}", double(r.bytesRead) / 1048576.0 /
                                                        double(std::max<int64_t>(1, seq->tokens))));
            printRow(row);
        }
    }

    if (!o.jsonOut.empty()) {
        nlohmann::json rows = nlohmann::json::array();
        for (size_t c = 0; c < capacities.size(); ++c)
            for (size_t p = 0; p < policies.size(); ++p) {
                const auto& r = results[c][p];
                rows.push_back({{"capacity", capacities[c]},
                                {"policy", cachesim::policyName(policies[p])},
                                {"accesses", r.accesses},
                                {"hits", r.hits},
                                {"misses", r.misses},
                                {"evictions", r.evictions},
                                {"bytes_read", r.bytesRead},
                                {"hit_rate", r.hitRate()}});
            }
        const nlohmann::json j = {{"format", "coli-cache-sim"},
                                  {"version", 1},
                                  {"traces", o.traces},
                                  {"tokens", seq->tokens},
                                  {"steps", seq->steps},
                                  {"chunk", o.chunk},
                                  {"total_experts", total},
                                  {"half_life_tokens", o.halfLife},
                                  {"bytes_per_expert", o.bytesPerExpert},
                                  {"results", rows}};
        if (const int rc = writeJsonOption(o.jsonOut, j); rc != kExitOk) return rc;
    }
    return kExitOk;
}

} // namespace

Command addCacheSimCommand(CLI::App& root) {
    auto o = std::make_shared<CacheSimOptions>();
    CLI::App* cmd = root.add_subcommand(
        "cache-sim", "Replay routing traces (coli trace) against an expert cache: hit rates of "
                     "LRU, LFU, LFRU and Belady's optimum");
    cmd->footer(std::string("Semantics: docs/cli.md \"coli cache-sim\".\n") + kExitCodesHelp);
    cmd->add_option("traces", o->traces,
                    "Trace files (JSON lines from coli trace), replayed in order")
        ->type_name("")
        ->required();
    cmd->add_option("--capacity", o->capacities,
                    "Cache sizes: percentages of all routed experts and/or expert counts, "
                    "comma-separated (default 10%,25%,50%)")
        ->type_name("SIZE,...");
    cmd->add_option("--policy", o->policies,
                    "Policies, comma-separated (default lru,lfu,lfru,belady; belady is always "
                    "computed)")
        ->type_name("NAME,...");
    cmd->add_option("--chunk", o->chunk,
                    "Prompt tokens per prefill step (default 1: every token its own step)")
        ->type_name("N")
        ->check(integerIn(1, 1000000));
    cmd->add_option("--half-life", o->halfLife,
                    "LFRU heat half-life in tokens (default 16, the engine's eviction heat)")
        ->type_name("TOKENS")
        ->check(numberIn(0, std::numeric_limits<double>::max()))
        ->check(CLI::Validator(
            [](std::string& s) { return std::stod(s) > 0 ? "" : s + " is not above 0"; }, ""));
    cmd->add_option("--bytes-per-expert", o->bytesPerExpert,
                    "Bytes of one expert read (coli info); adds MiB read per token")
        ->type_name("BYTES")
        ->check(integerIn(0, std::numeric_limits<int64_t>::max()));
    cmd->add_option("--json", o->jsonOut, "Also write every result as JSON here")
        ->type_name("FILE")
        ->check(nonEmptyPath());
    return {cmd, [o] { return runCacheSim(*o); }};
}

} // namespace coli::cli
