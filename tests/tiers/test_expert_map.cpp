// The expert cache's per-expert map (ExpertMap: the Brain and Atlas views' telemetry) and user
// pins (docs/tiers.md "User pins"), driven directly over a real container (qwen3moe fixture):
// states follow loads, evictions and pins; hits count as TierCounters::routed does; user pins
// count against the hot-store, are refused beyond it, are never swapped out by learned pins, and
// give way last when the budget shrinks; excluded experts are never learned pins.
#include "cache_test_util.h"

#include <algorithm>
#include <numeric>

using namespace coli;
using cache_test::CacheFixture;
using tiers::ExpertId;
using tiers::ExpertState;

namespace {

class ExpertMapTest : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_TRUE(fx.error.empty()) << fx.error;
        ASSERT_GE(fx.sparseLayers.size(), 3u);
        tiers::CacheOptions co;
        co.pinShare = 0.5;
        auto made = cache_test::makeCache(fx, aio::IoBackend::PreadThreads, 2, false, co);
        ASSERT_TRUE(made.isOk()) << made.status().toString();
        cache = std::move(*made);
        E = fx.cfg.nExperts;
        l0 = fx.sparseLayers[0];
        l1 = fx.sparseLayers[1];
        l2 = fx.sparseLayers[2];
    }
    // A budget whose hot-store holds `places` pins (pinShare 0.5 of the slots beyond the working
    // set).
    void placesFor(int places) {
        ASSERT_TRUE(
            cache->setBudget(cache->minimumBudget() + uint64_t(2 * places) * cache->slotBytes())
                .isOk());
        ASSERT_EQ(cache->pinCapacity(), places);
    }
    uint8_t state(ExpertId id) const {
        return cache->expertMap().state[size_t(id.layer) * size_t(E) + size_t(id.expert)];
    }
    uint32_t hits(ExpertId id) const {
        return cache->expertMap().hits[size_t(id.layer) * size_t(E) + size_t(id.expert)];
    }
    // One batch of `layer` routing `experts`, every one handed out and finished.
    void route(int layer, const std::vector<int>& experts, const std::vector<int>& counts = {}) {
        ASSERT_TRUE(cache->beginLayer(layer, experts, counts).isOk());
        for (;;) {
            SwiGluView v;
            Result<int> pos = cache->next(&v);
            ASSERT_TRUE(pos.isOk()) << pos.status().toString();
            if (*pos < 0) break;
            ASSERT_EQ(fx.checkView({layer, experts[size_t(*pos)]}, v), "");
            cache->finished(*pos);
        }
        cache->waitIdle();
        ASSERT_TRUE(cache->checkConsistency().isOk()) << cache_test::state(*cache);
    }
    void hot(ExpertId id, double heat) { cache->setHeat(id, heat, cache->tokenClock()); }

    const CacheFixture& fx = CacheFixture::get("qwen3moe");
    std::unique_ptr<tiers::ExpertCache> cache;
    int E = 0, l0 = 0, l1 = 0, l2 = 0;
};

constexpr uint8_t st(ExpertState s) {
    return uint8_t(s);
}
constexpr uint8_t user(ExpertState s) {
    return uint8_t(uint8_t(s) | tiers::kUserPinFlag);
}

TEST_F(ExpertMapTest, ShapeAndDenseLayers) {
    const tiers::ExpertMap map = cache->telemetry().experts;
    ASSERT_EQ(map.nLayers, fx.cfg.nLayers);
    ASSERT_EQ(map.nExperts, E);
    ASSERT_EQ(map.state.size(), size_t(fx.cfg.nLayers * E));
    ASSERT_EQ(map.hits.size(), map.state.size());
    for (int l = 0; l < fx.cfg.nLayers; ++l)
        for (int e = 0; e < E; ++e)
            EXPECT_EQ(map.state[size_t(l * E + e)],
                      fx.cfg.sparseLayer[size_t(l)] ? st(ExpertState::Disk) : st(ExpertState::None))
                << "layer " << l << " expert " << e;
    EXPECT_EQ(std::accumulate(map.hits.begin(), map.hits.end(), uint64_t(0)), 0u);
}

