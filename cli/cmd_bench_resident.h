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
};

// Prints B_tok, then per run tok/s, R (memory read bandwidth measured just before) and
// tok/s x B_tok / R with the time per token by stage; then the prefill rows. Returns an exit code
// (kExitModel when the model cannot load or runs differ in their tokens).
int runBenchResident(const BenchResidentOptions& o);

} // namespace coli::cli
