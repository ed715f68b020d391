// coli route-stats MODEL_DIR --domain NAME=FILE ...: which experts each domain's text is routed
// to, measured by the engine's own forward pass (RoutingTrace). See docs/cli.md.
//
// For domain d, MoE layer l and expert e: share_d[l][e] = routed slots of e / (tokens_d * top_k)
// (a slot is one of a token's top-k choices, so the shares of a layer sum to 1 per domain).
// balanced[l][e] = mean over domains of share_d[l][e]: the share on a domain-balanced mix, so a
// domain with more text does not dominate. An expert is a specialist of d when
// share_d >= 3 x balanced and balanced >= 1% (issue 3's criterion): the one definition in
// viz/specialists.h, which `coli atlas` and the Atlas share.
#include "commands.h"
#include "exit_codes.h"
#include "options.h"
#include "signals.h"

#include "forward/model.h"
#include "viz/specialists.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>

namespace coli::cli {
namespace {

constexpr double kRatio = viz::kSpecialistRatio;
constexpr double kMinBalanced = viz::kSpecialistMinBalanced;

struct RouteStatsOptions {
    ModelOptions model;
    std::vector<std::string> domains; // NAME=FILE
    int64_t maxTokens = 0;            // per domain; 0 = the whole file
    int window = 0;                   // 0 = min(context, 256)
    std::string jsonOut;
};

struct Domain {
    std::string name, file;
    int64_t tokens = 0;
    int64_t windows = 0;
    std::vector<std::vector<int64_t>> counts; // [n_moe_layers, n_experts] routed slots
};

struct Specialist {
    int expert = 0;
    size_t domain = 0;
    double share = 0, balanced = 0;
};

// Splits NAME=FILE and reads FILE. Returns "" or an error message.
std::string readDomain(const std::string& spec, Domain& d, std::string& text) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
        return fmt::format("--domain {}: expected NAME=FILE", spec);
    d.name = spec.substr(0, eq);
    d.file = spec.substr(eq + 1);
    std::ifstream in(d.file, std::ios::binary);
    if (!in) return fmt::format("--domain {}: cannot read {}", d.name, d.file);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (in.bad()) return fmt::format("--domain {}: read error in {}", d.name, d.file);
    return "";
}

double share(const Domain& d, int layer, int expert, int topK) {
    return viz::routingShare(d.counts[layer][expert], d.tokens, topK);
}

int runRouteStats(const RouteStatsOptions& o) {
    std::vector<Domain> domains(o.domains.size());
    std::vector<std::string> texts(o.domains.size());
    std::set<std::string> names;
    for (size_t i = 0; i < o.domains.size(); ++i) {
        if (std::string e = readDomain(o.domains[i], domains[i], texts[i]); !e.empty()) {
            printError(e);
            return kExitUsage;
        }
        if (!names.insert(domains[i].name).second) {
            printError(fmt::format("--domain {}: the name is given twice", domains[i].name));
            return kExitUsage;
        }
    }

    installSigintHandler();
    int code = kExitOk;
    auto lm = loadModel(o.model, code);
    if (!lm) return code;
    const Model& model = lm->model();
    const ModelConfig& c = model.config();
    const int window = o.window > 0 ? o.window : std::min(c.maxPositions, 256);
    if (window > c.maxPositions) {
        printError(fmt::format("--window {}: above the model's context length {}", window,
                               c.maxPositions));
        return kExitUsage;
    }

    std::vector<int> moeLayers;
    KVCache kv;
    std::vector<float> logits;
    RoutingTrace r;
    for (size_t di = 0; di < domains.size(); ++di) {
        Domain& d = domains[di];
        // Plain text, no BOS: every window starts mid-stream, as in training on packed text.
        std::vector<int32_t> ids = lm->tokenizer().encode(texts[di], /*addSpecial=*/false);
        texts[di].clear();
        if (o.maxTokens > 0 && int64_t(ids.size()) > o.maxTokens) ids.resize(size_t(o.maxTokens));
        if (ids.empty()) {
            printError(fmt::format("--domain {}: {} has no tokens", d.name, d.file));
            return kExitUsage;
        }
        for (size_t at = 0; at < ids.size(); at += size_t(window)) {
            if (interruptFlag().load()) {
                printError("interrupted");
                return kExitInterrupted;
            }
            const size_t n = std::min(ids.size() - at, size_t(window));
            kv.clear();
            if (Status s = model.forward({ids.data() + at, n}, kv, logits, false, &r); !s.isOk()) {
                printError(fmt::format("--domain {}: forward failed at token {}: {}", d.name, at,
                                       s.message()));
                return kExitGeneration;
            }
            if (moeLayers.empty()) moeLayers = r.moeLayers;
            if (d.counts.empty())
                d.counts.assign(moeLayers.size(), std::vector<int64_t>(c.nExperts, 0));
            for (int t = 0; t < r.nTokens; ++t)
                for (int i = 0; i < r.nMoeLayers(); ++i)
                    for (int32_t e : r.expertsAt(t, i))
                        ++d.counts[i][e];
            d.tokens += r.nTokens;
            ++d.windows;
        }
    }
    if (moeLayers.empty()) {
        printError("the model has no MoE layers: nothing is routed");
        return kExitModel;
    }

    const int L = int(moeLayers.size()), E = c.nExperts, K = c.topK;
    fmt::print("route-stats: {} MoE layers x {} experts, top-{}, windows of {} tokens\n", L, E, K,
               window);
    for (const Domain& d : domains)
        fmt::print("  domain {:<16} {:>9} tokens {:>6} windows  {}\n", d.name, d.tokens, d.windows,
                   d.file);
    fmt::print("experts whose share in a domain is >= {:.0f}x their balanced share "
               "(balanced >= {:.0f}%):\n",
               kRatio, kMinBalanced * 100);

    nlohmann::json jLayers = nlohmann::json::array();
    std::vector<int> perLayer(L, 0);
    std::vector<int> perDomain(domains.size(), 0);
    int counted = 0, specialists = 0; // experts with balanced >= 1%; those passing the test
    for (int i = 0; i < L; ++i) {
        std::vector<double> balanced(E, 0.0), shares(domains.size());
        for (int e = 0; e < E; ++e) {
            for (size_t di = 0; di < domains.size(); ++di)
                shares[di] = share(domains[di], i, e, K);
            balanced[e] = viz::balancedShare(shares);
        }
        std::vector<Specialist> found;
        int maxRatioExpert = -1;
        double maxRatio = 0;
        for (int e = 0; e < E; ++e) {
            if (balanced[e] < kMinBalanced) continue;
            ++counted;
            bool passes = false;
            for (size_t di = 0; di < domains.size(); ++di) {
                const double s = share(domains[di], i, e, K);
                if (s / balanced[e] > maxRatio) maxRatio = s / balanced[e], maxRatioExpert = e;
                if (viz::isSpecialistShare(s, balanced[e])) {
                    found.push_back({e, di, s, balanced[e]});
                    ++perDomain[di];
                    passes = true;
                }
            }
            specialists += passes;
            perLayer[i] += passes;
        }
        std::string line;
        for (const Specialist& s : found)
            line += fmt::format(" e{}:{} {:.1f}% vs {:.1f}% ({:.1f}x)", s.expert,
                                domains[s.domain].name, 100 * s.share, 100 * s.balanced,
                                s.share / s.balanced);
        fmt::print("  layer {:>3}: {:>3} experts{}{}\n", moeLayers[i], perLayer[i],
                   found.empty() ? "" : ":", line);
        if (found.empty() && maxRatioExpert >= 0)
            fmt::print("             (highest: e{} at {:.2f}x)\n", maxRatioExpert, maxRatio);

        nlohmann::json jShares = nlohmann::json::object();
        for (const Domain& d : domains) {
            std::vector<double> s(E);
            for (int e = 0; e < E; ++e)
                s[e] = share(d, i, e, K);
            jShares[d.name] = s;
        }
        nlohmann::json jSpec = nlohmann::json::array();
        for (const Specialist& s : found)
            jSpec.push_back({{"expert", s.expert},
                             {"domain", domains[s.domain].name},
                             {"share", s.share},
                             {"balanced", s.balanced},
                             {"ratio", s.share / s.balanced}});
        jLayers.push_back({{"layer", moeLayers[i]},
                           {"balanced", balanced},
                           {"shares", jShares},
                           {"specialists", jSpec}});
    }
    std::string byDomain;
    for (size_t di = 0; di < domains.size(); ++di)
        byDomain += fmt::format(" {}={}", domains[di].name, perDomain[di]);
    fmt::print("summary: {} of {} experts with >= {:.0f}% balanced share are >= {:.0f}x in some "
               "domain; layers with any: {} of {}; per domain:{}\n",
               specialists, counted, kMinBalanced * 100, kRatio,
               std::count_if(perLayer.begin(), perLayer.end(), [](int n) { return n > 0; }), L,
               byDomain);

    if (!o.jsonOut.empty()) {
        nlohmann::json jDomains = nlohmann::json::array();
        for (size_t di = 0; di < domains.size(); ++di)
            jDomains.push_back({{"name", domains[di].name},
                                {"file", domains[di].file},
                                {"tokens", domains[di].tokens},
                                {"windows", domains[di].windows},
                                {"specialists", perDomain[di]}});
        const nlohmann::json j = {{"format", "coli-route-stats"},
                                  {"version", 1},
                                  {"model", lm->dir()},
                                  {"window", window},
                                  {"n_experts", E},
                                  {"top_k", K},
                                  {"ratio", kRatio},
                                  {"min_balanced", kMinBalanced},
                                  {"domains", jDomains},
                                  {"layers", jLayers},
                                  {"summary",
                                   {{"experts_counted", counted},
                                    {"specialists", specialists},
                                    {"specialists_per_layer", perLayer}}}};
        if (const int rc = writeJsonOption(o.jsonOut, j); rc != kExitOk) return rc;
    }
    return kExitOk;
}

} // namespace

