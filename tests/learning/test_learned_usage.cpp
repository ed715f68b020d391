// learning/learned_usage.h: the usage-learning glue split by thread. Values taken on an "engine"
// thread are saved by one "storage" thread's connection and read back by another thread's own
// connection; a locked or refusing database comes back as a Status, never as an exception.
#include "learning/learned_usage.h"

#include "cache_test_util.h"
#include "storage/model_identity.h"
#include "storage/user_pins.h"
#include "storage_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <thread>

using namespace coli;
using storage_test::RawDb;
using storage_test::TempDir;

namespace {

const char* const kIdentity = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

// Runs fn on a thread of its own and waits: each Storage lives and dies on its thread.
void onThread(const std::function<void()>& fn) {
    std::thread t(fn);
    t.join();
}

// A cache over the qwen3moe fixture's container with room for `extraSlots` slots beyond the
// working set (the hot-store may take pinShare of them).
std::unique_ptr<tiers::ExpertCache> makeCache(int extraSlots) {
    const auto& fx = cache_test::CacheFixture::get("qwen3moe");
    EXPECT_TRUE(fx.error.empty()) << fx.error;
    auto cache = cache_test::makeCache(fx, aio::IoBackend::PreadThreads, 2, false);
    EXPECT_TRUE(cache.isOk()) << cache.status().toString();
    if (!cache) return nullptr;
    tiers::ExpertCache& c = **cache;
    EXPECT_TRUE(c.setBudget(c.minimumBudget() + uint64_t(extraSlots) * c.slotBytes()).isOk());
    return std::move(cache.value());
}

std::vector<std::pair<int, int>> sorted(const std::vector<tiers::ExpertId>& ids) {
    std::vector<std::pair<int, int>> out;
    for (const tiers::ExpertId& id : ids)
        out.emplace_back(id.layer, id.expert);
    std::sort(out.begin(), out.end());
    return out;
}

// Distinct heats on a few experts of every sparse layer, as of token 1000.
void learnSomething(tiers::ExpertCache& cache) {
    const auto& fx = cache_test::CacheFixture::get("qwen3moe");
    cache.setTokenClock(1000);
    double h = 1;
    for (int layer : fx.sparseLayers)
        for (int e = 0; e < 5; ++e)
            cache.setHeat({layer, e}, h++ * 1.5, 1000);
}

} // namespace

