// coli trace MODEL_DIR -p TEXT [-n N] [-o FILE]: the router's choices for every token of a prompt
// (and of an optional greedy continuation), as JSON lines. Format: docs/cli.md "coli trace".
#include "commands.h"
#include "exit_codes.h"
#include "options.h"
#include "signals.h"

#include "forward/model.h"
#include "placement/routing_recorder.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

namespace coli::cli {
namespace {

struct TraceOptions {
    ModelOptions model;
    std::string prompt;
    int maxNewTokens = 0;
    std::string output; // "" or "-": stdout
};

// One line per token; `piece` is the token's text (invalid UTF-8 replaced by U+FFFD).
nlohmann::json tokenRecord(const RoutingTrace& r, int row, int pos, int32_t id, bool generated,
                           const Tokenizer& tok) {
    nlohmann::json experts = nlohmann::json::array(), weights = nlohmann::json::array();
    for (int i = 0; i < r.nMoeLayers(); ++i) {
        auto e = r.expertsAt(row, i);
        auto w = r.weightsAt(row, i);
        experts.push_back(std::vector<int32_t>(e.begin(), e.end()));
        weights.push_back(std::vector<float>(w.begin(), w.end()));
    }
    return {{"pos", pos},
            {"token", id},
            {"piece", tok.decode({&id, 1})},
            {"generated", generated},
            {"experts", experts},
            {"weights", weights}};
}

std::string dumpLine(const nlohmann::json& j) {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

int runTrace(const TraceOptions& o) {
    std::ofstream file;
    const bool toStdout = o.output.empty() || o.output == "-";
    if (!toStdout) {
        file.open(o.output, std::ios::binary | std::ios::trunc);
        if (!file) {
            printError(fmt::format("-o {}: cannot open for writing", o.output));
            return kExitUsage;
        }
    }
    std::ostream& out = toStdout ? std::cout : file;

    installSigintHandler();
    int code = kExitOk;
    auto lm = loadModel(o.model, code);
    if (!lm) return code;
    const ModelConfig& c = lm->model().config();
    const std::vector<int32_t> ids = lm->tokenizer().encode(o.prompt, /*addSpecial=*/true);
    if (ids.empty()) {
        printError("the prompt is empty (no tokens); give some text with -p");
        return kExitUsage;
    }
    auto run = placement::traceRouting(
        *lm, ids, o.maxNewTokens, &interruptFlag(),
        [&](const RoutingTrace& r) {
            out << dumpLine({{"format", "coli-routing-trace"},
                             {"version", 1},
                             {"model", lm->dir()},
                             {"n_layers", c.nLayers},
                             {"n_experts", c.nExperts},
                             {"top_k", c.topK},
                             {"moe_layers", r.moeLayers},
                             {"prompt_tokens", int(ids.size())}});
        },
        [&](const placement::TracedToken& t) {
            out << dumpLine(
                tokenRecord(*t.routing, t.row, t.pos, t.id, t.generated, lm->tokenizer()));
        });
    if (!run) {
        printError(run.status().message());
        return kExitGeneration;
    }
    out.flush();
    if (!out) {
        printError(fmt::format("{}: write failed", toStdout ? "stdout" : o.output));
        return kExitInternal;
    }
    fmt::print(stderr,
               "trace: {} prompt + {} generated tokens, {} MoE layers x top-{} (stop: {})\n",
               ids.size(), run->generated, run->moeLayers.size(), run->topK, run->stop);
    return run->stop == "cancelled" ? kExitInterrupted : kExitOk;
}

} // namespace

Command addTraceCommand(CLI::App& root) {
    auto o = std::make_shared<TraceOptions>();
    CLI::App* cmd = root.add_subcommand(
        "trace", "Write the routed experts (top-k ids and weights per MoE layer) of every token "
                 "as JSON lines");
    cmd->footer(std::string("Format: docs/cli.md. The prompt is encoded with the tokenizer's "
                            "special tokens (BOS); -n continues greedily.\n") +
                kExitCodesHelp);
    addModelOptions(*cmd, o->model);
    addPlacementOptions(*cmd, o->model);
    cmd->add_option("-p,--prompt", o->prompt, "Prompt text")->type_name("TEXT")->required();
    cmd->add_option("-n,--max-tokens", o->maxNewTokens,
                    "Greedy tokens to generate after the prompt (default 0)")
        ->type_name("N")
        ->check(integerIn(0, 100000000));
    cmd->add_option("-o,--output", o->output, "Output file (default stdout)")
        ->type_name("FILE")
        ->check(nonEmptyPath("leave the option out for stdout"));
    return {cmd, [o] { return runTrace(*o); }};
}

} // namespace coli::cli
