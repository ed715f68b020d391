#pragma once
// The quantised-kernel benchmark (bench/kernel_bench.cpp): memory read bandwidth and each
// kernel's weight bandwidth in one run, printed with their ratio (docs/performance.md).

namespace coli::bench {

// Runs the benchmark with Google Benchmark flags in argv (argv[0] is the program name; defaults:
// 5 repetitions, random interleaving). Prints Google Benchmark's console table, then one line per
// benchmark: median GB/s, min-max, ratio to the MemRead median. Returns 0, 1 when no memory
// bandwidth was measured (e.g. a filter that excludes MemRead), 2 for an unknown flag.
// Not thread-safe (Google Benchmark's global registry); call once per process.
int runKernelBench(int argc, char** argv);

} // namespace coli::bench
