// viz/affinity.h: the Atlas's affinity graph from topic shares and co-activation.
#include "viz/affinity.h"
#include "viz/synthetic_routing.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace coli;
using namespace coli::viz;

namespace {

// 4 experts, 2 topics. e0 and e1 lean to topic 0 alike (relative to their balanced shares), e2 to
// topic 1, e3 routes evenly; e0 and e2 are routed together for 5 of their 10 tokens each.
RoutingProfile handMade() {
    RoutingProfile p;
    p.nExperts = 4;
    p.nTopics = 2;
    p.shares = {0.2, 0.0, 0.4, 0.0, 0.0, 0.2, 0.1, 0.1};
    p.routed = {10, 20, 10, 10};
    p.coactivation = {{0, 2, 5}};
    return p;
}

struct Edge {
    int i, j;
    double w;
};

std::vector<Edge> edges(const AffinityGraph& g) {
    std::vector<Edge> out;
    for (int i = 0; i < g.n; ++i)
        for (int64_t k = g.rowStart[size_t(i)]; k < g.rowStart[size_t(i) + 1]; ++k)
            out.push_back({i, g.col[size_t(k)], g.weight[size_t(k)]});
    return out;
}

} // namespace

TEST(Affinity, HandMadeWeightsFollowTheFormula) {
    auto g = buildAffinity(handMade());
    ASSERT_TRUE(g.isOk()) << g.status().toString();
    // w01 = 0.5 * cos 1 = 0.5; w02 = 0.5 * max(0, cos -1) + 0.5 * 5 / sqrt(10 * 10) = 0.25;
    // e3's centred profile is zero, so it has no affinity.
    const auto e = edges(*g);
    ASSERT_EQ(e.size(), 4u);
    EXPECT_EQ(e[0].i, 0);
    EXPECT_EQ(e[0].j, 1);
    EXPECT_DOUBLE_EQ(e[0].w, 0.5);
    EXPECT_EQ(e[1].j, 2);
    EXPECT_DOUBLE_EQ(e[1].w, 0.25);
    EXPECT_EQ(e[2].i, 1);
    EXPECT_EQ(e[2].j, 0);
    EXPECT_EQ(e[3].i, 2);
    EXPECT_EQ(e[3].j, 0);
    EXPECT_EQ(g->rowStart[3], g->rowStart[4]); // e3 isolated
}

TEST(Affinity, NeighbourListsAreCappedThenSymmetrised) {
    // With one neighbour each: e0 keeps e1, e1 keeps e0, e2 keeps e0; the union gives e0 both.
    auto g = buildAffinity(handMade(), 1);
    ASSERT_TRUE(g.isOk()) << g.status().toString();
    const auto e = edges(*g);
    ASSERT_EQ(e.size(), 4u);
    EXPECT_EQ(g->rowStart[1] - g->rowStart[0], 2);
    EXPECT_EQ(e[1].j, 2);
}

TEST(Affinity, TiesKeepTheLowerIndex) {
    RoutingProfile p;
    p.nExperts = 4;
    p.nTopics = 2;
    p.shares = {0.3, 0.1, 0.3, 0.1, 0.3, 0.1, 0.3, 0.1};
    p.routed = {1, 1, 1, 1};
    auto g = buildAffinity(p, 1);
    ASSERT_TRUE(g.isOk()) << g.status().toString();
    // Rows 1, 2, 3 each pick e0 (all weights equal); row 0 picks e1.
    const auto e = edges(*g);
    ASSERT_EQ(e.size(), 6u);
    EXPECT_EQ(g->rowStart[1], 3);
    for (int k = 0; k < 3; ++k)
        EXPECT_EQ(e[size_t(k)].j, k + 1);
}

TEST(Affinity, SymmetricAndDeterministicOnSyntheticRouting) {
    SyntheticRoutingSpec s;
    s.nLayers = 4;
    s.nExperts = 32;
    s.nTopics = 4;
    s.tokensPerTopic = 200;
    auto r = makeSyntheticRouting(s);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    auto a = buildAffinity(r->profile);
    auto b = buildAffinity(r->profile);
    ASSERT_TRUE(a.isOk() && b.isOk());
    EXPECT_EQ(a->rowStart, b->rowStart);
    EXPECT_EQ(a->col, b->col);
    EXPECT_EQ(a->weight, b->weight);
    for (const Edge& e : edges(*a)) {
        ASSERT_NE(e.i, e.j);
        ASSERT_GT(e.w, 0.0);
        ASSERT_LE(e.w, 1.0);
        bool mirrored = false;
        for (const Edge& f : edges(*a))
            mirrored |= f.i == e.j && f.j == e.i && f.w == e.w;
        ASSERT_TRUE(mirrored) << e.i << " " << e.j;
    }
    // Every expert keeps at least its own neighbours (the union only adds).
    for (int i = 0; i < a->n; ++i)
        EXPECT_GE(a->rowStart[size_t(i) + 1] - a->rowStart[size_t(i)], kNeighbours) << i;
}

TEST(Affinity, RefusesInconsistentInput) {
    auto expectError = [](RoutingProfile p, const char* words) {
        auto g = buildAffinity(p);
        ASSERT_FALSE(g.isOk()) << words;
        EXPECT_EQ(g.status().code(), ErrorCode::InvalidArgument);
        EXPECT_NE(g.status().message().find(words), std::string::npos) << g.status().message();
    };
    RoutingProfile p = handMade();
    p.shares.pop_back();
    expectError(p, "shares has 7 values");
    p = handMade();
    p.shares[3] = std::numeric_limits<double>::quiet_NaN();
    expectError(p, "share of expert 1 in topic 1");
    p = handMade();
    p.shares[0] = 1.5;
    expectError(p, "outside [0, 1]");
    p = handMade();
    p.coactivation.push_back({1, 1, 1});
    expectError(p, "pair (1, 1)");
    p = handMade();
    p.coactivation.push_back({2, 0, 1});
    expectError(p, "listed twice");
    p = handMade();
    p.coactivation[0].count = 11;
    expectError(p, "counts 11 tokens");
    p = handMade();
    p.routed.resize(3);
    expectError(p, "routed has 3 values");
    EXPECT_FALSE(buildAffinity(handMade(), 0).isOk());
}