TEST_F(ExpertMapTest, StatesFollowLoadsEvictionsAndPins) {
    placesFor(2);
    // Read on demand: loading while the read is in flight (or already cached), cached after.
    ASSERT_TRUE(cache->beginLayer(l0, std::vector<int>{0, 1}).isOk());
    for (int e : {0, 1}) {
        const uint8_t s = state({l0, e});
        EXPECT_TRUE(s == st(ExpertState::Loading) || s == st(ExpertState::Cached)) << int(s);
    }
    cache->abortLayer();
    cache->waitIdle();
    EXPECT_EQ(state({l0, 0}), st(ExpertState::Cached));
    EXPECT_EQ(state({l0, 1}), st(ExpertState::Cached));
    // A learned pin of a resident expert, and a user pin read into the hot-store.
    cache->setPins({{l0, 0}});
    ASSERT_TRUE(cache->pinUser({l1, 5}).isOk());
    EXPECT_TRUE(state({l1, 5}) == user(ExpertState::Pinned)) << int(state({l1, 5}));
    cache->waitIdle();
    EXPECT_EQ(state({l0, 0}), st(ExpertState::Pinned));
    EXPECT_EQ(state({l1, 5}), user(ExpertState::Pinned));
    ASSERT_TRUE(cache->checkConsistency().isOk()) << cache_test::state(*cache);
    // Every other expert of layer l0 through the few cache slots, a token each: (l0, 1), the
    // least recent, is evicted; the pins stay.
    for (int e = 2; e < E; ++e) {
        route(l0, {e});
        if (HasFatalFailure()) return;
        cache->endTokens(1);
    }
    EXPECT_EQ(state({l0, 1}), st(ExpertState::Disk));
    EXPECT_EQ(state({l0, 0}), st(ExpertState::Pinned));
    EXPECT_EQ(state({l1, 5}), user(ExpertState::Pinned));
    EXPECT_GT(cache->counters().evictions, 0u);
    // Unpinned: an ordinary cached expert again, evictable.
    EXPECT_TRUE(cache->unpinUser({l1, 5}));
    EXPECT_FALSE(cache->unpinUser({l1, 5}));
    EXPECT_EQ(state({l1, 5}), st(ExpertState::Cached));
    cache->setPins({});
    EXPECT_EQ(state({l0, 0}), st(ExpertState::Cached));
    // A user pin of an expert that is not resident yet carries the flag at once.
    ASSERT_TRUE(cache->pinUser({l0, 9}).isOk());
    EXPECT_TRUE(state({l0, 9}) & tiers::kUserPinFlag);
    cache->waitIdle();
    EXPECT_EQ(state({l0, 9}), user(ExpertState::Pinned));
    ASSERT_TRUE(cache->checkConsistency().isOk()) << cache_test::state(*cache);
}

TEST_F(ExpertMapTest, HitsCountAsRoutedDoes) {
    placesFor(1);
    route(l0, {3, 4}, {5, 2}); // a prefill batch: once per distinct expert, not per token
    route(l0, {3});
    route(l1, {3});
    EXPECT_EQ(hits({l0, 3}), 2u);
    EXPECT_EQ(hits({l0, 4}), 1u);
    EXPECT_EQ(hits({l1, 3}), 1u);
    const tiers::TierTelemetry t = cache->telemetry();
    EXPECT_EQ(std::accumulate(t.experts.hits.begin(), t.experts.hits.end(), uint64_t(0)),
              t.counters.routed);
    EXPECT_EQ(t.counters.routed, 4u);
}

