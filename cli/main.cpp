// coli: the command-line face of the engine. See docs/cli.md.
#include "commands.h"
#include "exit_codes.h"
#include "options.h"
#include "startup/omp_defaults.h"

#include <fmt/core.h>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#ifndef COLI_VERSION
#error "COLI_VERSION must come from CMake (project version)"
#endif

namespace {

// "info, generate, chat, trace, route-stats"
std::string commandList(const std::vector<coli::cli::Command>& commands) {
    std::string list;
    for (const auto& c : commands)
        list += (list.empty() ? "" : ", ") + c.app->get_name();
    return list;
}

// CLI11's message in the documented form "coli: error: ..." (docs/cli.md), then where to look.
void printParseError(const CLI::App& root, const CLI::ParseError& e,
                     const std::vector<coli::cli::Command>& commands) {
    std::string msg = e.what();
    const CLI::App* sub = nullptr;
    for (const auto& c : commands)
        if (c.app->parsed()) sub = c.app;
    if (!sub && dynamic_cast<const CLI::RequiredError*>(&e) &&
        msg.find("subcommand") != std::string::npos)
        msg = "a command is required: " + commandList(commands);
    else if (msg.starts_with("The following argument was not expected: "))
        msg = "unexpected argument " + msg.substr(msg.find(": ") + 2);
    else if (msg.starts_with("The following arguments were not expected: "))
        msg = "unexpected arguments " + msg.substr(msg.find(": ") + 2);
    std::fflush(stdout);
    fmt::print(stderr, "coli: error: {}\nRun '{}{} --help' for usage.\n", msg, root.get_name(),
               sub ? " " + sub->get_name() : std::string());
}

} // namespace

int main(int argc, char** argv) {
    coli::startup::applyOmpDefaults(argv); // before OpenMP starts (omp_defaults.h)
    using namespace coli::cli;
    try {
        CLI::App app{"coli: run Mixture-of-Experts language models from Hugging Face checkpoints",
                     "coli"};
        useReadableHelp(app); // before the subcommands: they copy the root's formatter
        app.set_version_flag("--version", std::string("coli ") + COLI_VERSION);
        app.require_subcommand(1);
        app.footer(kExitCodesHelp);
        std::vector<Command> commands = {addInfoCommand(app),       addGenerateCommand(app),
                                         addChatCommand(app),       addTraceCommand(app),
                                         addRouteStatsCommand(app), addConvertCommand(app),
                                         addBenchCommand(app),      addUsageCommand(app)};
        commands.push_back(addCacheSimCommand(app));
        commands.push_back(addAtlasCommand(app));
        commands.push_back(addPlanCommand(app));
        commands.push_back(addSearchCommand(app));
        commands.push_back(addDownloadCommand(app));
        commands.push_back(addDoctorCommand(app));
        commands.push_back(addMirrorCommand(app));
        // A first argument that is neither an option nor a command: CLI11 would only say it
        // was "not expected".
        if (argc > 1 && argv[1][0] != '-') {
            bool known = false;
            for (const auto& c : commands)
                known = known || c.app->check_name(argv[1]);
            if (!known) {
                std::fflush(stdout);
                fmt::print(stderr,
                           "coli: error: unknown command '{}' (commands: {})\nRun 'coli --help' "
                           "for usage.\n",
                           argv[1], commandList(commands));
                return kExitUsage;
            }
        }
        try {
            app.parse(argc, argv);
        } catch (const CLI::ParseError& e) {
            // Help and version go to stdout and are successes; errors are usage errors.
            if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
                app.exit(e);
                return kExitOk;
            }
            printParseError(app, e, commands);
            return kExitUsage;
        }
        for (auto& c : commands)
            if (c.app->parsed()) return c.run();
        return kExitUsage; // unreachable: require_subcommand(1)
    } catch (const std::exception& e) {
        std::fflush(stdout);
        fmt::print(stderr, "coli: internal error: {}\n", e.what());
        return kExitInternal;
    } catch (...) {
        std::fflush(stdout);
        fmt::print(stderr, "coli: internal error\n");
        return kExitInternal;
    }
}