TEST(LearnedUsage, SnapshotSavedOnOneThreadLoadsTheSameOnAnother) {
    TempDir dir;
    const std::string path = dir.file("colibri.db");
    auto engineA = makeCache(16);
    ASSERT_NE(engineA, nullptr);
    const int capacity = engineA->pinCapacity();
    ASSERT_GT(capacity, 0);
    learnSomething(*engineA);
    // Engine thread: the turn-end values.
    const learning::UsageSnapshot snap = learning::endTurnSnapshot(*engineA);
    // Free hot-store places filled with the hottest, at most maxPinSwaps changes per turn.
    ASSERT_EQ(int(snap.pins.size()), std::min(capacity, tiers::CacheOptions{}.maxPinSwaps));
    EXPECT_EQ(snap.tokenClock, 1000);
    EXPECT_EQ(snap.heat.size(), 5 * cache_test::CacheFixture::get("qwen3moe").sparseLayers.size());

    // Storage thread 1: find (create) the model, save the snapshot: one transaction each.
    int64_t model = 0;
    onThread([&] {
        auto db = storage::Storage::open(path);
        ASSERT_TRUE(db.isOk()) << db.status().toString();
        auto usage = learning::loadLearnedUsage(**db, kIdentity, "/models/m", capacity);
        ASSERT_TRUE(usage.isOk()) << usage.status().toString();
        EXPECT_TRUE(usage->heat.empty());
        EXPECT_TRUE(usage->pins.empty());
        EXPECT_EQ(usage->tokenClock, 0);
        model = usage->modelId;
        const uint64_t commits = (*db)->commits();
        EXPECT_TRUE(learning::saveUsage(**db, model, snap).isOk());
        EXPECT_EQ((*db)->commits(), commits + 2);
    });

    // Storage thread 2, its own connection: the same model, clock, heat and pins (the saved
    // pins, and the hottest experts as many as were pinned: the same experts).
    learning::LearnedUsage loaded;
    onThread([&] {
        auto db = storage::Storage::open(path);
        ASSERT_TRUE(db.isOk()) << db.status().toString();
        auto usage =
            learning::loadLearnedUsage(**db, kIdentity, "/models/m", int(snap.pins.size()));
        ASSERT_TRUE(usage.isOk()) << usage.status().toString();
        loaded = std::move(usage.value());
        auto pins = (*db)->getPins(model);
        ASSERT_TRUE(pins.isOk());
        std::vector<tiers::ExpertId> stored;
        for (const storage::Pin& p : *pins) {
            EXPECT_EQ(p.tier, storage::PinTier::Ram);
            stored.push_back({p.layer, p.expert});
        }
        EXPECT_EQ(sorted(stored), sorted(snap.pins));
    });
    EXPECT_EQ(loaded.modelId, model);
    EXPECT_EQ(loaded.tokenClock, snap.tokenClock);
    EXPECT_EQ(sorted(loaded.pins), sorted(snap.pins));
    ASSERT_EQ(loaded.heat.size(), snap.heat.size());
    for (size_t i = 0; i < snap.heat.size(); ++i) {
        EXPECT_EQ(loaded.heat[i].layer, snap.heat[i].layer);
        EXPECT_EQ(loaded.heat[i].expert, snap.heat[i].expert);
        EXPECT_EQ(loaded.heat[i].heat, snap.heat[i].heat);
        EXPECT_EQ(loaded.heat[i].lastSeen, snap.tokenClock);
    }

    // Back on the engine thread, a fresh cache continues where the first one was.
    auto engineB = makeCache(16);
    ASSERT_NE(engineB, nullptr);
    learning::applyLearnedUsage(*engineB, loaded);
    EXPECT_EQ(engineB->tokenClock(), engineA->tokenClock());
    EXPECT_EQ(sorted(engineB->pins()), sorted(engineA->pins()));
    EXPECT_EQ(engineB->heatSnapshot(), engineA->heatSnapshot());
}

// The hottest experts within the pin capacity given (none for 0 or less), hottest first.
TEST(LearnedUsage, PinsFollowTheCapacityGiven) {
    TempDir dir;
    const std::string path = dir.file("colibri.db");
    auto cache = makeCache(16);
    ASSERT_NE(cache, nullptr);
    learnSomething(*cache);
    auto db = storage::Storage::open(path);
    ASSERT_TRUE(db.isOk()) << db.status().toString();
    auto first = learning::loadLearnedUsage(**db, kIdentity, "/m", 0);
    ASSERT_TRUE(first.isOk()) << first.status().toString();
    ASSERT_TRUE(
        learning::saveUsage(**db, first->modelId, learning::endTurnSnapshot(*cache)).isOk());
    for (int capacity : {-3, 0, 1, 3}) {
        auto u = learning::loadLearnedUsage(**db, kIdentity, "/m", capacity);
        ASSERT_TRUE(u.isOk()) << u.status().toString();
        EXPECT_EQ(int(u->pins.size()), std::max(0, capacity));
    }
    auto three = learning::loadLearnedUsage(**db, kIdentity, "/m", 3);
    ASSERT_TRUE(three.isOk());
    // learnSomething gives the last sparse layer's expert 4 the most heat, then expert 3, ...
    const int last = cache_test::CacheFixture::get("qwen3moe").sparseLayers.back();
    EXPECT_EQ(sorted(three->pins), sorted({{last, 2}, {last, 3}, {last, 4}}));
    EXPECT_EQ(three->pins.front(), (tiers::ExpertId{last, 4}));
}

