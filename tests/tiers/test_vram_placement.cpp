// VramPlacement (engine/tiers/vram_placement.h): which experts hold the VRAM tier's slots. No
// device: the bookkeeping alone, checked against its rules and its invariants after every call.
#include "tiers/vram_placement.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace coli::tiers {
namespace {

// Every slot's owner points back at it, used() counts owners, pins hold slots.
void checkInvariants(const VramPlacement& p, int nLayers, int nExperts) {
    int owners = 0;
    std::set<int> seen;
    for (int l = 0; l < nLayers; ++l)
        for (int e = 0; e < nExperts; ++e) {
            const int s = p.slotOf({l, e});
            if (s < 0) {
                ASSERT_FALSE(p.pinned({l, e}) && p.ready({l, e}));
                continue;
            }
            ASSERT_LT(s, p.slots());
            ASSERT_TRUE(seen.insert(s).second) << "slot " << s << " has two owners";
            ++owners;
        }
    ASSERT_EQ(owners, p.used());
    ASSERT_LE(int(p.pins().size()), p.pinCapacity());
}

TEST(VramPlacement, FillsFreeSlotsThenNeverEvictsWhenAllFit) {
    VramPlacement p(2, 4, 8);
    for (int round = 0; round < 3; ++round)
        for (int l = 0; l < 2; ++l)
            for (int e = 0; e < 4; ++e) {
                p.use({l, e});
                if (p.ready({l, e})) continue;
                const int s = p.place({l, e}, {});
                ASSERT_GE(s, 0);
                p.markReady(s);
            }
    EXPECT_EQ(p.used(), 8);
    EXPECT_EQ(p.evictions(), 0);
    checkInvariants(p, 2, 4);
}

TEST(VramPlacement, AOneOffRoutingDoesNotPushOutARegular) {
    VramPlacement p(1, 8, 2);
    // Experts 0 and 1 are routed every token for 20 tokens and fill both slots.
    for (int t = 0; t < 20; ++t) {
        for (int e : {0, 1}) {
            p.use({0, e});
            if (!p.ready({0, e})) p.markReady(p.place({0, e}, {}));
        }
        p.endTokens(1);
    }
    ASSERT_TRUE(p.ready({0, 0}) && p.ready({0, 1}));
    p.use({0, 5});
    EXPECT_EQ(p.place({0, 5}, {}), -1) << "heat 1 must not replace heat ~20";
    EXPECT_EQ(p.evictions(), 0);
    // Expert 5 becomes the regular and 1 stops: after a while 5 replaces 1, never 0.
    ExpertId evicted{-1, -1};
    int slot = -1;
    for (int t = 0; t < 400 && slot < 0; ++t) {
        p.use({0, 0});
        p.use({0, 5});
        slot = p.place({0, 5}, {}, &evicted);
        p.endTokens(1);
    }
    ASSERT_GE(slot, 0);
    EXPECT_EQ(evicted, (ExpertId{0, 1}));
    EXPECT_EQ(p.evictions(), 1);
    EXPECT_FALSE(p.ready({0, 5})) << "placed, not yet copied";
    p.markReady(slot);
    EXPECT_TRUE(p.ready({0, 5}));
    EXPECT_EQ(p.slotOf({0, 1}), -1);
    checkInvariants(p, 1, 8);
}

TEST(VramPlacement, BusySlotsAndPinsAreNeverReused) {
    VramPlacement p(1, 6, 2, {.pinShare = 0.5});
    const ExpertId hot[] = {{0, 3}};
    auto copies = p.setPins(hot);
    ASSERT_EQ(copies.size(), 1u);
    EXPECT_TRUE(p.pinned({0, 3}));
    EXPECT_FALSE(p.ready({0, 3})) << "reserved until copied";
    p.markReady(copies[0].slot);
    p.markReady(p.place({0, 0}, {}));
    const int slot0 = p.slotOf({0, 0});
    // Expert 4 is far hotter than 0, but 0's slot is in the batch in flight: no place.
    for (int i = 0; i < 50; ++i)
        p.use({0, 4});
    EXPECT_EQ(p.place({0, 4}, [&](int s) { return s == slot0; }), -1);
    // Not busy: 4 replaces 0, never the pinned 3 (heat 0).
    ExpertId evicted{-1, -1};
    EXPECT_EQ(p.place({0, 4}, {}, &evicted), slot0);
    EXPECT_EQ(evicted, (ExpertId{0, 0}));
    EXPECT_TRUE(p.ready({0, 3}));
    checkInvariants(p, 1, 6);
}

TEST(VramPlacement, PinsTakeAShareAndMoveWithLearnedHeat) {
    VramPlacement p(2, 4, 4, {.pinShare = 0.5});
    EXPECT_EQ(p.pinCapacity(), 2);
    const ExpertId first[] = {{1, 2}, {1, 2}, {0, 1}, {0, 3}, {9, 9}};
    auto copies = p.setPins(first);
    ASSERT_EQ(copies.size(), 2u) << "duplicates skipped, capacity 2";
    EXPECT_EQ(p.pins(), (std::vector<ExpertId>{{0, 1}, {1, 2}}));
    for (auto& c : copies)
        p.markReady(c.slot);
    const ExpertId second[] = {{0, 1}, {0, 0}};
    copies = p.setPins(second);
    ASSERT_EQ(copies.size(), 1u) << "(0,1) stays where it is";
    EXPECT_EQ(copies[0].id, (ExpertId{0, 0}));
    EXPECT_FALSE(p.pinned({1, 2}));
    EXPECT_TRUE(p.ready({1, 2})) << "an old pin stays as an ordinary cached expert";
    // A pin whose copy failed loses its reservation.
    p.release(copies[0].slot);
    EXPECT_FALSE(p.pinned({0, 0}));
    EXPECT_EQ(p.slotOf({0, 0}), -1);
    checkInvariants(p, 2, 4);
}

TEST(VramPlacement, RandomRoutingKeepsTheInvariants) {
    constexpr int L = 3, E = 16;
    VramPlacement p(L, E, 10, {.pinShare = 0.3});
    std::mt19937 rng(7);
    std::vector<int> busy;
    for (int t = 0; t < 2000; ++t) {
        if (t % 97 == 0) {
            std::vector<ExpertId> hot;
            for (int i = 0; i < 5; ++i)
                hot.push_back({int(rng() % L), int(rng() % E)});
            for (auto& c : p.setPins(hot)) {
                if (rng() % 4 == 0)
                    p.release(c.slot);
                else
                    p.markReady(c.slot);
            }
        }
        for (int l = 0; l < L; ++l) {
            busy.clear();
            for (int k = 0; k < 4; ++k) {
                // A skewed routing: low experts far more often.
                const ExpertId id{l, int(std::min<unsigned>(rng() % E, rng() % E))};
                p.use(id);
                if (p.ready(id)) {
                    busy.push_back(p.slotOf(id));
                    continue;
                }
                const int s = p.place(id, [&](int x) {
                    return std::find(busy.begin(), busy.end(), x) != busy.end();
                });
                if (s < 0) continue;
                ASSERT_EQ(std::find(busy.begin(), busy.end(), s), busy.end());
                p.markReady(s);
                busy.push_back(s);
            }
        }
        p.endTokens(1);
        checkInvariants(p, L, E);
    }
    EXPECT_GT(p.evictions(), 0);
    EXPECT_EQ(p.used(), 10);
}

// A smaller tier: the experts past the new size leave (pins too), the coldest pins beyond the
// new pin share become ordinary; slots whose buffer was made anew lose their experts too.
TEST(VramPlacement, ResizeDropsWhatNoLongerFits) {
    VramPlacement p(1, 16, 8, {.pinShare = 0.5});
    const ExpertId hot[] = {{0, 0}, {0, 1}, {0, 2}, {0, 3}};
    for (auto& c : p.setPins(hot))
        p.markReady(c.slot);
    for (int e = 4; e < 8; ++e)
        p.markReady(p.place({0, e}, {}));
    for (int i = 0; i < 5; ++i) // pin 1 the hotter of the first two
        p.use({0, 1});
    p.use({0, 0});
    ASSERT_EQ(p.used(), 8);
    const int slotOf3 = p.slotOf({0, 3});
    std::vector<ExpertId> left = p.resize(4, 4);
    EXPECT_EQ(p.slots(), 4);
    EXPECT_EQ(p.used(), 4);
    EXPECT_EQ(left.size(), 4u);
    EXPECT_EQ(p.pinCapacity(), 2);
    EXPECT_LE(int(p.pins().size()), 2);
    if (slotOf3 < 4) {
        EXPECT_TRUE(p.ready({0, 3}));
    }
    EXPECT_TRUE(p.pinned({0, 1})) << "the hotter pins stay";
    checkInvariants(p, 1, 16);
    // Growing with the first two slots' contents lost.
    left = p.resize(10, 2);
    EXPECT_EQ(p.slots(), 10);
    EXPECT_EQ(p.used(), 2);
    EXPECT_EQ(left.size(), 2u);
    checkInvariants(p, 1, 16);
}

} // namespace
} // namespace coli::tiers
