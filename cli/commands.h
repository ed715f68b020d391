#pragma once
// Each subcommand registers its flags on the CLI11 app and returns the function that runs it
// after a successful parse. run() returns the process exit code (exit_codes.h).
#include <CLI/CLI.hpp>

#include <functional>

namespace coli::cli {

struct Command {
    CLI::App* app = nullptr;
    std::function<int()> run;
};

Command addInfoCommand(CLI::App& root);
Command addGenerateCommand(CLI::App& root);
Command addChatCommand(CLI::App& root);
Command addTraceCommand(CLI::App& root);
Command addRouteStatsCommand(CLI::App& root);
Command addConvertCommand(CLI::App& root);
Command addBenchCommand(CLI::App& root);
Command addUsageCommand(CLI::App& root);
Command addCacheSimCommand(CLI::App& root);
Command addAtlasCommand(CLI::App& root);
Command addPlanCommand(CLI::App& root);
Command addSearchCommand(CLI::App& root);   // coli search (Hugging Face Hub)
Command addDownloadCommand(CLI::App& root); // coli download
Command addDoctorCommand(CLI::App& root);
Command addMirrorCommand(CLI::App& root);

} // namespace coli::cli
