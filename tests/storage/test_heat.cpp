// Heat decay (a pure function with a half-life in tokens) and the start-up ranking.
#include "storage/heat.h"

#include <cmath>
#include <gtest/gtest.h>
#include <limits>

using namespace coli::storage;

TEST(Heat, WholeHalfLivesAreExactPowersOfTwo) {
    EXPECT_EQ(decayedHeat(8.0, 100, 100, 1000), 8.0);
    EXPECT_EQ(decayedHeat(8.0, 100, 1100, 1000), 4.0);
    EXPECT_EQ(decayedHeat(8.0, 100, 3100, 1000), 1.0);
    EXPECT_EQ(decayedHeat(3.0, 0, 10 * 4096, 4096), 3.0 / 1024);
    EXPECT_EQ(decayedHeat(6.5, 0, 8192, kDefaultHalfLifeTokens), 3.25);
}

TEST(Heat, FractionalHalfLives) {
    // Half a half-life: a factor sqrt(1/2); one and a half: sqrt(1/2)/2, exactly half of it.
    EXPECT_DOUBLE_EQ(decayedHeat(8.0, 0, 500, 1000), 8.0 * std::sqrt(0.5));
    EXPECT_EQ(decayedHeat(8.0, 0, 1500, 1000), decayedHeat(8.0, 0, 500, 1000) / 2);
    // A quarter: 2^-0.25.
    EXPECT_DOUBLE_EQ(decayedHeat(1.0, 0, 250, 1000), std::pow(2.0, -0.25));
    // Deterministic: the same inputs give the same bits.
    EXPECT_EQ(decayedHeat(7.3, 11, 12345, 777.0), decayedHeat(7.3, 11, 12345, 777.0));
}

TEST(Heat, ClockBehindNeverGrowsHeatAndInfiniteHalfLifeKeepsIt) {
    EXPECT_EQ(decayedHeat(5.0, 1000, 10, 100), 5.0);
    EXPECT_EQ(decayedHeat(5.0, 0, 1000000, std::numeric_limits<double>::infinity()), 5.0);
}

TEST(Heat, FarFutureDecaysToZeroWithoutOverflow) {
    EXPECT_EQ(decayedHeat(1e300, 0, int64_t(1) << 62, 1.0), 0.0);
    EXPECT_EQ(decayedHeat(1.0, 0, 2000, 1.0), 0.0);
    EXPECT_GT(decayedHeat(1.0, 0, 1000, 1.0), 0.0); // 2^-1000 is still a (normal) double
}

TEST(Heat, RankHottestOrdersByDecayedHeatThenLayerExpert) {
    // Stored heat alone would put (0,0) first; after decay (2 half-lives) it is 2.5, below the
    // fresh 3.0 entries. Ties at 3.0 resolve by (layer, expert). Zero heat is never pinned.
    std::vector<HeatRecord> recs = {
        {2, 1, 3.0, 2000}, {0, 0, 10.0, 0},   {1, 5, 3.0, 2000},
        {1, 2, 3.0, 2000}, {0, 3, 0.0, 2000}, {3, 0, 1.0, 2000},
    };
    auto top = rankHottest(recs, 10, 2000, 1000);
    ASSERT_EQ(top.size(), 5u);
    EXPECT_EQ(top[0].layer, 1);
    EXPECT_EQ(top[0].expert, 2);
    EXPECT_EQ(top[1].layer, 1);
    EXPECT_EQ(top[1].expert, 5);
    EXPECT_EQ(top[2].layer, 2);
    EXPECT_EQ(top[2].expert, 1);
    EXPECT_EQ(top[3].layer, 0);
    EXPECT_EQ(top[3].expert, 0);
    EXPECT_EQ(top[3].heat, 2.5);
    EXPECT_EQ(top[3].lastSeen, 0);
    EXPECT_EQ(top[4].layer, 3);

    auto two = rankHottest(recs, 2, 2000, 1000);
    ASSERT_EQ(two.size(), 2u);
    EXPECT_EQ(two[0].expert, 2);
    EXPECT_EQ(two[1].expert, 5);
    EXPECT_TRUE(rankHottest(recs, 0, 2000, 1000).empty());
    // Input order does not matter.
    std::vector<HeatRecord> rev(recs.rbegin(), recs.rend());
    auto top2 = rankHottest(rev, 10, 2000, 1000);
    for (size_t i = 0; i < top.size(); ++i) {
        EXPECT_EQ(top2[i].layer, top[i].layer);
        EXPECT_EQ(top2[i].expert, top[i].expert);
    }
}
