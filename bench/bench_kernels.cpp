// bench_kernels: quantised kernel throughput as a fraction of measured DRAM read bandwidth (the
// same run as `coli bench kernels`; see bench/kernel_bench.cpp for what is measured).
// Usage: bench_kernels [--benchmark_repetitions=N] [--benchmark_filter=...] (any GBench flag).
#include "kernel_bench.h"
#include "startup/omp_defaults.h"

int main(int argc, char** argv) {
    coli::startup::applyOmpDefaults(argv); // before OpenMP starts (omp_defaults.h)
    return coli::bench::runKernelBench(argc, argv);
}
