// The kernel benchmark of bench_kernels and `coli bench kernels`: quantised kernel throughput as a
// fraction of measured DRAM read bandwidth.
//
// In one run, with one OpenMP thread count for everything:
//   MemRead      streaming read (placement/memory_bandwidth.h: sum of 64-bit words, OpenMP over
//                chunks) of a buffer of max(256 MiB, 8 x LLC): the limit; `coli plan` uses it too.
//   Kernel/...   quantMatmul on the selected path, each iteration on the next of K distinct
//                expert-sized weight matrices whose total exceeds 4 x LLC, so weights come from
//                DRAM; bytes_per_second counts weight bytes (scales included) read per second.
// Repetitions (default 5, interleaved at random with the other benchmarks so drift hits all
// alike) give per-benchmark median and min-max; the summary prints kernel / memory medians.
#include "core/number_text.h"
#include "startup/omp_defaults.h"

#include <benchmark/benchmark.h>

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/number_text.h"
#include "kernel_bench.h"
#include "model/weight_arena.h"
#include "placement/memory_bandwidth.h"
#include "quant/matmul.h"

using namespace coli::quant;

namespace {

using coli::placement::lastLevelCacheBytes;

// 64-byte aligned, filled (so every page is touched before timing).
struct Buffer {
    uint8_t* p = nullptr;
    size_t n = 0;
    // In the weight arena, as a loaded model's weights (huge pages where the kernel gives them).
    Buffer(size_t bytes, uint8_t fill) : n(bytes) {
        p = static_cast<uint8_t*>(coli::weightAlloc(bytes));
        if (!p) throw std::bad_alloc();
        std::memset(p, fill, bytes);
    }
    ~Buffer() { coli::weightFree(p, n); }
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
};

// Allocated once per process (random interleaving re-runs each benchmark's setup per repetition).
const Buffer& memBuffer() {
    static const Buffer buf(coli::placement::memReadBufferBytes(), 1);
    return buf;
}

// Weight matrices for every kernel benchmark: 4.5 x LLC of bytes 0x3C. Every byte pattern is a
// valid block in all formats, and 0x3C3C3C3C is a normal f32 scale (0.0115), so no denormal or
// NaN arithmetic; contents do not change the instruction stream.
const Buffer& weightBuffer() {
    static const Buffer buf(4 * lastLevelCacheBytes() + lastLevelCacheBytes() / 2, 0x3C);
    return buf;
}

void memRead(benchmark::State& state) {
    const Buffer& buf = memBuffer();
    const auto* words = reinterpret_cast<const uint64_t*>(buf.p);
    const int64_t nWords = static_cast<int64_t>(buf.n / 8);
    for (auto _ : state) {
        const uint64_t sum = coli::placement::streamRead(words, nWords);
        benchmark::DoNotOptimize(sum);
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(buf.n));
    state.counters["threads"] = omp_get_max_threads();
    state.counters["MiB"] = static_cast<double>(buf.n >> 20);
}

enum class Mode {
    Region, // one OpenMP region per pass over all matrices; each thread its contiguous share of
            // every matrix's rows (quantMatmulRows): the kernel without per-call fork/join
    Call,   // quantMatmul per matrix (an OpenMP fork/join per call, as a naive caller would)
    Hot,    // Region on one matrix repeated (cache-resident): the compute ceiling, not DRAM
};

void kernel(benchmark::State& state, WeightFormat fmt, int64_t rows, int64_t cols, int64_t nTokens,
            Mode mode) {
    const bool hot = mode == Mode::Hot;
    const FormatInfo fi = formatInfo(fmt);
    const size_t matBytes = static_cast<size_t>(rows) * rowBytes(fmt, cols);
    const Buffer& mats = weightBuffer();
    const size_t count = hot ? 1 : mats.n / matBytes;
    std::vector<float> x(static_cast<size_t>(nTokens * cols));
    std::mt19937 rng(2);
    std::normal_distribution<float> d(0.0f, 1.0f);
    for (float& v : x)
        v = d(rng);
    std::vector<uint8_t> scratch(activationScratchBytes(fi.groupSize, nTokens, cols));
    QuantisedActivations qa;
    if (!quantiseActivations(x.data(), nTokens, cols, fi.groupSize, scratch.data(), scratch.size(),
                             &qa)
             .isOk()) {
        state.SkipWithError("quantiseActivations failed");
        return;
    }
    std::vector<float> y(static_cast<size_t>(nTokens * rows));
    bool failed = false;
    int64_t perIteration = 1; // matrices per timed iteration
    if (mode == Mode::Call) {
        size_t next = 0;
        for (auto _ : state) {
            failed |= !quantMatmul(fmt, mats.p + next * matBytes, rows, cols, qa, y.data()).isOk();
            benchmark::DoNotOptimize(y.data());
            next = next + 1 == count ? 0 : next + 1;
        }
    } else {
        const size_t passes = hot ? mats.n / matBytes : count;
        perIteration = static_cast<int64_t>(passes);
        for (auto _ : state) {
#pragma omp parallel reduction(|| : failed)
            {
                const int64_t nt = omp_get_num_threads(), id = omp_get_thread_num();
                const int64_t r0 = rows * id / nt, r1 = rows * (id + 1) / nt;
                for (size_t i = 0; i < passes; ++i) {
                    const uint8_t* w = mats.p + (hot ? 0 : i) * matBytes;
                    failed =
                        failed || !quantMatmulRows(fmt, w, rows, cols, qa, y.data(), r0, r1).isOk();
                }
            }
            benchmark::DoNotOptimize(y.data());
        }
    }
    if (failed) {
        state.SkipWithError("quantMatmul failed");
        return;
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * perIteration *
                            static_cast<int64_t>(matBytes));
    state.counters["threads"] = omp_get_max_threads();
    state.counters["matrices"] = static_cast<double>(count);
}

// Console output as usual, plus the per-run bytes_per_second kept for the summary.
class CollectingReporter : public benchmark::ConsoleReporter {
public:
    std::map<std::string, std::vector<double>> bw; // name -> bytes/s of each repetition
    std::vector<std::string> order;
    void ReportRuns(const std::vector<Run>& runs) override {
        ConsoleReporter::ReportRuns(runs);
        for (const Run& r : runs) {
            if (r.run_type != Run::RT_Iteration || r.error_occurred) continue;
            const auto it = r.counters.find("bytes_per_second");
            if (it == r.counters.end()) continue;
            std::string name = r.run_name.str();
            if (const size_t cut = name.find("/real_time"); cut != std::string::npos)
                name.resize(cut);
            if (!bw.count(name)) order.push_back(name);
            bw[name].push_back(it->second.value);
        }
    }
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void registerAll() {
    benchmark::RegisterBenchmark("MemRead", memRead)->UseRealTime()->Unit(benchmark::kMillisecond);
    const struct {
        int64_t rows, cols;
    } shapes[] = {{768, 2048},
                  {2048, 768}, // gate/up and down of a 2048-wide expert (Qwen3-30B-A3B)
                  {1024, 2048},
                  {2048, 1024}, // gate/up and down of OLMoE-1B-7B's experts
                  {192, 192}};  // the default model's experts (gate, up, down)
    // The -r8 layouts (what `coli convert` writes) next to the plain ones: the same bytes and
    // work, read as one stream per eight rows instead of eight.
    for (WeightFormat f : {WeightFormat::Q8_G32, WeightFormat::Q8_G64, WeightFormat::Q4_G32,
                           WeightFormat::Q4_G64, WeightFormat::Q8_G64_R8, WeightFormat::Q4_G64_R8})
        for (const auto& s : shapes)
            for (int64_t n : {1, 8}) {
                const std::string name = std::string("Kernel/") + formatInfo(f).name + "/" +
                                         std::to_string(s.rows) + "x" + std::to_string(s.cols) +
                                         "/n" + std::to_string(n);
                const struct {
                    const char* prefix;
                    Mode mode;
                } modes[] = {{"", Mode::Region}, {"Call", Mode::Call}, {"Hot", Mode::Hot}};
                for (const auto& m : modes) {
                    if (m.mode != Mode::Region && n != 1) continue;
                    benchmark::RegisterBenchmark((m.prefix + name).c_str(), kernel, f, s.rows,
                                                 s.cols, n, m.mode)
                        ->UseRealTime()
                        ->Unit(benchmark::kMicrosecond);
                }
            }
}

} // namespace

int coli::bench::runKernelBench(int argc, char** argv) {
    std::vector<char*> args(argv, argv + argc);
    // Google Benchmark wraps nothing out of range but accepts a negative or zero repetition count
    // or time and runs nothing: refuse those here, as coli's own flags do (exit 2, flag named).
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        std::string err;
        if (a.starts_with("--benchmark_repetitions=")) {
            int64_t v = 0;
            err = coli::parseInteger(a.substr(24), 1, 1000000, &v);
        } else if (a.starts_with("--benchmark_min_time=") ||
                   a.starts_with("--benchmark_min_warmup_time=")) {
            const std::string_view text = a.substr(a.find('=') + 1);
            // GBench also takes "<N>x" (iterations) and a trailing "s".
            const bool iterations = text.ends_with('x');
            const std::string_view num =
                iterations || text.ends_with('s') ? text.substr(0, text.size() - 1) : text;
            double v = 0;
            err = coli::parseDecimal(num, 0, iterations ? 1e12 : 1e6, &v);
        }
        if (!err.empty()) {
            std::fprintf(stderr, "bench_kernels: %.*s: %s\n", int(a.find('=')), a.data(),
                         err.c_str());
            return 2;
        }
    }
    bool hasReps = false, hasInterleave = false;
    for (int i = 1; i < argc; ++i) {
        hasReps |= std::strncmp(argv[i], "--benchmark_repetitions", 23) == 0;
        hasInterleave |= std::strncmp(argv[i], "--benchmark_enable_random_interleaving", 38) == 0;
    }
    std::string reps = "--benchmark_repetitions=5",
                inter = "--benchmark_enable_random_interleaving=true";
    if (!hasReps) args.push_back(reps.data());
    if (!hasInterleave) args.push_back(inter.data());
    int n = static_cast<int>(args.size());
    benchmark::Initialize(&n, args.data());
    if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 2;
    std::printf("OpenMP waiting: %s\n", coli::startup::ompWaitDescription().c_str());
    std::printf("kernel path: %s, OpenMP threads: %d, LLC: %zu MiB\n",
                kernelPathName(selectedKernelPath()), omp_get_max_threads(),
                lastLevelCacheBytes() >> 20);
    registerAll();
    CollectingReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    const auto mem = reporter.bw.find("MemRead");
    const double memMedian = mem != reporter.bw.end() ? median(mem->second) : 0.0;
    std::printf("\n%-34s %10s %21s %8s %s\n", "benchmark", "GB/s med", "min-max", "ratio",
                "(ratio = median / MemRead median)");
    for (const std::string& name : reporter.order) {
        const auto& v = reporter.bw[name];
        const double med = median(v);
        std::printf("%-34s %10.2f %10.2f-%-10.2f %8.3f  (%zu runs)\n", name.c_str(), med / 1e9,
                    *std::min_element(v.begin(), v.end()) / 1e9,
                    *std::max_element(v.begin(), v.end()) / 1e9,
                    memMedian > 0 ? med / memMedian : 0.0, v.size());
    }
    benchmark::Shutdown();
    return memMedian > 0 ? 0 : 1;
}
