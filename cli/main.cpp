// coli: the command-line face of the engine. See docs/cli.md.
#include "commands.h"
#include "exit_codes.h"

#include <fmt/core.h>

#include <cstdio>
#include <exception>
#include <vector>

#ifndef COLI_VERSION
#error "COLI_VERSION must come from CMake (project version)"
#endif

int main(int argc, char** argv) {
    using namespace coli::cli;
    try {
        CLI::App app{"coli: run Mixture-of-Experts language models from Hugging Face checkpoints",
                     "coli"};
        app.set_version_flag("--version", std::string("coli ") + COLI_VERSION);
        app.require_subcommand(1);
        app.footer(kExitCodesHelp);
        std::vector<Command> commands = {addInfoCommand(app), addGenerateCommand(app),
                                         addChatCommand(app), addTraceCommand(app),
                                         addRouteStatsCommand(app)};
        try {
            app.parse(argc, argv);
        } catch (const CLI::ParseError& e) {
            // Prints help/version on stdout, errors on stderr; help and version are successes.
            const int code = app.exit(e);
            return code == 0 ? kExitOk : kExitUsage;
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
