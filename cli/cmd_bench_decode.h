#pragma once
// `coli bench decode`, registered under `coli bench` by addBenchCommand (cmd_bench.cpp).
#include "commands.h"

namespace coli::cli {

// Adds the `decode` subcommand to `bench`; run() is called when it was parsed.
Command addBenchDecodeCommand(CLI::App& bench);

} // namespace coli::cli
