// The access sequence and the policies of engine/cachesim against an exhaustive search (Belady
// is optimal), textbook sequences (LRU, LFU) and a sequence whose LFRU heats are worked out by
// hand (tiers::HeatTable).
#include "cachesim/access_sequence.h"
#include "cachesim/simulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <vector>

using namespace coli::cachesim;

namespace {

// A trace of one model shape: tokens[t][moe layer] = the top_k ids.
RoutingTraceFile makeTrace(int nMoe, int nExperts, int topK,
                           const std::vector<std::vector<std::vector<int32_t>>>& tokens,
                           const std::vector<uint8_t>& generated = {}) {
    RoutingTraceFile t;
    t.name = "test";
    t.nLayers = nMoe;
    t.nExperts = nExperts;
    t.topK = topK;
    for (int i = 0; i < nMoe; ++i)
        t.moeLayers.push_back(i);
    for (const auto& tok : tokens)
        for (const auto& layer : tok)
            t.experts.insert(t.experts.end(), layer.begin(), layer.end());
    t.generated = generated.empty() ? std::vector<uint8_t>(tokens.size(), 0) : generated;
    return t;
}

// One layer, top-1: the simplest trace, one access per token.
RoutingTraceFile sequenceTrace(int nExperts, const std::vector<int32_t>& ids) {
    std::vector<std::vector<std::vector<int32_t>>> tokens;
    for (int32_t id : ids)
        tokens.push_back({{id}});
    return makeTrace(1, nExperts, 1, tokens);
}

AccessSequence build(const RoutingTraceFile& t, int chunk = 1) {
    auto s = buildAccessSequence({&t, 1}, chunk);
    EXPECT_TRUE(s.isOk()) << s.status().toString();
    return s.isOk() ? *s : AccessSequence{};
}

SimResult sim(const AccessSequence& s, Policy p, int capacity,
              double halfLife = coli::tiers::HeatTable::kDefaultHalfLifeTokens) {
    auto r = simulate(s, {p, capacity, halfLife, 0});
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    return r.isOk() ? *r : SimResult{};
}

RoutingTraceFile randomTrace(std::mt19937& rng, int nMoe, int nExperts, int topK, int nTokens) {
    std::vector<std::vector<std::vector<int32_t>>> tokens(static_cast<size_t>(nTokens));
    std::vector<int32_t> ids(static_cast<size_t>(nExperts));
    for (auto& tok : tokens)
        for (int l = 0; l < nMoe; ++l) {
            for (int e = 0; e < nExperts; ++e)
                ids[size_t(e)] = e;
            std::shuffle(ids.begin(), ids.end(), rng);
            // Skewed: half the time the first choice is expert 0 or 1 (hot experts).
            if (rng() % 2 == 0) std::swap(ids[0], ids[size_t(rng() % std::min(2, nExperts))]);
            tok.push_back(std::vector<int32_t>(ids.begin(), ids.begin() + topK));
        }
    return makeTrace(nMoe, nExperts, topK, tokens);
}

// The exhaustive optimum, written from the trace directly (not from AccessSequence): groups are
// the union per (chunk, layer); a miss with a full cache tries every resident expert outside the
// current group as the victim (when there is none, the expert is read but not kept). Returns the
// fewest misses over all choices (memoised on position and resident set).
struct BruteForce {
    std::vector<std::vector<int>> groups; // distinct keys per group
    int capacity = 0;
    std::map<std::pair<size_t, uint32_t>, int> memo;