Command addRouteStatsCommand(CLI::App& root) {
    auto o = std::make_shared<RouteStatsOptions>();
    CLI::App* cmd = root.add_subcommand(
        "route-stats", "Per layer, the share of routed slots each expert gets per text domain, and "
                       "the experts that specialise");
    cmd->footer(std::string("A specialist: share in a domain >= 3x its share over the "
                            "domain-balanced mix (mean of the domains' shares), ignoring experts "
                            "under 1% balanced share. See docs/cli.md.\n") +
                kExitCodesHelp);
    addModelOptions(*cmd, o->model);
    addPlacementOptions(*cmd, o->model);
    cmd->add_option("--domain", o->domains, "NAME=FILE: a domain's text (repeatable)")
        ->type_name("NAME=FILE")
        ->required();
    cmd->add_option("--max-tokens", o->maxTokens,
                    "Tokens to use from each domain's file (default 0: all)")
        ->type_name("N")
        ->check(integerIn(int64_t(0), int64_t(1) << 40));
    cmd->add_option("--window", o->window,
                    "Tokens per forward pass, each from an empty cache (default min(context, "
                    "256))")
        ->type_name("N")
        ->check(integerIn(1, 1 << 30));
    cmd->add_option("--json", o->jsonOut, "Write the full table (per layer, domain, expert) here")
        ->type_name("FILE")
        ->check(nonEmptyPath());
    return {cmd, [o] { return runRouteStats(*o); }};
}

} // namespace coli::cli
