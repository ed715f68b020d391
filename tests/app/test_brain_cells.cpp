// The Brain view's Qt-free core (issue 12): the synthetic telemetry generator (deterministic,
// top-k per layer per token, states and counters as the engine defines them, user pins) and
// BrainCells (which cells changed: flashes that fade in ~1 s, heat levels, modes, full redraws
// only when they are needed).
#include "brain_cells.h"
#include "synthetic_telemetry.h"

#include <gtest/gtest.h>

#include <numeric>
#include <set>

using namespace coli;
using namespace coli::app;
using tiers::ExpertState;

namespace {
ExpertState stateOf(uint8_t s) {
    return ExpertState(s & tiers::kExpertStateMask);
}
uint64_t sum(const std::vector<uint32_t>& v) {
    return std::accumulate(v.begin(), v.end(), uint64_t(0));
}
// Cells whose hits or state differ between two maps.
std::set<int> differing(const tiers::ExpertMap& a, const tiers::ExpertMap& b) {
    std::set<int> out;
    for (size_t c = 0; c < a.state.size(); ++c)
        if (a.state[c] != b.state[c] || a.hits[c] != b.hits[c]) out.insert(int(c));
    return out;
}
} // namespace

TEST(SyntheticTelemetry, ParsesShapes) {
    std::string why;
    const auto o = parseSyntheticShape("75x256", &why);
    ASSERT_TRUE(o) << why;
    EXPECT_EQ(o->nLayers, 75);
    EXPECT_EQ(o->nExperts, 256);
    EXPECT_EQ(o->topK, 8);
    EXPECT_EQ(o->vramExperts, 75 * 256 / 16); // the app's synthetic model has a GPU tier
    EXPECT_EQ(SyntheticOptions{}.vramExperts, 0);
    EXPECT_TRUE(parseSyntheticShape("100X400", &why));
    for (const char* bad :
         {"", "75", "x256", "75x", "0x256", "75x4", "75x256x2", "-1x16", "a x b"}) {
        why.clear();
        EXPECT_FALSE(parseSyntheticShape(bad, &why)) << bad;
        EXPECT_FALSE(why.empty()) << bad;
    }
}

TEST(SyntheticTelemetry, RoutesTopKPerLayerPerTokenAndCountsLikeTheEngine) {
    SyntheticOptions opt;
    opt.denseLayers = 3;
    SyntheticTelemetry gen(opt);
    const int L = opt.nLayers, E = opt.nExperts;
    const tiers::ExpertMap& map = gen.status().experts;
    ASSERT_EQ(map.nLayers, L);
    ASSERT_EQ(map.nExperts, E);
    ASSERT_EQ(map.state.size(), size_t(L * E));
    // Learned pins at the start, dense layers without experts.
    int pinned = 0;
    for (const uint8_t s : map.state)
        pinned += stateOf(s) == ExpertState::Pinned;
    EXPECT_EQ(pinned, opt.pinnedPerLayer * (L - opt.denseLayers));
    for (int l = 0; l < opt.denseLayers; ++l)
        for (int e = 0; e < E; ++e)
            EXPECT_EQ(map.state[size_t(l * E + e)], 0);

    uint64_t serial = gen.status().serial;
    for (int t = 0; t < 300; ++t) {
        const std::vector<uint32_t> before = map.hits;
        const TierStatus& s = gen.step();
        EXPECT_EQ(s.serial, ++serial);
        for (int l = 0; l < L; ++l) {
            int routed = 0;
            for (int e = 0; e < E; ++e) {
                const size_t c = size_t(l * E + e);
                ASSERT_GE(map.hits[c], before[c]);
                ASSERT_LE(map.hits[c] - before[c], 1u); // distinct experts per layer
                routed += int(map.hits[c] - before[c]);
            }
            EXPECT_EQ(routed, l < opt.denseLayers ? 0 : opt.topK) << "layer " << l;
        }
        EXPECT_EQ(s.last.routed, uint64_t(opt.topK * (L - opt.denseLayers)));
        EXPECT_EQ(s.last.routed, s.last.hitsPinned + s.last.hitsCache + s.last.misses);
        EXPECT_EQ(sum(map.hits), s.counters.routed);
        EXPECT_EQ(s.counters.tokens, uint64_t(t + 1));
        // Residency counts are the state bytes'; the cache stays within its capacity.
        int cached = 0, loading = 0, disk = 0;
        for (const uint8_t b : map.state) {
            cached += stateOf(b) == ExpertState::Cached;
            loading += stateOf(b) == ExpertState::Loading;
            disk += stateOf(b) == ExpertState::Disk;
        }
        EXPECT_EQ(s.residency.cachedExperts, cached);
        EXPECT_EQ(s.residency.loadingExperts, loading);
        EXPECT_EQ(s.residency.diskExperts, disk);
        EXPECT_LE(cached + loading, opt.cacheExperts);
    }
    const TierStatus& s = gen.status();
    // Plausible: every place serves some experts, and the pins and the cache serve most.
    EXPECT_GT(s.counters.hitsPinned, 0u);
    EXPECT_GT(s.counters.hitsCache, 0u);
    EXPECT_GT(s.counters.misses, 0u);
    EXPECT_GT(s.counters.evictions, 0u);
    EXPECT_GT(s.residency.loadingExperts, 0);
    EXPECT_GT(double(s.counters.hitsPinned + s.counters.hitsCache) / double(s.counters.routed),
              0.5);
    EXPECT_TRUE(s.streaming);
    EXPECT_EQ(s.expertReadBytes, opt.expertBytes);
}