    BruteForce(const RoutingTraceFile& t, int chunk, int cap) : capacity(cap) {
        for (int64_t t0 = 0; t0 < t.nTokens(); t0 += chunk)
            for (int l = 0; l < t.nMoeLayers(); ++l) {
                std::vector<int> g;
                for (int64_t tok = t0; tok < std::min<int64_t>(t0 + chunk, t.nTokens()); ++tok)
                    for (int32_t e : t.expertsAt(tok, l)) {
                        const int key = l * t.nExperts + e;
                        if (std::find(g.begin(), g.end(), key) == g.end()) g.push_back(key);
                    }
                groups.push_back(g);
            }
    }
    // Misses from access `i` of group `g` on, with `resident` as a bit set.
    int best(size_t g, size_t i, uint32_t resident) {
        if (g == groups.size()) return 0;
        if (i == groups[g].size()) return best(g + 1, 0, resident);
        const auto key = std::make_pair(g * 64 + i, resident);
        if (auto it = memo.find(key); it != memo.end()) return it->second;
        const int k = groups[g][i];
        int r;
        if (resident >> k & 1) {
            r = best(g, i + 1, resident);
        } else if (std::popcount(resident) < capacity) {
            r = 1 + best(g, i + 1, resident | 1u << k);
        } else {
            r = std::numeric_limits<int>::max();
            for (int v = 0; v < 32; ++v) {
                const bool inGroup =
                    std::find(groups[g].begin(), groups[g].end(), v) != groups[g].end();
                if ((resident >> v & 1) && !inGroup)
                    r = std::min(r, 1 + best(g, i + 1, (resident & ~(1u << v)) | 1u << k));
            }
            if (r == std::numeric_limits<int>::max()) r = 1 + best(g, i + 1, resident);
        }
        memo[key] = r;
        return r;
    }
};

} // namespace

TEST(AccessSequence, DecodeStepsPrefillChunksAndUnion) {
    // 2 MoE layers, top-2; 3 prompt tokens then 2 generated ones.
    auto t = makeTrace(
        2, 4, 2,
        {{{0, 1}, {2, 3}}, {{1, 0}, {2, 1}}, {{3, 0}, {2, 3}}, {{0, 1}, {0, 1}}, {{1, 2}, {0, 1}}},
        {0, 0, 0, 1, 1});
    auto s = build(t, 2);
    EXPECT_EQ(s.tokens, 5);
    EXPECT_EQ(s.steps, 4); // prompt chunks [0,1], [2], then 2 decode tokens
    ASSERT_EQ(s.groups.size(), 8u);
    // Chunk [0,1], layer 0: union {0,1} in first-routing order; routings 0,1,1,0.
    EXPECT_EQ(std::vector<int32_t>(s.accesses.begin() + s.groups[0].accessBegin,
                                   s.accesses.begin() + s.groups[0].accessEnd),
              (std::vector<int32_t>{0, 1}));
    EXPECT_EQ(s.groups[0].routingEnd - s.groups[0].routingBegin, 4u);
    // Layer 1 keys are 4 + expert: union {6, 7, 5}.
    EXPECT_EQ(std::vector<int32_t>(s.accesses.begin() + s.groups[1].accessBegin,
                                   s.accesses.begin() + s.groups[1].accessEnd),
              (std::vector<int32_t>{6, 7, 5}));
    EXPECT_EQ(s.groups[0].advanceAfter, 0);
    EXPECT_EQ(s.groups[1].advanceAfter, 2);
    EXPECT_EQ(s.groups[3].advanceAfter, 1);
    EXPECT_EQ(s.accesses.size(), 2u + 3 + 2 + 2 + 2 + 2 + 2 + 2);
    EXPECT_EQ(s.routings.size(), 5u * 2 * 2);
    EXPECT_EQ(s.totalExperts(), 8);

    // Chunk 1: one step per token; two traces never share a chunk.
    EXPECT_EQ(build(t, 1).steps, 5);
    std::vector<RoutingTraceFile> two = {t, t};
    auto s2 = buildAccessSequence(two, 100);
    ASSERT_TRUE(s2.isOk());
    EXPECT_EQ(s2->steps, 2 * 3); // per trace: one prompt chunk, two decode steps
}

TEST(AccessSequence, RefusesMixedShapesAndBadChunk) {
    auto a = sequenceTrace(4, {0, 1});
    auto b = sequenceTrace(5, {0, 1});
    b.name = "other";
    std::vector<RoutingTraceFile> two = {a, b};
    auto s = buildAccessSequence(two, 1);
    ASSERT_FALSE(s.isOk());
    EXPECT_EQ(s.status().code(), coli::ErrorCode::InvalidArgument);
    EXPECT_NE(s.status().message().find("test and other"), std::string::npos);
    EXPECT_FALSE(buildAccessSequence({&a, 1}, 0).isOk());
    EXPECT_FALSE(buildAccessSequence({}, 1).isOk());
}

