// coli bench kernels: the quantised-kernel benchmark (bench/kernel_bench.cpp) from the CLI:
// measured memory read bandwidth and each kernel's weight bandwidth in one run, with their ratio
// (docs/performance.md). A benchmark, never a test: nothing here asserts a speed.
#include "cmd_bench_decode.h"
#include "cmd_bench_io.h"
#include "commands.h"
#include "exit_codes.h"
#include "options.h"

#include <fmt/core.h>

#include <string>
#include <vector>

#ifdef COLI_HAVE_BENCH
#include "kernel_bench.h"
#include <omp.h>
#endif

namespace coli::cli {
namespace {

struct BenchOptions {
    int repetitions = 5;
    double minTime = 0; // seconds per repetition; 0 = Google Benchmark's default
    std::string filter;
    int threads = 0;
};

int runKernels(const BenchOptions& o) {
#ifdef COLI_HAVE_BENCH
    if (o.threads > 0) omp_set_num_threads(o.threads);
    std::vector<std::string> args = {"coli bench kernels",
                                     "--benchmark_repetitions=" + std::to_string(o.repetitions)};
    if (o.minTime > 0) args.push_back(fmt::format("--benchmark_min_time={}", o.minTime));
    if (!o.filter.empty()) args.push_back("--benchmark_filter=" + o.filter);
    std::vector<char*> argv;
    for (std::string& a : args)
        argv.push_back(a.data());
    const int rc = coli::bench::runKernelBench(int(argv.size()), argv.data());
    if (rc == 1) {
        fmt::print(stderr, "coli: error: no memory bandwidth was measured (a --filter that "
                           "excludes MemRead?)\n");
        return kExitUsage;
    }
    return rc == 0 ? kExitOk : kExitUsage;
#else
    (void)o;
    fmt::print(stderr, "coli: error: this coli was built without benchmarks "
                       "(configure with -DCOLI_BUILD_BENCH=ON)\n");
    return kExitUsage;
#endif
}

} // namespace

Command addBenchCommand(CLI::App& root) {
    auto* app = root.add_subcommand("bench", "Benchmarks (speed as a ratio to a limit measured in "
                                             "the same run; see docs/performance.md)");
    app->require_subcommand(1);
    auto* kernels = app->add_subcommand(
        "kernels", "Quantised matmul kernels: weight GB/s vs measured memory read GB/s");
    auto o = std::make_shared<BenchOptions>();
    kernels->add_option("--repetitions", o->repetitions, "Repetitions per benchmark (median)")
        ->type_name("N")
        ->check(integerIn(1, 100));
    kernels->add_option("--min-time", o->minTime, "Seconds per repetition (default: GBench's)")
        ->type_name("SECONDS")
        ->check(numberIn(0, 60));
    kernels
        ->add_option("--filter", o->filter,
                     "Regex over benchmark names (keep MemRead in it for the ratio)")
        ->type_name("REGEX");
    kernels->add_option("-t,--threads", o->threads, "OpenMP threads (0 = all cores)")
        ->type_name("N")
        ->check(integerIn(0, 1024));
    const Command io = addBenchIoCommand(*app);         // coli bench io (cmd_bench_io.cpp)
    const Command decode = addBenchDecodeCommand(*app); // coli bench decode
    return {app, [o, io, decode] {
                if (io.app->parsed()) return io.run();
                if (decode.app->parsed()) return decode.run();
                return runKernels(*o);
            }};
}

} // namespace coli::cli