// A database another program holds locked: every function returns Io naming the lock, none
// throws; the pins are not written when the heat could not be; after the lock, saving works.
TEST(LearnedUsage, LockedDatabaseReturnsAStatus) {
    TempDir dir;
    const std::string path = dir.file("colibri.db");
    auto cache = makeCache(16);
    ASSERT_NE(cache, nullptr);
    learnSomething(*cache);
    const learning::UsageSnapshot snap = learning::endTurnSnapshot(*cache);
    storage::OpenOptions o;
    o.busyTimeoutMs = 50;
    auto db = storage::Storage::open(path, o);
    ASSERT_TRUE(db.isOk()) << db.status().toString();
    auto usage = learning::loadLearnedUsage(**db, kIdentity, "/m", 4);
    ASSERT_TRUE(usage.isOk()) << usage.status().toString();
    {
        RawDb other(path);
        ASSERT_EQ(other.exec("BEGIN EXCLUSIVE; DELETE FROM file_hashes;"), SQLITE_OK);
        Status saved;
        EXPECT_NO_THROW(saved = learning::saveUsage(**db, usage->modelId, snap));
        EXPECT_EQ(saved.code(), ErrorCode::Io);
        EXPECT_NE(saved.message().find("locked"), std::string::npos) << saved.message();
        Result<learning::LearnedUsage> again = Status(ErrorCode::Internal, "not called");
        EXPECT_NO_THROW(again = learning::loadLearnedUsage(**db, kIdentity, "/m", 4));
        ASSERT_FALSE(again.isOk()); // recording last_used is a write
        EXPECT_EQ(again.status().code(), ErrorCode::Io);
        EXPECT_EQ(other.exec("COMMIT"), SQLITE_OK);
    }
    EXPECT_TRUE((*db)->getPins(usage->modelId)->empty()); // nothing half-written
    EXPECT_TRUE(learning::saveUsage(**db, usage->modelId, snap).isOk());
    EXPECT_EQ((*db)->getPins(usage->modelId)->size(), snap.pins.size());
}

// Refused values: the heat fails, so the pins are not replaced; an unknown model is NotFound.
TEST(LearnedUsage, RefusedHeatLeavesThePinsAsTheyWere) {
    TempDir dir;
    auto db = storage::Storage::open(dir.file("colibri.db"));
    ASSERT_TRUE(db.isOk()) << db.status().toString();
    auto usage = learning::loadLearnedUsage(**db, kIdentity, "/m", 4);
    ASSERT_TRUE(usage.isOk()) << usage.status().toString();
    learning::UsageSnapshot good;
    good.tokenClock = 10;
    good.heat = {{1, 2, 3.0}};
    good.pins = {{1, 2}};
    ASSERT_TRUE(learning::saveUsage(**db, usage->modelId, good).isOk());
    learning::UsageSnapshot bad = good;
    bad.heat = {{1, 3, -1.0}};
    bad.pins = {{1, 3}};
    const Status st = learning::saveUsage(**db, usage->modelId, bad);
    EXPECT_EQ(st.code(), ErrorCode::InvalidArgument) << st.toString();
    auto pins = (*db)->getPins(usage->modelId);
    ASSERT_TRUE(pins.isOk());
    ASSERT_EQ(pins->size(), 1u);
    EXPECT_EQ((*pins)[0].expert, 2);
    EXPECT_EQ(learning::saveUsage(**db, usage->modelId + 99, good).code(), ErrorCode::NotFound);
    // An empty identity is refused by the database, as a status.
    EXPECT_EQ(learning::loadLearnedUsage(**db, "", "/m", 4).status().code(),
              ErrorCode::InvalidArgument);
}

