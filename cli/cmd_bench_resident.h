#pragma once
// `coli bench decode --resident`: decode (and prefill) speed with every expert in RAM, reported
// against the memory roofline measured in the same process (cmd_bench_resident.cpp).
#include <string>
#include <vector>

namespace coli::cli {

struct BenchResidentOptions {
    std::string model;
    std::string prompt;
    int tokens = 64;          // decode steps per run
    int runs = 9;             // measured runs (each after its own bandwidth measurement)
    int threads = 0;          // 0 = all cores
    std::vector<int> prefill; // prompt lengths in tokens for the prefill rows; empty: none
    std::string gpu = "none"; // --gpu NAME|auto|none (bench_gpu_columns.h)
    // VRAM budgets (0 = no GPU tier, N% of the routed experts, bytes): one load and set of rows
    // each; {"0"} without a GPU.
    std::vector<std::string> vramBudgets = {"0"};
    bool phases = false; // --phases: per-phase times of the decode steps and prefill prompts
};

// Prints B_tok, then per VRAM budget: per run tok/s, R (memory read bandwidth measured just
// before) and tok/s x B_tok / R with the time per token by stage (with --gpu: the GPU columns),
// then the prefill rows; with phases, a per-phase table (bench_phase_table.h) after the decode rows
// and after each prefill row. Returns an exit code (kExitModel when the model cannot load, the GPU
// tier cannot run, or runs differ in their tokens; kExitUsage for a VRAM budget below one expert).
int runBenchResident(const BenchResidentOptions& o);

} // namespace coli::cli