// With a VRAM tier: experts enter VRAM as they are routed while ready in RAM, up to the
// capacity and never out again; VRAM hits count in routed, residency counts the state bytes,
// and a user pin on a VRAM expert only marks it.
TEST(SyntheticTelemetry, VramTierFillsAsRoutedAndCountsHits) {
    SyntheticOptions opt;
    opt.vramExperts = 300;
    SyntheticTelemetry gen(opt);
    const tiers::ExpertMap& map = gen.status().experts;
    EXPECT_EQ(gen.status().residency.vramCapacity, 300);
    EXPECT_EQ(gen.status().residency.vramBudgetBytes, 300 * opt.expertBytes);
    EXPECT_EQ(gen.status().residency.vramExperts, 0);
    int prevVram = 0;
    for (int t = 0; t < 200; ++t) {
        const std::vector<uint8_t> before = map.state;
        const TierStatus& s = gen.step();
        EXPECT_EQ(s.last.routed,
                  s.last.hitsPinned + s.last.hitsCache + s.last.misses + s.last.hitsVram);
        int vram = 0;
        for (size_t c = 0; c < map.state.size(); ++c) {
            vram += stateOf(map.state[c]) == ExpertState::Vram;
            if (stateOf(before[c]) == ExpertState::Vram) {
                ASSERT_EQ(stateOf(map.state[c]), ExpertState::Vram) << "no eviction from VRAM";
            }
        }
        EXPECT_EQ(s.residency.vramExperts, vram);
        EXPECT_EQ(s.residency.vramBytes, uint64_t(vram) * opt.expertBytes);
        EXPECT_LE(vram, opt.vramExperts);
        EXPECT_GE(vram, prevVram);
        prevVram = vram;
    }
    const TierStatus& s = gen.status();
    EXPECT_EQ(s.residency.vramExperts, opt.vramExperts); // full after 200 tokens
    EXPECT_GT(s.counters.hitsVram, 0u);
    EXPECT_EQ(s.counters.routed, s.counters.hitsPinned + s.counters.hitsCache + s.counters.misses +
                                     s.counters.hitsVram);

    size_t cell = 0;
    while (stateOf(map.state[cell]) != ExpertState::Vram)
        ++cell;
    const int layer = int(cell) / opt.nExperts, expert = int(cell) % opt.nExperts;
    ASSERT_TRUE(gen.toggleUserPin(layer, expert));
    EXPECT_EQ(map.state[cell], uint8_t(ExpertState::Vram) | tiers::kUserPinFlag);
    EXPECT_EQ(gen.status().residency.vramExperts, opt.vramExperts);
    ASSERT_TRUE(gen.toggleUserPin(layer, expert));
    EXPECT_EQ(map.state[cell], uint8_t(ExpertState::Vram));
}

TEST(SyntheticTelemetry, IsDeterministicPerSeed) {
    SyntheticTelemetry a, b;
    SyntheticOptions other;
    other.seed = 13;
    SyntheticTelemetry c(other);
    for (int t = 0; t < 100; ++t) {
        a.step();
        b.step();
        c.step();
    }
    EXPECT_EQ(a.status().experts.state, b.status().experts.state);
    EXPECT_EQ(a.status().experts.hits, b.status().experts.hits);
    EXPECT_EQ(a.status().counters.misses, b.status().counters.misses);
    EXPECT_NE(a.status().experts.hits, c.status().experts.hits);
}

