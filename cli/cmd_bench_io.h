#pragma once
// `coli bench io`, registered under `coli bench` by addBenchCommand (cmd_bench.cpp).
#include "commands.h"

namespace coli::cli {

// Adds the `io` subcommand to `bench`; run() is called when it was parsed.
Command addBenchIoCommand(CLI::App& bench);

} // namespace coli::cli
