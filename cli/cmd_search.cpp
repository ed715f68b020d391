// coli search TEXT [--limit N] [--retries N]: models on the Hugging Face Hub
// (engine/hub/hub_api.h), most downloaded first, with what this app can run flagged (docs/cli.md
// "coli search").
#include "commands.h"
#include "exit_codes.h"
#include "options.h"

#include "hub/hub_api.h"

#include <fmt/core.h>

#include <algorithm>
#include <memory>

namespace coli::cli {
namespace {

struct SearchCliOptions {
    std::string text;
    int limit = 20;
    int retries = 6; // as coli download's: per request, on 429/5xx/drops, backoff from 1 s
};

// 1234 -> "1.2K", 7e9 -> "7.0B"; 0 (unknown) -> "-".
std::string count(int64_t n) {
    if (n <= 0) return "-";
    const char* units[] = {"", "K", "M", "B", "T"};
    double v = double(n);
    int u = 0;
    while (v >= 1000 && u < 4) {
        v /= 1000;
        ++u;
    }
    return u == 0 ? std::to_string(n) : fmt::format("{:.1f}{}", v, units[u]);
}

// Exit: 0 (also with no match), 2 usage, 6 the Hub could not be asked.
int runSearch(const SearchCliOptions& o) {
    auto endpoint = hub::endpointFromEnvironment();
    if (!endpoint) {
        printError(endpoint.status().message());
        return kExitUsage;
    }
    hub::HubApi api(endpoint.value(), hub::ApiRetry{o.retries, 1, 30});
    auto found = api.search(o.text, o.limit);
    if (!found) {
        printError(fmt::format("cannot search the Hub ({}): {}", endpoint.value().base,
                               found.status().message()));
        return found.status().code() == ErrorCode::InvalidArgument ? kExitUsage : kExitNetwork;
    }
    const auto& models = found.value();
    if (models.empty()) {
        fmt::print("no models match '{}'\n", o.text);
        return kExitOk;
    }
    size_t wRepo = 4, wArch = 12;
    for (const auto& m : models) {
        wRepo = std::max(wRepo, m.id.size());
        wArch = std::max(wArch, m.architectures.empty() ? 1 : m.architectures[0].size());
    }
    fmt::print("{:<{}}  {:<{}}  {:>6}  {:>9}  {}\n", "REPO", wRepo, "ARCHITECTURE", wArch, "PARAMS",
               "DOWNLOADS", "RUNS HERE");
    for (const auto& m : models) {
        std::string support = m.support == hub::Support::Supported ? "yes" : "no";
        if (m.support == hub::Support::Unknown) support = "unknown";
        if (!m.supportNote.empty()) support += ": " + m.supportNote;
        if (m.gated) support += " (gated: needs a token)";
        fmt::print("{:<{}}  {:<{}}  {:>6}  {:>9}  {}\n", m.id, wRepo,
                   m.architectures.empty() ? "-" : m.architectures[0], wArch, count(m.parameters),
                   m.downloads, support);
    }
    return kExitOk;
}

} // namespace

Command addSearchCommand(CLI::App& root) {
    auto o = std::make_shared<SearchCliOptions>();
    CLI::App* cmd = root.add_subcommand(
        "search", "Search the Hugging Face Hub for models ($HF_ENDPOINT, token from $HF_TOKEN)");
    cmd->add_option("TEXT", o->text, "Words in the repo's name")->type_name("")->required();
    cmd->add_option("--limit", o->limit, "How many results (1-100, default 20)")
        ->type_name("N")
        ->check(integerIn(1, 100));
    cmd->add_option("--retries", o->retries,
                    "Retries per request on 429, 5xx and dropped connections (default 6)")
        ->type_name("N")
        ->check(integerIn(0, 100));
    return {cmd, [o] { return runSearch(*o); }};
}

} // namespace coli::cli