TEST(SyntheticTelemetry, TurnsStartEveryTurnTokens) {
    SyntheticOptions opt;
    opt.turnTokens = 5;
    SyntheticTelemetry gen(opt);
    std::vector<int> starts;
    for (int t = 1; t <= 12; ++t) {
        gen.step();
        if (gen.turnStarted()) starts.push_back(t);
    }
    EXPECT_EQ(starts, (std::vector<int>{1, 6, 11}));
}

TEST(SyntheticTelemetry, UserPinsToggle) {
    SyntheticTelemetry gen;
    gen.step();
    const tiers::ExpertMap& map = gen.status().experts;
    // An expert on disk: pinned by the user, then unpinned (it stays cached).
    int cell = -1;
    for (size_t c = 0; c < map.state.size() && cell < 0; ++c)
        if (stateOf(map.state[c]) == ExpertState::Disk) cell = int(c);
    ASSERT_GE(cell, 0);
    const int layer = cell / map.nExperts, expert = cell % map.nExperts;
    const uint64_t serial = gen.status().serial;
    ASSERT_TRUE(gen.toggleUserPin(layer, expert));
    EXPECT_GT(gen.status().serial, serial); // a new snapshot
    EXPECT_TRUE(map.state[size_t(cell)] & tiers::kUserPinFlag);
    EXPECT_EQ(stateOf(map.state[size_t(cell)]), ExpertState::Pinned);
    for (int t = 0; t < 50; ++t) // never evicted
        gen.step();
    EXPECT_TRUE(map.state[size_t(cell)] & tiers::kUserPinFlag);
    ASSERT_TRUE(gen.toggleUserPin(layer, expert));
    EXPECT_FALSE(map.state[size_t(cell)] & tiers::kUserPinFlag);
    EXPECT_EQ(stateOf(map.state[size_t(cell)]), ExpertState::Cached);
    EXPECT_FALSE(gen.toggleUserPin(-1, 0));
    EXPECT_FALSE(gen.toggleUserPin(0, map.nExperts));
}

TEST(BrainCells, FirstSnapshotDrawsEverythingThenOnlyChangedCells) {
    SyntheticTelemetry gen;
    for (int t = 0; t < 40; ++t)
        gen.step();
    BrainCells cells;
    std::vector<int> changed;
    cells.ingest(gen.status().experts, 10.0);
    EXPECT_TRUE(cells.advance(10.0, &changed)); // full
    EXPECT_TRUE(changed.empty());
    EXPECT_EQ(cells.fadingCells(), 0); // nothing flashes on the first snapshot
    EXPECT_FALSE(cells.advance(10.5, &changed));
    EXPECT_TRUE(changed.empty());

    // One token: exactly the cells whose hits or state changed are redrawn (the heat scale's
    // ceiling stays, or the test steps again).
    tiers::ExpertMap before = gen.status().experts;
    int ceiling = cells.heatCeiling();
    gen.step();
    cells.ingest(gen.status().experts, 11.0);
    while (cells.heatCeiling() != ceiling) { // a doubling of the hottest cell: a full redraw
        EXPECT_TRUE(cells.advance(11.0, &changed));
        before = gen.status().experts;
        ceiling = cells.heatCeiling();
        gen.step();
        cells.ingest(gen.status().experts, 11.0);
    }
    const std::set<int> expect = differing(before, gen.status().experts);
    ASSERT_FALSE(cells.advance(11.0, &changed));
    EXPECT_EQ(std::set<int>(changed.begin(), changed.end()), expect);
    EXPECT_EQ(changed.size(), expect.size()); // each once
    EXPECT_LT(changed.size(), size_t(cells.cellCount() / 10));
    std::set<int> routed;
    for (const int c : expect)
        if (gen.status().experts.hits[size_t(c)] != before.hits[size_t(c)]) {
            routed.insert(c);
            EXPECT_EQ(cells.visual(c).flash, BrainCells::kFlashLevels);
        }
    EXPECT_EQ(routed.size(), size_t(8 * 75));
    EXPECT_EQ(cells.fadingCells(), int(routed.size()));

    // Half a second later only the fading cells change; after a second they are dark again and
    // nothing is redrawn any more.
    changed.clear();
    ASSERT_FALSE(cells.advance(11.5, &changed));
    EXPECT_EQ(std::set<int>(changed.begin(), changed.end()), routed);
    for (const int c : routed) {
        EXPECT_GT(cells.visual(c).flash, 0);
        EXPECT_LT(cells.visual(c).flash, BrainCells::kFlashLevels);
    }
    changed.clear();
    ASSERT_FALSE(cells.advance(12.01, &changed));
    EXPECT_EQ(std::set<int>(changed.begin(), changed.end()), routed);
    EXPECT_EQ(cells.fadingCells(), 0);
    changed.clear();
    ASSERT_FALSE(cells.advance(13.0, &changed));
    EXPECT_TRUE(changed.empty());
}

