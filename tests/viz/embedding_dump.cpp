// viz_embedding_dump OUT.json: small affinity graphs and their C++ Atlas embedding, for
// test_embedding_numpy.py to recompute with numpy.linalg.eigh.
#include "viz/embedding.h"
#include "viz/synthetic_routing.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <map>

using namespace coli::viz;

namespace {

// A random sparse graph of 14 experts: 0..10 linked at random, 11-12 a separate pair, 13 alone.
AffinityGraph randomGraph() {
    uint64_t s = 42;
    auto next = [&s] {
        uint64_t z = (s += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return double((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
    };
    const int n = 14;
    std::vector<std::map<int, double>> rows(n);
    for (int i = 0; i < 11; ++i)
        for (int j = i + 1; j < 11; ++j)
            if (next() < 0.45) rows[size_t(i)][j] = rows[size_t(j)][i] = 0.05 + next();
    rows[11][12] = rows[12][11] = 0.8;
    AffinityGraph g;
    g.n = n;
    g.rowStart.push_back(0);
    for (const auto& r : rows) {
        for (const auto& [j, w] : r) {
            g.col.push_back(j);
            g.weight.push_back(w);
        }
        g.rowStart.push_back(int64_t(g.col.size()));
    }
    return g;
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: viz_embedding_dump OUT.json\n");
        return 2;
    }
    SyntheticRoutingSpec spec;
    spec.nLayers = 4;
    spec.nExperts = 12;
    spec.topK = 2;
    spec.nTopics = 4;
    spec.tokensPerTopic = 100;
    auto routing = makeSyntheticRouting(spec);
    if (!routing) return std::fprintf(stderr, "%s\n", routing.status().toString().c_str()), 1;
    auto fromRouting = buildAffinity(routing->profile);
    if (!fromRouting)
        return std::fprintf(stderr, "%s\n", fromRouting.status().toString().c_str()), 1;

    nlohmann::json cases = nlohmann::json::array();
    for (const auto& [name, g] :
         {std::pair{"random", randomGraph()}, std::pair{"routing", *fromRouting}}) {
        auto e = embed3d(g);
        if (!e) return std::fprintf(stderr, "%s: %s\n", name, e.status().toString().c_str()), 1;
        cases.push_back({{"name", name},
                         {"n", g.n},
                         {"row_start", g.rowStart},
                         {"col", g.col},
                         {"weight", g.weight},
                         {"xyz", e->xyz},
                         {"eigenvalue", e->eigenvalue}});
    }
    std::ofstream out(argv[1]);
    out << nlohmann::json{{"regularisation", kRegularisation}, {"cases", cases}}.dump(1);
    return out.good() ? 0 : 1;
}