// From a model folder: the identity is the folder's (storage::modelIdentity); a folder that is
// no model is an error naming it.
TEST(LearnedUsage, LoadForAModelFolder) {
    TempDir dir;
    auto db = storage::Storage::open(dir.file("colibri.db"));
    ASSERT_TRUE(db.isOk()) << db.status().toString();
    const auto& fx = cache_test::CacheFixture::get("qwen3moe");
    ASSERT_TRUE(fx.error.empty()) << fx.error;
    auto usage = learning::loadLearnedUsageFor(**db, fx.dir, 4);
    ASSERT_TRUE(usage.isOk()) << usage.status().toString();
    auto identity = storage::modelIdentity(fx.dir, db->get());
    ASSERT_TRUE(identity.isOk()) << identity.status().toString();
    auto found = (*db)->findModel(*identity);
    ASSERT_TRUE(found.isOk());
    ASSERT_TRUE(found->has_value());
    EXPECT_EQ(**found, usage->modelId);
    // The checkpoint the container was converted from is the same model.
    auto checkpoint = learning::loadLearnedUsageFor(**db, cache_test::fixture("qwen3moe"), 4);
    ASSERT_TRUE(checkpoint.isOk()) << checkpoint.status().toString();
    EXPECT_EQ(checkpoint->modelId, usage->modelId);

    const std::string missing = dir.file("no-such-model");
    auto none = learning::loadLearnedUsageFor(**db, missing, 4);
    ASSERT_FALSE(none.isOk());
    EXPECT_NE(none.status().message().find(missing), std::string::npos) << none.status().message();
}

// At load the user's pins come first, exclusions stay out of learned pins, and learned pins fill
// the places left; the next run's candidates cover the skipped ones. At a turn end user pins stay.
TEST(LearnedUsage, UserPinsFirstThenLearnedPinsWithoutExclusions) {
    TempDir dir;
    const std::string path = dir.file("colibri.db");
    auto cache = makeCache(8); // pinShare 0.5: 4 places
    ASSERT_NE(cache, nullptr);
    ASSERT_EQ(cache->pinCapacity(), 4);
    learnSomething(*cache);
    const int first = cache_test::CacheFixture::get("qwen3moe").sparseLayers.front();
    const int last = cache_test::CacheFixture::get("qwen3moe").sparseLayers.back();
    auto db = storage::Storage::open(path);
    ASSERT_TRUE(db.isOk()) << db.status().toString();
    auto u0 = learning::loadLearnedUsage(**db, kIdentity, "/m", 4);
    ASSERT_TRUE(u0.isOk()) << u0.status().toString();
    ASSERT_TRUE(learning::saveUsage(**db, u0->modelId, learning::endTurnSnapshot(*cache)).isOk());
    storage::UserPinStore store(**db);
    ASSERT_TRUE(store.pin(u0->modelId, first, 9, 1000).isOk()); // cold: never a learned pin
    ASSERT_TRUE(store.exclude(u0->modelId, last, 4).isOk());    // the hottest
    ASSERT_TRUE(store.pin(u0->modelId, last, 3, 2000).isOk());  // the second hottest

    auto u = learning::loadLearnedUsage(**db, kIdentity, "/m", 4);
    ASSERT_TRUE(u.isOk()) << u.status().toString();
    EXPECT_EQ(u->userPins, (std::vector<tiers::ExpertId>{{first, 9}, {last, 3}}));
    EXPECT_EQ(u->exclusions, (std::vector<tiers::ExpertId>{{last, 4}}));
    EXPECT_EQ(u->pins.size(), 4u + 3u);
    auto fresh = makeCache(8);
    ASSERT_NE(fresh, nullptr);
    EXPECT_EQ(learning::applyLearnedUsage(*fresh, *u), 2);
    EXPECT_EQ(sorted(fresh->userPins()), sorted({{first, 9}, {last, 3}}));
    // The two places left: the hottest neither excluded nor user-pinned.
    EXPECT_EQ(sorted(fresh->pins()), sorted({{first, 9}, {last, 1}, {last, 2}, {last, 3}}));
    const learning::UsageSnapshot s = learning::endTurnSnapshot(*fresh);
    EXPECT_EQ(sorted(s.pins), sorted({{first, 9}, {last, 1}, {last, 2}, {last, 3}}));
    EXPECT_EQ(sorted(fresh->userPins()), sorted({{first, 9}, {last, 3}}));
    // A smaller hot-store: the oldest user pins that fit.
    auto small = makeCache(2);
    ASSERT_NE(small, nullptr);
    ASSERT_EQ(small->pinCapacity(), 1);
    EXPECT_EQ(learning::applyLearnedUsage(*small, *u), 1);
    EXPECT_EQ(sorted(small->pins()), sorted({{first, 9}}));
}

