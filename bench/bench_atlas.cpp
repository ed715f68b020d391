// bench_atlas: the Atlas embedding at the issue-12 limit, 75 MoE layers x 256 experts (19,200),
// top-8, 12 topics x 2,000 tokens of synthetic routing with planted specialists
// (viz/synthetic_routing.h). Times the affinity graph and the 3D embedding (the routing data is
// made before the clock starts) and reports the process's peak RSS (getrusage ru_maxrss, which
// includes making the data), and the 5-nearest-neighbour purity of the planted specialists'
// topics in 3D. Goal: under 60 s and 2 GiB (docs/performance.md, "Atlas embedding").
#include "viz/embedding.h"
#include "viz/specialists.h"
#include "viz/synthetic_routing.h"

#include <benchmark/benchmark.h>

#include <chrono>
#include <sys/resource.h>

namespace {

double peakRssMiB() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return double(u.ru_maxrss) / 1024.0; // ru_maxrss is in KiB on Linux
}

void BM_AtlasEmbedding(benchmark::State& state) {
    coli::viz::SyntheticRoutingSpec spec;
    spec.nLayers = int(state.range(0));
    spec.nExperts = int(state.range(1));
    auto routing = coli::viz::makeSyntheticRouting(spec);
    if (!routing) {
        state.SkipWithError(routing.status().toString().c_str());
        return;
    }
    double affinitySeconds = 0, embedSeconds = 0;
    int64_t edges = 0, restarts = 0;
    double purity = 0;
    for (auto _ : state) {
        const auto t0 = std::chrono::steady_clock::now();
        auto g = coli::viz::buildAffinity(routing->profile);
        const auto t1 = std::chrono::steady_clock::now();
        if (!g) {
            state.SkipWithError(g.status().toString().c_str());
            return;
        }
        auto e = coli::viz::embed3d(*g);
        const auto t2 = std::chrono::steady_clock::now();
        if (!e) {
            state.SkipWithError(e.status().toString().c_str());
            return;
        }
        benchmark::DoNotOptimize(e->xyz.data());
        affinitySeconds += std::chrono::duration<double>(t1 - t0).count();
        embedSeconds += std::chrono::duration<double>(t2 - t1).count();
        edges = g->nnz();
        restarts = e->iterations;
        state.PauseTiming();
        // How well the planted topics cluster: 5-NN purity of the planted specialists in 3D.
        auto p = coli::viz::topicPurity(e->xyz, routing->plantedTopic, spec.nTopics);
        purity = p ? p->overall : -1;
        state.ResumeTiming();
    }
    const double n = double(state.iterations());
    state.counters["experts"] = double(routing->profile.nExperts);
    state.counters["coact_pairs"] = double(routing->profile.coactivation.size());
    state.counters["graph_nnz"] = double(edges);
    state.counters["lanczos_restarts"] = double(restarts);
    state.counters["affinity_s"] = affinitySeconds / n;
    state.counters["embed_s"] = embedSeconds / n;
    state.counters["planted_purity5"] = purity;
    state.counters["peak_rss_MiB"] = peakRssMiB();
}

} // namespace

BENCHMARK(BM_AtlasEmbedding)
    ->Args({75, 256})
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();

BENCHMARK_MAIN();