TEST_F(ExpertMapTest, UserPinsCountAgainstTheHotStoreAndAreRefusedBeyondIt) {
    placesFor(2);
    ASSERT_TRUE(cache->pinUser({l0, 1}).isOk());
    ASSERT_TRUE(cache->pinUser({l0, 1}).isOk()); // already one: no change
    ASSERT_TRUE(cache->pinUser({l1, 2}).isOk());
    const Status full = cache->pinUser({l2, 3});
    EXPECT_EQ(full.code(), ErrorCode::InvalidArgument);
    EXPECT_EQ(full.message(), "the hot-store is full: 2 of 2 places are pinned; unpin an expert "
                              "or raise the RAM budget");
    EXPECT_EQ(cache->userPins(), (std::vector<ExpertId>{{l0, 1}, {l1, 2}}));
    EXPECT_EQ(state({l2, 3}), st(ExpertState::Disk));
    // Not routed experts are refused, naming them.
    const Status bad = cache->pinUser({l0, E});
    EXPECT_EQ(bad.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(bad.message().find("expert " + std::to_string(E)), std::string::npos);
    for (int l = 0; l < fx.cfg.nLayers; ++l)
        if (!fx.cfg.sparseLayer[size_t(l)]) {
            EXPECT_EQ(cache->pinUser({l, 0}).code(), ErrorCode::InvalidArgument);
        }
    cache->waitIdle();
    ASSERT_TRUE(cache->checkConsistency().isOk()) << cache_test::state(*cache);
}

TEST_F(ExpertMapTest, LearnedPinningNeverSwapsUserPinsOut) {
    placesFor(3);
    for (int e = 0; e < E; ++e)
        hot({l1, e}, 100.0 + e); // every expert of l1 far hotter than the user's choice
    ASSERT_TRUE(cache->pinUser({l0, 7}).isOk()); // cold
    cache->setPins({{l1, 15}, {l1, 14}, {l1, 13}, {l1, 12}});
    EXPECT_EQ(cache->pins(), (std::vector<ExpertId>{{l0, 7}, {l1, 14}, {l1, 15}}));
    for (int i = 0; i < 10; ++i)
        cache->rebalancePins();
    EXPECT_EQ(cache->userPins(), (std::vector<ExpertId>{{l0, 7}}));
    EXPECT_EQ(cache->pins().size(), 3u);
    // A user pin takes the coldest learned pin's place when the hot-store is full.
    ASSERT_TRUE(cache->pinUser({l2, 0}).isOk());
    EXPECT_EQ(cache->pins(), (std::vector<ExpertId>{{l0, 7}, {l1, 15}, {l2, 0}}));
    // A learned pin made a user pin keeps its place.
    ASSERT_TRUE(cache->pinUser({l1, 15}).isOk());
    EXPECT_EQ(cache->pins(), (std::vector<ExpertId>{{l0, 7}, {l1, 15}, {l2, 0}}));
    EXPECT_EQ(cache->userPins(), cache->pins());
    EXPECT_EQ(cache->rebalancePins(), 0);
    cache->waitIdle();
    ASSERT_TRUE(cache->checkConsistency().isOk()) << cache_test::state(*cache);
}

TEST_F(ExpertMapTest, ExcludedExpertsAreNeverLearnedPins) {
    placesFor(2);
    hot({l1, 4}, 500);
    hot({l1, 5}, 400);
    hot({l1, 6}, 300);
    cache->setPins({{l1, 4}, {l1, 5}});
    EXPECT_TRUE(cache->exclude({l1, 4})); // the user unpinned a learned pin
    EXPECT_EQ(cache->pins(), (std::vector<ExpertId>{{l1, 5}}));
    EXPECT_EQ(cache->exclusions(), (std::vector<ExpertId>{{l1, 4}}));
    EXPECT_EQ(cache->rebalancePins(), 1); // the free place goes to the next hottest
    EXPECT_EQ(cache->pins(), (std::vector<ExpertId>{{l1, 5}, {l1, 6}}));
    cache->setPins({{l1, 4}, {l1, 5}, {l1, 6}});
    EXPECT_EQ(cache->pins(), (std::vector<ExpertId>{{l1, 5}, {l1, 6}}));
    EXPECT_FALSE(cache->exclude({l2, 0})); // not pinned: excluded, nothing unpinned
    // A user pin of an excluded expert is the user's choice: allowed.
    cache->setPins({});
    ASSERT_TRUE(cache->pinUser({l1, 4}).isOk());
    EXPECT_TRUE(cache->unpinUser({l1, 4}));
    // Reset: learned pinning may choose it again.
    cache->setExclusions({});
    EXPECT_TRUE(cache->exclusions().empty());
    EXPECT_EQ(cache->rebalancePins(), 2);
    EXPECT_EQ(cache->pins(), (std::vector<ExpertId>{{l1, 4}, {l1, 5}}));
    cache->setExclusions({{l1, 5}, {l0, E}}); // at load: a bad id is skipped
    EXPECT_EQ(cache->pins(), (std::vector<ExpertId>{{l1, 4}}));
    cache->waitIdle();
    ASSERT_TRUE(cache->checkConsistency().isOk()) << cache_test::state(*cache);
}

TEST_F(ExpertMapTest, ShrinkingTheBudgetUnpinsLearnedPinsFirst) {
    placesFor(4);
    hot({l0, 0}, 10);
    hot({l0, 1}, 20);
    hot({l1, 8}, 1000);
    hot({l1, 9}, 900);
    ASSERT_EQ(cache->setUserPins({{l0, 0}, {l0, 1}}), 2);
    cache->setPins({{l1, 8}, {l1, 9}});
    ASSERT_EQ(cache->pins().size(), 4u);
    placesFor(2); // the hot learned pins go before the cold user pins
    EXPECT_EQ(cache->pins(), (std::vector<ExpertId>{{l0, 0}, {l0, 1}}));
    EXPECT_EQ(cache->userPins(), cache->pins());
    placesFor(1); // then the coldest user pin
    EXPECT_EQ(cache->userPins(), (std::vector<ExpertId>{{l0, 1}}));
    EXPECT_EQ(state({l0, 0}) & tiers::kUserPinFlag, 0);
    cache->waitIdle();
    ASSERT_TRUE(cache->checkConsistency().isOk()) << cache_test::state(*cache);
    // A stored list longer than the hot-store: the first ones that fit are applied.
    EXPECT_EQ(cache->setUserPins({{l2, 1}, {l0, E}, {l2, 2}, {l2, 3}}), 1);
    EXPECT_EQ(cache->userPins(), (std::vector<ExpertId>{{l2, 1}}));
    EXPECT_EQ(state({l0, 1}) & tiers::kUserPinFlag, 0);
}

} // namespace