TEST(BrainCells, HeatIsLogScaledWithACeilingThatMovesOnlyWhenTheMaximumDoubles) {
    EXPECT_EQ(BrainCells::heatLevel(0), 0);
    EXPECT_EQ(BrainCells::heatLevel(1), 8);
    EXPECT_EQ(BrainCells::heatLevel(3), 16);
    EXPECT_EQ(BrainCells::heatLevel(7), 24);
    EXPECT_EQ(BrainCells::heatLevel(0xffffffffu), 255);
    tiers::ExpertMap m;
    m.nLayers = 1;
    m.nExperts = 4;
    m.state.assign(4, uint8_t(ExpertState::Cached));
    m.hits = {0, 1, 2, 3};
    BrainCells cells;
    std::vector<int> changed;
    cells.ingest(m, 0);
    EXPECT_TRUE(cells.advance(0, &changed));
    EXPECT_EQ(cells.heatCeiling(), 16);
    EXPECT_DOUBLE_EQ(cells.heat(cells.visual(3)), 1.0);
    EXPECT_DOUBLE_EQ(cells.heat(cells.visual(0)), 0.0);
    m.hits = {0, 1, 2, 4}; // level 18: the ceiling moves to 24, every cell's brightness with it
    cells.ingest(m, 5);
    EXPECT_TRUE(cells.advance(5, &changed));
    EXPECT_EQ(cells.heatCeiling(), 24);
    m.hits = {0, 1, 2, 5}; // level 20: same ceiling, one cell
    cells.ingest(m, 10);
    changed.clear();
    EXPECT_FALSE(cells.advance(10, &changed));
    EXPECT_EQ(changed, (std::vector<int>{3}));
}

TEST(BrainCells, ModesTurnsAndReloads) {
    tiers::ExpertMap m;
    m.nLayers = 2;
    m.nExperts = 3;
    m.state.assign(6, uint8_t(ExpertState::Disk));
    m.hits = {5, 0, 9, 1, 1, 0};
    BrainCells cells;
    std::vector<int> changed;
    cells.ingest(m, 0);
    cells.advance(0, &changed);
    EXPECT_EQ(cells.mode(), BrainCells::Mode::Cumulative);
    EXPECT_EQ(cells.modeHits(2), 9u);
    cells.startTurn(); // cumulative mode: nothing to redraw
    EXPECT_FALSE(cells.advance(0, &changed));
    cells.setMode(BrainCells::Mode::Turn);
    EXPECT_TRUE(cells.advance(0, &changed));
    for (int c = 0; c < 6; ++c)
        EXPECT_EQ(cells.visual(c).heat, 0) << c;
    m.hits = {6, 0, 9, 1, 1, 2};
    cells.ingest(m, 1);
    changed.clear();
    EXPECT_FALSE(cells.advance(1, &changed));
    EXPECT_EQ(std::set<int>(changed.begin(), changed.end()), (std::set<int>{0, 5}));
    EXPECT_EQ(cells.turnHits(5), 2u);
    EXPECT_EQ(cells.totalHits(0), 6u);
    cells.startTurn(); // turn mode: every cell's heat is 0 again
    EXPECT_TRUE(cells.advance(1, &changed));
    EXPECT_EQ(cells.turnHits(0), 0u);
    // Fewer hits than before: the model was reloaded; nothing flashes.
    m.hits = {1, 0, 0, 0, 0, 0};
    cells.ingest(m, 2);
    EXPECT_TRUE(cells.advance(2, &changed));
    EXPECT_EQ(cells.fadingCells(), 0);
    // Another shape, and an empty map (no per-expert telemetry).
    tiers::ExpertMap empty;
    cells.ingest(empty, 3);
    EXPECT_TRUE(cells.advance(3, &changed));
    EXPECT_EQ(cells.cellCount(), 0);
}
