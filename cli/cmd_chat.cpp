// coli chat MODEL_DIR: an interactive multi-turn conversation using the model's chat template.
// Each turn renders the whole conversation; the session reuses the KV cache for the common token
// prefix, so only the new message is prefilled.
#include "chat_persistence.h"
#include "commands.h"
#include "exit_codes.h"
#include "generation_output.h"
#include "line_editor.h"
#include "line_reader.h"
#include "mirror_notice.h"
#include "options.h"
#include "runtime/context_fit.h"
#include "signals.h"
#include "usage_learning.h"

#include <fmt/core.h>

#include <cstdio>
#include <memory>
#include <unistd.h>

namespace coli::cli {
namespace {

struct ChatOptions {
    ModelOptions model;
    SamplingOptions sampling;
    std::string system;
    CLI::Option* systemFlag = nullptr; // given, even as "": the conversation has a system message
    int maxNewTokens = 1024;
    bool ignoreEos = false;
    bool noHistory = false;
    std::string session; // --session ID-or-TITLE: kept in the database (chat_persistence.h)
    std::string db;      // --db PATH: that database (default: the app's)
};

// What `/help` prints (to stderr, like the other notices; stdout carries only answers).
constexpr const char* kChatCommandsHelp =
    "commands:\n"
    "  /help          this list\n"
    "  /reset         start a new conversation (forgets the messages and the cache)\n"
    "  /quit, /exit   leave (as Ctrl+D does)\n"
    "keys: Ctrl+C stops an answer; Ctrl+C or Ctrl+D at the prompt quits; on a terminal, Up and "
    "Down recall earlier lines\n";

void printPrompt(bool interactive) {
    if (!interactive) return;
    std::fputs("> ", stdout);
    std::fflush(stdout);
}

int runChat(const ChatOptions& o) {
    if (std::string e = checkSamplingFlags(o.sampling); !e.empty()) {
        printError(e);
        return kExitUsage;
    }
    installSigintHandler();
    int code = kExitOk;
    auto lm = loadModel(o.model, code);
    if (!lm) return code;
    if (!lm->chatTemplate()) {
        // Render once to get the reason (names tokenizer_config.json).
        auto r = lm->renderChat({{"user", "x"}}, true);
        printError(fmt::format("chat needs the model's chat template: {}", r.status().message()));
        return kExitModel;
    }

    const auto params =
        makeGenerateParams(o.sampling, lm->generationConfig(), o.maxNewTokens, o.ignoreEos);
    if (!params) return kExitUsage;
    const bool interactive = isatty(STDIN_FILENO);
    // Always, so that a piped run can be reproduced with --seed (the seed is random by default).
    fmt::print(stderr, "sampling: {}\n", describeSampling(params->sampler));
    if (interactive)
        fmt::print(stderr,
                   "chat with {}. /help lists the commands; Ctrl+C stops an answer; "
                   "Ctrl+C or Ctrl+D at the prompt quits.\n",
                   lm->dir());
    const bool hasSystem = o.systemFlag && o.systemFlag->count() > 0;

    Session session(*lm);
    std::unique_ptr<UsageLearning> learning;
    if (tiers::ExpertCache* cache = lm->model().expertCache(); cache && !o.model.noLearn)
        learning = UsageLearning::start(o.model.dir, lm->model(), *cache, o.model.usageDb);
    std::vector<ChatMessage> messages;
    const ChatMessage systemMessage{"system", o.system};
    std::unique_ptr<ChatPersistence> saved;
    auto startConversation = [&] {
        messages.clear();
        if (hasSystem) messages.push_back(systemMessage);
        session.reset();
        if (saved) saved->reset(hasSystem ? &systemMessage : nullptr, session);
    };
    startConversation();
    if (!o.session.empty()) {
        saved = ChatPersistence::open(o.db, o.session, *lm, session,
                                      hasSystem ? &systemMessage : nullptr, &messages);
        if (!saved) return kExitUsage;
    }

    // Line editing and history on a terminal; piped input is read as plain lines.
    std::unique_ptr<LineEditor> editor;
    if (interactive && isatty(STDOUT_FILENO))
        editor = LineEditor::open(o.noHistory ? std::string() : defaultChatHistoryPath());
    LineReader reader(STDIN_FILENO);
    PieceWriter writer;
    MirrorNotice mirrorNotice(lm->model().expertCache());
    std::string line;
    for (;;) {
        clearInterrupt();
        if (!editor) printPrompt(interactive);
        const auto got = editor ? editor->next(line) : reader.next(line);
        if (got != LineReader::Result::Line) {
            if (interactive) std::fputs("\n", stdout);
            return kExitOk; // EOF or Ctrl+C at the prompt: a normal way to leave
        }
        if (line == "/reset") {
            startConversation();
            fmt::print(stderr, "[new conversation]\n");
            continue;
        }
        if (line == "/quit" || line == "/exit") return kExitOk;
        if (line == "/help") {
            std::fputs(kChatCommandsHelp, stderr);
            continue;
        }
        if (line.empty()) continue;

        messages.push_back({"user", line});
        // Rolling window: when the conversation outgrows the context, the oldest exchanges are
        // left out of the prompt (room kept for -n tokens of answer).
        // Ctrl+C stops a slow template render as it stops an answer: back to the prompt.
        auto fitted = fitChatToContext(*lm, messages, params->maxNewTokens, &interruptFlag());
        if (!fitted) {
            messages.pop_back();
            if (fitted.status().code() == ErrorCode::Cancelled)
                fmt::print(stderr, "[interrupted while rendering the chat template]\n");
            else
                printError(fitted.status().message());
            continue;
        }
        if (const int dropped = fitted.value().droppedMessages; dropped > 0)
            fmt::print(stderr, "[{} older message{} left out to fit the {}-token context]\n",
                       dropped, dropped == 1 ? "" : "s", fitted.value().contextTokens);
        const auto& ids = fitted.value().ids;
        if (ids.empty()) { // the template, not the user, produced nothing to run
            messages.pop_back();
            printError(fmt::format("the chat template of {} rendered an empty prompt (no tokens)",
                                   lm->chatTemplate()->sourceName()));
            continue;
        }
        // Until the next prompt: Ctrl+C stops the answer without a "^C" inside its text.
        const QuietControlEcho quiet;
        writer.clear();
        const GpuCounters gpuBefore = lm->model().gpuCounters();
        auto r = session.generate(
            ids, *params,
            [&](std::string_view piece) {
                writer(piece);
                mirrorNotice.check();
            },
            &interruptFlag());
        mirrorNotice.check();
        std::fputs("\n", stdout);
        std::fflush(stdout);
        if (learning) learning->endTurn(); // heat and pins saved at every turn's end
        if (!r) {
            messages.pop_back();
            printError(fmt::format("generation failed: {}", r.status().message()));
            continue;
        }
        // The answer as shown (a cancelled answer is kept as far as it went).
        messages.push_back({"assistant", writer.text()});
        if (saved) saved->endTurn(line, writer.text(), session);
        printTurnStats(r.value());
        if (lm->model().gpuActive())
            fmt::print(stderr, "[{}]\n", describeGpu(gpuBefore, lm->model().gpuCounters()));
        if (r.value().stopReason == StopReason::ContextFull)
            fmt::print(stderr,
                       "[the answer was cut off at the end of the {}-token context; the chat goes "
                       "on with the oldest exchanges left out of the next prompt]\n",
                       fitted.value().contextTokens);
    }
}

} // namespace

Command addChatCommand(CLI::App& root) {
    auto o = std::make_shared<ChatOptions>();
    CLI::App* cmd = root.add_subcommand(
        "chat", "Interactive multi-turn chat with the model's template (reads lines from stdin)");
    cmd->footer(std::string("Type a message and Enter. /help lists the commands, /reset starts a "
                            "new conversation, /quit leaves. Ctrl+C stops the answer; Ctrl+C or "
                            "EOF at the prompt exits with 0. On a terminal, lines can be edited "
                            "and Up/Down recall earlier ones (kept in "
                            "$XDG_STATE_HOME/colibri/chat_history).\n") +
                kExitCodesHelp);
    addModelOptions(*cmd, o->model);
    addPlacementOptions(*cmd, o->model);
    addQuantiseOption(*cmd, o->model);
    o->systemFlag = cmd->add_option("--system", o->system,
                                    "System message for the conversation (\"\" gives an empty one)")
                        ->type_name("TEXT");
    cmd->add_option("-n,--max-tokens", o->maxNewTokens, "Maximum tokens per answer")
        ->type_name("N")
        ->check(integerIn(1, 100000000));
    cmd->add_flag("--ignore-eos", o->ignoreEos, "Keep generating past end-of-sequence tokens");
    cmd->add_flag("--no-history", o->noHistory,
                  "Keep the typed lines' history for this session only (no history file)");
    cmd->add_option("--session", o->session,
                    "Keep the conversation as this session of the app's database (an id, or a "
                    "title: the latest session so titled, else a new one) and continue it warm: "
                    "its KV cache is kept beside the database")
        ->type_name("ID|TITLE");
    cmd->add_option("--db", o->db,
                    "The database --session uses (default: the app's, "
                    "$XDG_DATA_HOME/colibri/colibri.db)")
        ->type_name("PATH");
    addSamplingOptions(*cmd, o->sampling);
    return {cmd, [o] { return runChat(*o); }};
}

} // namespace coli::cli