// The VRAM tier's pins: the candidates leave out exclusions and user pins; the experts pinned in
// VRAM take no learned RAM pin; saved with tier 'vram', an expert in both lists stored once.
TEST(LearnedUsage, VramPinsAreStoredWithTheirTierAndTakeNoRamPin) {
    TempDir dir;
    const std::string path = dir.file("colibri.db");
    auto cache = makeCache(8); // 4 places
    ASSERT_NE(cache, nullptr);
    learnSomething(*cache);
    const int last = cache_test::CacheFixture::get("qwen3moe").sparseLayers.back();
    auto db = storage::Storage::open(path);
    ASSERT_TRUE(db.isOk()) << db.status().toString();
    auto u0 = learning::loadLearnedUsage(**db, kIdentity, "/m", 8);
    ASSERT_TRUE(u0.isOk()) << u0.status().toString();
    ASSERT_TRUE(learning::saveUsage(**db, u0->modelId, learning::endTurnSnapshot(*cache)).isOk());
    storage::UserPinStore store(**db);
    ASSERT_TRUE(store.exclude(u0->modelId, last, 4).isOk());   // the hottest
    ASSERT_TRUE(store.pin(u0->modelId, last, 3, 2000).isOk()); // the second hottest
    auto u = learning::loadLearnedUsage(**db, kIdentity, "/m", 8);
    ASSERT_TRUE(u.isOk()) << u.status().toString();

    const std::vector<tiers::ExpertId> candidates = learning::vramPinCandidates(*u);
    ASSERT_GE(candidates.size(), 2u);
    EXPECT_EQ(candidates[0], (tiers::ExpertId{last, 2})) << "hottest neither excluded nor pinned";
    EXPECT_EQ(candidates[1], (tiers::ExpertId{last, 1}));
    for (const tiers::ExpertId& id : candidates) {
        EXPECT_NE(id, (tiers::ExpertId{last, 4}));
        EXPECT_NE(id, (tiers::ExpertId{last, 3}));
    }
    // Say the VRAM tier took the two hottest candidates.
    const std::vector<tiers::ExpertId> vram(candidates.begin(), candidates.begin() + 2);
    auto fresh = makeCache(8);
    ASSERT_NE(fresh, nullptr);
    learning::applyLearnedUsage(*fresh, *u, vram);
    for (const tiers::ExpertId& id : fresh->pins())
        for (const tiers::ExpertId& v : vram)
            EXPECT_NE(id, v) << "a VRAM pin took a RAM pin too";
    EXPECT_EQ(fresh->pins().size(), 4u) << "the next hottest fill the hot-store";
    // Once copied (streamed experts: when first routed), the cache shows them in VRAM, and
    // rebalancing at a turn end never gives them a RAM pin either.
    for (const tiers::ExpertId& v : vram)
        fresh->markVram(v);

    learning::UsageSnapshot s = learning::endTurnSnapshot(*fresh, vram);
    EXPECT_EQ(s.vramPins, vram);
    for (const tiers::ExpertId& id : s.pins)
        EXPECT_NE(id, vram[0]);
    s.pins.push_back(vram[0]); // in both lists: stored once, as a VRAM pin
    ASSERT_TRUE(learning::saveUsage(**db, u->modelId, s).isOk());
    auto pins = (*db)->getPins(u->modelId);
    ASSERT_TRUE(pins.isOk()) << pins.status().toString();
    std::vector<tiers::ExpertId> storedVram, storedRam;
    for (const storage::Pin& p : *pins)
        (p.tier == storage::PinTier::Vram ? storedVram : storedRam).push_back({p.layer, p.expert});
    EXPECT_EQ(sorted(storedVram), sorted(vram));
    EXPECT_EQ(storedRam.size(), 4u);
    for (const tiers::ExpertId& id : storedRam)
        EXPECT_NE(id, vram[0]);
}
