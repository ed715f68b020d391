// viz/embedding.h: the Atlas's spectral embedding in 3D (the NumPy comparison is
// test_embedding_numpy.py).
#include "viz/embedding.h"
#include "viz/specialists.h"
#include "viz/synthetic_routing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <unistd.h>

using namespace coli;
using namespace coli::viz;

namespace {

uint64_t mix(uint64_t& s) {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// Builds a symmetric graph from weights given for i < j.
AffinityGraph fromPairs(int n, const std::map<std::pair<int, int>, double>& w) {
    std::vector<std::map<int, double>> rows(static_cast<size_t>(n));
    for (const auto& [ij, v] : w) {
        rows[size_t(ij.first)][ij.second] = v;
        rows[size_t(ij.second)][ij.first] = v;
    }
    AffinityGraph g;
    g.n = n;
    g.rowStart.push_back(0);
    for (const auto& r : rows) {
        for (const auto& [j, v] : r) {
            g.col.push_back(j);
            g.weight.push_back(v);
        }
        g.rowStart.push_back(int64_t(g.col.size()));
    }
    return g;
}

// Three planted clusters of m experts: every pair inside a cluster linked with a weight in
// [0.5, 1], no link between clusters.
AffinityGraph plantedClusters(int m) {
    uint64_t s = 7;
    std::map<std::pair<int, int>, double> w;
    for (int c = 0; c < 3; ++c)
        for (int a = 0; a < m; ++a)
            for (int b = a + 1; b < m; ++b)
                w[{c * m + a, c * m + b}] = 0.5 + 0.5 * double(mix(s) >> 11) * 0x1.0p-53;
    return fromPairs(3 * m, w);
}

double distance(const Embedding& e, size_t a, size_t b) {
    double d = 0;
    for (size_t c = 0; c < 3; ++c)
        d += (e.xyz[a * 3 + c] - e.xyz[b * 3 + c]) * (e.xyz[a * 3 + c] - e.xyz[b * 3 + c]);
    return std::sqrt(d);
}

// Every within-cluster distance below every between-cluster one.
void expectSeparated(const Embedding& e, const std::vector<int>& cluster) {
    double within = 0, between = std::numeric_limits<double>::infinity();
    for (size_t a = 0; a < cluster.size(); ++a)
        for (size_t b = a + 1; b < cluster.size(); ++b) {
            if (cluster[a] < 0 || cluster[b] < 0) continue;
            const double d = distance(e, a, b);
            if (cluster[a] == cluster[b])
                within = std::max(within, d);
            else
                between = std::min(between, d);
        }
    EXPECT_LT(within, between);
}

// A larger graph for the byte checks: the affinity of synthetic routing (6 x 64 experts).
AffinityGraph syntheticGraph() {
    SyntheticRoutingSpec s;
    s.nLayers = 6;
    s.nExperts = 64;
    s.nTopics = 6;
    s.tokensPerTopic = 300;
    auto r = makeSyntheticRouting(s);
    EXPECT_TRUE(r.isOk());
    auto g = buildAffinity(r->profile);
    EXPECT_TRUE(g.isOk());
    return *g;
}

uint64_t fnv1a(const std::vector<double>& v) {
    uint64_t h = 0xcbf29ce484222325ull;
    const auto* p = reinterpret_cast<const unsigned char*>(v.data());
    for (size_t i = 0; i < v.size() * sizeof(double); ++i)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

std::string selfPath() {
    std::array<char, 4096> buf{};
    const ssize_t n = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
    return n > 0 ? std::string(buf.data(), size_t(n)) : std::string();
}

} // namespace

TEST(Embedding, RecoversThreePlantedClusters) {
    const int m = 30;
    auto e = embed3d(plantedClusters(m));
    ASSERT_TRUE(e.isOk()) << e.status().toString();
    std::vector<int> cluster;
    for (int i = 0; i < 3 * m; ++i)
        cluster.push_back(i / m);
    expectSeparated(*e, cluster);
}

TEST(Embedding, RecoversPlantedTopicsFromRouting) {
    // Every expert a specialist of one of three topics: the affinity and embedding together must
    // put each topic's experts among their own. (Not every within-topic distance below every
    // between-topic one: co-activation links consecutive layers, which stretches each topic's
    // experts along the layers on the third axis, a real structure of routing.)
    SyntheticRoutingSpec s;
    s.nLayers = 4;
    s.nExperts = 24;
    s.nTopics = 3;
    s.tokensPerTopic = 400;
    s.specialistFraction = 1.0;
    s.bias = 3.0;
    auto r = makeSyntheticRouting(s);
    ASSERT_TRUE(r.isOk());
    auto g = buildAffinity(r->profile);
    ASSERT_TRUE(g.isOk());
    auto e = embed3d(*g);
    ASSERT_TRUE(e.isOk()) << e.status().toString();
    auto purity = topicPurity(e->xyz, r->plantedTopic, s.nTopics);
    ASSERT_TRUE(purity.isOk()) << purity.status().toString();
    EXPECT_GE(purity->overall, 0.95);
}

TEST(Embedding, UnitBoxAndFixedSigns) {
    auto e = embed3d(syntheticGraph());
    ASSERT_TRUE(e.isOk()) << e.status().toString();
    double lo[3] = {1, 1, 1}, hi[3] = {-1, -1, -1};
    for (int a = 0; a < 3; ++a) {
        double top = 0;
        for (int i = 0; i < e->n; ++i) {
            const double x = e->xyz[size_t(i) * 3 + size_t(a)];
            lo[a] = std::min(lo[a], x);
            hi[a] = std::max(hi[a], x);
            if (std::fabs(x) > std::fabs(top)) top = x;
        }
        EXPECT_GE(lo[a], -1.0);
        EXPECT_LE(hi[a], 1.0);
        EXPECT_NEAR(lo[a] + hi[a], 0.0, 1e-12); // centred on the bounding box
    }
    EXPECT_DOUBLE_EQ(std::max({hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]}), 2.0);
    EXPECT_GE(e->eigenvalue[0], e->eigenvalue[1]);
    EXPECT_GE(e->eigenvalue[1], e->eigenvalue[2]);
}

TEST(Embedding, SameBytesTwice) {
    const AffinityGraph g = syntheticGraph();
    auto a = embed3d(g), b = embed3d(g);
    ASSERT_TRUE(a.isOk() && b.isOk());
    ASSERT_EQ(a->xyz.size(), b->xyz.size());
    EXPECT_EQ(std::memcmp(a->xyz.data(), b->xyz.data(), a->xyz.size() * sizeof(double)), 0);
}

// Run by SameBytesAcrossThreadCounts in a child process.
TEST(Embedding, DISABLED_PrintHash) {
    auto e = embed3d(syntheticGraph());
    ASSERT_TRUE(e.isOk());
    std::printf("EMBEDDING-HASH %016llx\n", static_cast<unsigned long long>(fnv1a(e->xyz)));
}

TEST(Embedding, SameBytesAcrossThreadCounts) {
    auto e = embed3d(syntheticGraph());
    ASSERT_TRUE(e.isOk());
    char want[32];
    std::snprintf(want, sizeof want, "%016llx", static_cast<unsigned long long>(fnv1a(e->xyz)));
    const std::string self = selfPath();
    ASSERT_FALSE(self.empty());
    for (const char* threads : {"1", "2", "7"}) {
        const std::string cmd = std::string("OMP_NUM_THREADS=") + threads + " '" + self +
                                "' --gtest_also_run_disabled_tests "
                                "--gtest_filter=Embedding.DISABLED_PrintHash 2>&1";
        FILE* f = popen(cmd.c_str(), "r");
        ASSERT_NE(f, nullptr);
        std::string out;
        char buf[512];
        while (std::fgets(buf, sizeof buf, f))
            out += buf;
        ASSERT_EQ(pclose(f), 0) << out;
        const size_t at = out.find("EMBEDDING-HASH ");
        ASSERT_NE(at, std::string::npos) << out;
        EXPECT_EQ(out.substr(at + 15, 16), want) << "OMP_NUM_THREADS=" << threads;
    }
}

TEST(Embedding, DisconnectedPartsAndIsolatedExpertsAreHandled) {
    // Two triangles, a path and two isolated experts: the uniform term makes it one graph.
    auto g = fromPairs(10, {{{0, 1}, 1.0},
                            {{1, 2}, 0.5},
                            {{0, 2}, 0.7},
                            {{3, 4}, 0.9},
                            {{4, 5}, 0.8},
                            {{3, 5}, 0.3},
                            {{6, 7}, 0.6}});
    auto e = embed3d(g);
    ASSERT_TRUE(e.isOk()) << e.status().toString();
    for (double x : e->xyz)
        EXPECT_TRUE(std::isfinite(x));
}

TEST(Embedding, RefusesBadGraphs) {
    auto expectError = [](const AffinityGraph& g, const char* words) {
        auto e = embed3d(g);
        ASSERT_FALSE(e.isOk()) << words;
        EXPECT_EQ(e.status().code(), ErrorCode::InvalidArgument);
        EXPECT_NE(e.status().message().find(words), std::string::npos) << e.status().message();
    };
    expectError(fromPairs(4, {{{0, 1}, 1.0}}), "at least 5 experts");
    expectError(fromPairs(6, {}), "no edges");
    AffinityGraph g = fromPairs(6, {{{0, 1}, 1.0}, {{2, 3}, 0.5}});
    g.weight[0] = 0.9;
    expectError(g, "not symmetric");
    g = fromPairs(6, {{{0, 1}, 1.0}});
    g.weight[0] = g.weight[1] = -1.0;
    expectError(g, "negative");
    g = fromPairs(6, {{{0, 1}, 1.0}});
    g.col[0] = 9;
    expectError(g, "(0, 9)");
}