TEST(Simulator, TextbookLruAndBelady) {
    // 1 2 3 4 1 2 5 1 2 3 4 5 (0-based here): LRU misses 10 with 3 frames, 8 with 4; the optimum
    // 7 and 6 (Silberschatz, Operating System Concepts, the page-replacement examples).
    auto s = build(sequenceTrace(5, {0, 1, 2, 3, 0, 1, 4, 0, 1, 2, 3, 4}));
    EXPECT_EQ(sim(s, Policy::Lru, 3).misses, 10);
    EXPECT_EQ(sim(s, Policy::Lru, 4).misses, 8);
    EXPECT_EQ(sim(s, Policy::Belady, 3).misses, 7);
    EXPECT_EQ(sim(s, Policy::Belady, 4).misses, 6);
    const SimResult r = sim(s, Policy::Lru, 3);
    EXPECT_EQ(r.accesses, 12);
    EXPECT_EQ(r.hits, 2);
    EXPECT_EQ(r.evictions, 7);
    EXPECT_DOUBLE_EQ(r.hitRate(), 2.0 / 12);
    // Bytes read: misses x bytes per expert.
    auto b = simulate(s, {Policy::Lru, 3, 8192, 1000});
    ASSERT_TRUE(b.isOk());
    EXPECT_EQ(b->bytesRead, 10000);
    // Capacity 0: every access misses; all experts fit: only the 5 first reads.
    EXPECT_EQ(sim(s, Policy::Lfru, 0).misses, 12);
    EXPECT_EQ(sim(s, Policy::Lfu, 5).misses, 5);
}

TEST(Simulator, TextbookLfuKeepsCountsOfEvictedExperts) {
    // A B A B C D A C A with 2 slots (A=0, B=1, C=2, D=3):
    //  C: A and B both 2, A less recently used -> evict A;  D: evict C (1 < B's 2);
    //  A: count 3 (kept while evicted), evict D;  C: count 2, evict B (2 < A's 3);  A: hit.
    // Misses A B C D A C = 6; an LFU that forgot evicted counts would evict A at the second C.
    auto s = build(sequenceTrace(4, {0, 1, 0, 1, 2, 3, 0, 2, 0}));
    const SimResult r = sim(s, Policy::Lfu, 2);
    EXPECT_EQ(r.misses, 6);
    EXPECT_EQ(r.hits, 3);
    // LRU evicts differently (A at C, B at D, C at A, D at C) to the same count here.
    EXPECT_EQ(sim(s, Policy::Lru, 2).misses, 6);
}

TEST(Simulator, LfruHandCheckedHeats) {
    // A A A B C B C A (A=0, B=1, C=2), 2 slots, half-life 1 token; heats when the victim is
    // chosen (use() before the access, advance(1) after each token):
    //  t4 C: A = 1.75 * 2^-2 = 0.4375 (uses at t0..t2: 1, 1.5, 1.75), B = 1 * 2^-1 = 0.5
    //        -> evict A (plain LFU would evict B: counts 3 vs 1);
    //  t5 B, t6 C hit;  t7 A: B = 1.25 * 2^-2 = 0.3125, C = 1.25 * 2^-1 = 0.625 -> evict B.
    // Misses t0, t3, t4, t7 = 4; LFU misses t0, t3, t4, t5, t6 = 5.
    auto s = build(sequenceTrace(3, {0, 0, 0, 1, 2, 1, 2, 0}));
    EXPECT_EQ(sim(s, Policy::Lfru, 2, 1.0).misses, 4);
    EXPECT_EQ(sim(s, Policy::Lfu, 2).misses, 5);
    // With the default half-life (8192 tokens) the heats barely decay: LFRU acts as LFU here.
    EXPECT_EQ(sim(s, Policy::Lfru, 2).misses, 5);
}

