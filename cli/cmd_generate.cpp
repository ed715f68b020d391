// coli generate MODEL_DIR -p TEXT: one completion, text on stdout, statistics on stderr.
#include "commands.h"
#include "exit_codes.h"
#include "generation_output.h"
#include "mirror_notice.h"
#include "options.h"
#include "signals.h"
#include "tier_log.h"
#include "usage_learning.h"

#include "runtime/expert_budget.h"
#include "tiers/expert_cache.h"

#include <fmt/core.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <unistd.h>

namespace coli::cli {
namespace {

struct GenerateOptions {
    ModelOptions model;
    SamplingOptions sampling;
    std::string prompt;
    int maxNewTokens = 256;
    std::string system;
    CLI::Option* systemFlag = nullptr; // given, even as "": a system message, and --chat
    bool chat = false;
    bool ignoreEos = false;
    std::vector<std::string> stops;
    std::string tierLog; // --tier-log FILE
};

// `-p -`: all of stdin, minus one trailing newline (so `echo TEXT |` equals `-p TEXT`).
std::string readStdinPrompt() {
    std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    if (text.ends_with("\r\n"))
        text.resize(text.size() - 2);
    else if (text.ends_with('\n'))
        text.pop_back();
    return text;
}

int runGenerate(GenerateOptions o) {
    if (std::string e = checkSamplingFlags(o.sampling); !e.empty()) {
        printError(e);
        return kExitUsage;
    }
    for (const auto& s : o.stops)
        if (s.empty()) {
            printError("--stop: the stop string must not be empty");
            return kExitUsage;
        }
    const bool hasSystem = o.systemFlag && o.systemFlag->count() > 0;
    if (hasSystem) o.chat = true; // --system implies --chat, even when empty (docs/cli.md)
    if (o.prompt == "-") o.prompt = readStdinPrompt();

    installSigintHandler();
    int code = kExitOk;
    auto lm = loadModel(o.model, code);
    if (!lm) return code;

    std::vector<int32_t> ids;
    if (o.chat) {
        std::vector<ChatMessage> messages;
        if (hasSystem) messages.push_back({"system", o.system});
        messages.push_back({"user", o.prompt});
        // Ctrl+C stops a slow template as it stops generation.
        auto text = lm->renderChat(messages, /*addGenerationPrompt=*/true, &interruptFlag());
        if (!text && text.status().code() == ErrorCode::Cancelled) {
            fmt::print(stderr, "coli: interrupted while rendering the chat template\n");
            return kExitInterrupted;
        }
        if (!text) {
            printError(fmt::format("--chat: {}", text.status().message()));
            return kExitModel;
        }
        ids = lm->tokenizer().encode(text.value(), /*addSpecial=*/false);
    } else {
        ids = lm->tokenizer().encode(o.prompt, /*addSpecial=*/true);
    }
    if (ids.empty() && o.chat) {
        // -p was given: the template (not the user) produced nothing to run.
        printError(fmt::format("the chat template of {} rendered an empty prompt (no tokens)",
                               lm->chatTemplate()->sourceName()));
        return kExitModel;
    }
    if (ids.empty()) {
        printError("the prompt is empty (no tokens); give some text with -p");
        return kExitUsage;
    }

    const auto params = makeGenerateParams(o.sampling, lm->generationConfig(), o.maxNewTokens,
                                           o.ignoreEos, o.stops);
    if (!params) return kExitUsage;

    Session session(*lm);
    PieceWriter writer;
    tiers::ExpertCache* cache = lm->model().expertCache();
    std::unique_ptr<UsageLearning> learning;
    if (cache && !o.model.noLearn)
        learning = UsageLearning::start(o.model.dir, lm->model(), *cache, o.model.usageDb);
    std::unique_ptr<TierLog> tierLog;
    if (!o.tierLog.empty()) {
        if (!cache) {
            printError("--tier-log needs streamed experts (not with --resident)");
            return kExitUsage;
        }
        std::string error;
        tierLog = TierLog::open(o.tierLog, *cache, &error);
        if (!tierLog) {
            printError("--tier-log: " + error);
            return kExitUsage;
        }
    }
    const tiers::TierTelemetry before = cache ? cache->telemetry() : tiers::TierTelemetry{};
    const GpuCounters gpuBefore = lm->model().gpuCounters();
    MirrorNotice mirrorNotice(cache);
    const auto t0 = std::chrono::steady_clock::now();
    auto r = session.generate(
        ids, *params,
        [&](std::string_view piece) {
            writer(piece);
            mirrorNotice.check();
        },
        &interruptFlag());
    mirrorNotice.check();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // On a terminal the text ends its line, so the report (or the shell's prompt) starts on its
    // own; into a pipe or file, stdout stays exactly the generated text.
    if (!writer.endsWithNewline() && isatty(STDOUT_FILENO)) {
        std::fputs("\n", stdout);
        std::fflush(stdout);
    }
    if (!r) {
        printError(fmt::format("generation failed: {}", r.status().message()));
        if (learning) learning->endTurn();
        return kExitGeneration;
    }
    printStats(r.value(), describeSampling(params->sampler));
    if (lm->model().gpuActive())
        fmt::print(stderr, "gpu:              {}\n",
                   describeGpu(gpuBefore, lm->model().gpuCounters()).substr(5));
    if (cache)
        fmt::print(stderr, "{}\n",
                   summariseTiers(before, cache->telemetry(), seconds, &r.value().tiersPrefill));
    if (learning) learning->endTurn();
    switch (r.value().stopReason) {
    case StopReason::Cancelled:
        return kExitInterrupted;
    case StopReason::ContextFull:
        printError(
            fmt::format("the context is full ({} tokens)", lm->model().config().maxPositions));
        return kExitGeneration;
    default:
        return kExitOk;
    }
}

} // namespace

Command addGenerateCommand(CLI::App& root) {
    auto o = std::make_shared<GenerateOptions>();
    CLI::App* cmd = root.add_subcommand(
        "generate", "Complete a prompt: generated text on stdout, statistics on stderr");
    cmd->footer(std::string("--system implies --chat. Sampling flags left out take the model's "
                            "generation_config.json defaults, else temp 0.8, top-k 40, "
                            "top-p 0.95, min-p 0.05.\n") +
                kExitCodesHelp);
    addModelOptions(*cmd, o->model);
    addPlacementOptions(*cmd, o->model);
    addQuantiseOption(*cmd, o->model);
    cmd->add_option("-p,--prompt", o->prompt,
                    "Prompt text, encoded as given (\"-\" reads stdin); no chat template unless "
                    "--chat")
        ->type_name("TEXT")
        ->required();
    cmd->add_option("-n,--max-tokens", o->maxNewTokens, "Maximum tokens to generate")
        ->type_name("N")
        ->check(integerIn(1, 100000000));
    cmd->add_flag("--chat", o->chat,
                  "Wrap the prompt as a user message in the model's chat template");
    o->systemFlag = cmd->add_option("--system", o->system,
                                    "System message (implies --chat; \"\" gives an empty one)")
                        ->type_name("TEXT");
    cmd->add_flag("--ignore-eos", o->ignoreEos, "Keep generating past end-of-sequence tokens");
    cmd->add_option("--stop", o->stops, "Stop before this text (repeatable)")->type_name("TEXT");
    cmd->add_option("--tier-log", o->tierLog,
                    "Write the expert tiers' per-token telemetry to FILE (JSON lines)")
        ->type_name("FILE")
        ->check(nonEmptyPath());
    addSamplingOptions(*cmd, o->sampling);
    return {cmd, [o] { return runGenerate(*o); }};
}

} // namespace coli::cli