TEST(HeatTableLayerCycle, ExpectedNextUseHandChecked) {
    using coli::tiers::ExpertId;
    using coli::tiers::HeatTable;
    const double inf = std::numeric_limits<double>::infinity();
    // 2 layers x 4 experts, no decay. Layer 0: (0,0) routed 3 times, (0,1) once (layer heat 4);
    // layer 1: (1,0) and (1,1) once each (layer heat 2).
    HeatTable h(2, 4, inf);
    for (ExpertId id : {ExpertId{0, 0}, ExpertId{0, 0}, ExpertId{0, 0}, ExpertId{0, 1},
                        ExpertId{1, 0}, ExpertId{1, 1}})
        h.use(id);
    EXPECT_DOUBLE_EQ(h.layerHeat(0), 4.0);
    EXPECT_DOUBLE_EQ(h.layerHeat(1), 2.0);
    // top-1, at layer 0: (0,0) p = 3/4, its layer is the current one, d = 2 (a whole token):
    // 2 + 2 * (4/3 - 1) = 8/3; (0,1) p = 1/4: 2 + 2 * 3 = 8; (1,0) p = 1/2, d = 1: 1 + 2 * 1 = 3.
    EXPECT_DOUBLE_EQ(h.expectedNextUse({0, 0}, 0, 1), 8.0 / 3.0);
    EXPECT_DOUBLE_EQ(h.expectedNextUse({0, 1}, 0, 1), 8.0);
    EXPECT_DOUBLE_EQ(h.expectedNextUse({1, 0}, 0, 1), 3.0);
    // At layer 1 the distances swap: (0,0) 1 + 2/3, (1,0) 2 + 2; never used: +inf.
    EXPECT_DOUBLE_EQ(h.expectedNextUse({0, 0}, 1, 1), 5.0 / 3.0);
    EXPECT_DOUBLE_EQ(h.expectedNextUse({1, 0}, 1, 1), 4.0);
    EXPECT_EQ(h.expectedNextUse({0, 2}, 0, 1), inf);
    // (0,1) and (1,0) have the same heat (1): the plain order goes by recency ((0,1) used
    // first), the layer-cycle order by the heat share: (0,1) has 1/4 of its layer, (1,0) 1/2.
    EXPECT_TRUE(h.colder({0, 1}, {1, 0}));
    EXPECT_TRUE(h.colder({0, 1}, {1, 0}, 0, 1));
    EXPECT_FALSE(h.colder({1, 0}, {0, 1}, 0, 1));
    // top-2: p = min(1, 2 * 3/4) = 1 for (0,0) and min(1, 2 * 1/2) = 1 for (1,0): both certain,
    // the farther layer leaves first although its heat is 3 against 1.
    EXPECT_DOUBLE_EQ(h.expectedNextUse({0, 0}, 0, 2), 2.0);
    EXPECT_DOUBLE_EQ(h.expectedNextUse({1, 0}, 0, 2), 1.0);
    EXPECT_TRUE(h.colder({0, 0}, {1, 0}, 0, 2));
    EXPECT_FALSE(h.colder({1, 0}, {0, 0}, 0, 2));
    EXPECT_TRUE(h.colder({1, 0}, {0, 0})); // the plain order: heat only
    // Current layer taken modulo the layer count; the never-used expert is colder than all.
    EXPECT_DOUBLE_EQ(h.expectedNextUse({1, 0}, -1, 1), h.expectedNextUse({1, 0}, 1, 1));
    EXPECT_TRUE(h.colder({0, 2}, {0, 1}, 0, 1));
}

TEST(HeatTableLayerCycle, LayerHeatDecaysAndFollowsSetHeat) {
    using coli::tiers::HeatTable;
    HeatTable h(1, 3, 1.0);
    h.use({0, 0});
    h.advance(1);
    h.use({0, 1});
    EXPECT_DOUBLE_EQ(h.layerHeat(0), 1.5); // 1 * 2^-1 + 1
    h.advance(2);
    EXPECT_DOUBLE_EQ(h.layerHeat(0), 0.375);
    h.setHeat({0, 2}, 2.0, h.now());
    EXPECT_DOUBLE_EQ(h.layerHeat(0), 2.375);
    h.setHeat({0, 2}, 0.0, h.now());
    EXPECT_DOUBLE_EQ(h.layerHeat(0), 0.375);
    // Moving the clock back: heats do not grow back (no decay before their stamp); the sum is
    // recomputed from them.
    h.setNow(0);
    EXPECT_DOUBLE_EQ(h.layerHeat(0), h.heat({0, 0}) + h.heat({0, 1}) + h.heat({0, 2}));
    EXPECT_DOUBLE_EQ(h.layerHeat(0), 2.0);
}

TEST(Simulator, LfruFollowsTheLayerCycle) {
    // 3 MoE layers of 1 expert (A, B, C), top-1, every token routes all three: the cyclic
    // pattern A B C A B C ..., 2 slots, 4 tokens. LRU misses every access (12). LFRU: every
    // expert is certain (p = 1), so the victim is the one whose layer is farther:
    //  t0: A, B miss; C miss at layer 2: A is 1 layer away, B 2 -> evict B.
    //  t1: A hit; B miss at layer 1: A 2 away, C 1 -> evict A; C hit.
    //  t2: A miss at layer 0: B 1 away, C 2 -> evict C; B hit; C miss: evict B (2 away).
    //  t3: A hit; B miss: evict A; C hit.  Misses 3 + 1 + 2 + 1 = 7, as Belady's.
    // With the plain heat order the heats tie and recency evicts as LRU: 12 misses.
    std::vector<std::vector<std::vector<int32_t>>> tokens(4, {{0}, {0}, {0}});
    auto s = build(makeTrace(3, 1, 1, tokens));
    ASSERT_EQ(s.accesses.size(), 12u);
    EXPECT_EQ(sim(s, Policy::Lru, 2).misses, 12);
    EXPECT_EQ(sim(s, Policy::Lfru, 2, 16.0).misses, 7);
    EXPECT_EQ(sim(s, Policy::Belady, 2).misses, 7);
}

TEST(Simulator, HeatCountsRoutingsNotAccesses) {
    // Prefill chunks of 3 tokens, 1 layer, top-1, 2 slots, no decay (half-life +inf):
    // chunk 1 routes A A B (accesses A, B; heat A 2, B 1); chunk 2 C C C: evict B (1 < 2);
    // chunk 3 B B B: B heat 4, evict A (2 < C's 3); chunk 4 C C C: hit.
    // Counting one per access instead would evict A at chunk 2 and hit B at chunk 3.
    auto s = build(sequenceTrace(3, {0, 0, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2}), 3);
    EXPECT_EQ(s.accesses.size(), 5u);
    const double inf = std::numeric_limits<double>::infinity();
    const SimResult r = sim(s, Policy::Lfru, 2, inf);
    EXPECT_EQ(r.misses, 4);
    EXPECT_EQ(r.hits, 1);
    EXPECT_EQ(sim(s, Policy::Lfu, 2).misses, 4);
}

TEST(Simulator, ExpertsOfTheCurrentLayerAreNeverEvicted) {
    // 1 layer, top-2, 1 slot. Token 0 {A, B}: A is read and kept, B is read but cannot evict A
    // (the layer still needs it): bypassed. Token 1 {A, C}: A hits, C bypassed again.
    auto s = build(makeTrace(1, 3, 2, {{{0, 1}}, {{0, 2}}}));
    for (Policy p : {Policy::Lru, Policy::Lfu, Policy::Lfru, Policy::Belady}) {
        const SimResult r = sim(s, p, 1);
        EXPECT_EQ(r.misses, 3) << policyName(p);
        EXPECT_EQ(r.hits, 1) << policyName(p);
        EXPECT_EQ(r.bypassed, 2) << policyName(p);
        EXPECT_EQ(r.evictions, 0) << policyName(p);
    }
}

TEST(Simulator, BeladyEqualsExhaustiveSearchOnTinyRandomTraces) {
    std::mt19937 rng(12345);
    int cases = 0, lruWorse = 0;
    for (int round = 0; round < 400; ++round) {
        const int nMoe = 1 + int(rng() % 2);
        const int nExperts = 2 + int(rng() % 3);
        const int topK = 1 + int(rng() % std::min(2, nExperts - 1));
        const int nTokens = 3 + int(rng() % 6);
        const int chunk = 1 + int(rng() % 2);
        const int capacity = 1 + int(rng() % (nMoe * nExperts));
        auto t = randomTrace(rng, nMoe, nExperts, topK, nTokens);
        auto s = build(t, chunk);
        BruteForce bf(t, chunk, capacity);
        const int optimum = bf.best(0, 0, 0);
        const SimResult r = sim(s, Policy::Belady, capacity);
        ASSERT_EQ(r.misses, optimum)
            << "round " << round << " capacity " << capacity << " chunk " << chunk;
        // Nothing can beat the optimum.
        for (Policy p : {Policy::Lru, Policy::Lfu, Policy::Lfru})
            ASSERT_GE(sim(s, p, capacity).misses, optimum) << policyName(p);
        lruWorse += sim(s, Policy::Lru, capacity).misses > optimum;
        ++cases;
    }
    EXPECT_EQ(cases, 400);
    EXPECT_GT(lruWorse, 20); // the traces are hard enough for the choice of victim to matter
}

TEST(Simulator, BeladyBeatsEveryPolicyOnRandomTraces) {
    std::mt19937 rng(777);
    for (int round = 0; round < 20; ++round) {
        auto t = randomTrace(rng, 3, 8, 2, 300);
        for (int chunk : {1, 4}) {
            auto s = build(t, chunk);
            for (int capacity : {1, 3, 6, 12, 20, 24}) {
                const SimResult best = sim(s, Policy::Belady, capacity);
                for (Policy p : {Policy::Lru, Policy::Lfu, Policy::Lfru}) {
                    const SimResult r = sim(s, p, capacity);
                    EXPECT_EQ(r.accesses, best.accesses);
                    EXPECT_GE(best.hits, r.hits) << policyName(p) << " capacity " << capacity;
                }
                // Everything fits: only the compulsory misses (distinct experts).
                if (capacity == 24) {
                    std::set<int32_t> distinct(s.accesses.begin(), s.accesses.end());
                    EXPECT_EQ(best.misses, int64_t(distinct.size()));
                }
            }
        }
    }
}

TEST(Simulator, RefusesBadOptions) {
    auto s = build(sequenceTrace(3, {0, 1}));
    EXPECT_FALSE(simulate(s, {Policy::Lru, -1, 8192, 0}).isOk());
    EXPECT_FALSE(simulate(s, {Policy::Lru, 1, 8192, -5}).isOk());
    EXPECT_FALSE(simulate(s, {Policy::Lfru, 1, 0, 0}).isOk());
    EXPECT_FALSE(simulate(s, {Policy::Lfru, 1, std::nan(""), 0}).isOk());
}

TEST(Simulator, PolicyNamesAndCapacityText) {
    for (Policy p : {Policy::Lru, Policy::Lfu, Policy::Lfru, Policy::Belady})
        EXPECT_EQ(parsePolicy(policyName(p)), p);
    EXPECT_FALSE(parsePolicy("LRU").has_value());
    EXPECT_FALSE(parsePolicy("fifo").has_value());

    EXPECT_EQ(parseCapacity("10%", 96).value(), 10); // 9.6 rounds to 10
    EXPECT_EQ(parseCapacity("25%", 96).value(), 24);
    EXPECT_EQ(parseCapacity("50%", 96).value(), 48);
    EXPECT_EQ(parseCapacity("100%", 96).value(), 96);
    EXPECT_EQ(parseCapacity("0.5%", 96).value(), 1); // a positive share keeps at least one expert
    EXPECT_EQ(parseCapacity("0%", 96).value(), 0);
    EXPECT_EQ(parseCapacity("17", 96).value(), 17);
    for (const char* bad : {"", "%", "x%", "101%", "-1%", "97", "-1", "1.5", "12x", "nan%"}) {
        auto c = parseCapacity(bad, 96);
        ASSERT_FALSE(c.isOk()) << bad;
        EXPECT_NE(c.status().message().find(std::string("'") + bad + "'"), std::string::npos);
    }
}
