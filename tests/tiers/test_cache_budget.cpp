// The expert cache's budget and slot-table races, reproduced deterministically (no timing luck):
//  - a pin change that unpins a slot held over a lowered budget must give the slot back before it
//    returns (setPins and rebalancePins), not when some later read happens to trim;
//  - reads are submitted without the cache's lock while another thread grows the slot table: the
//    submitting thread must not read the table then. The interleaving is forced with a source
//    that parks inside load(); the threads hand over through relaxed atomics, which give
//    ThreadSanitizer no happens-before edge, so an unlocked read of the table by the parked
//    thread is reported as a race on every run of the tsan build.
#include "cache_test_util.h"

#include <atomic>
#include <thread>

using namespace coli;
using cache_test::CacheFixture;

namespace {

// Sets up the over-budget state of the issue: expert `pinned` of the first MoE layer is pinned
// and ready; the second MoE layer is open and wants all of its experts (every one read and ready,
// none handed out yet); then the budget drops to the working set + 2 slots, so the slots in use
// stay allocated over it and the pin (pin capacity 1) is kept.
struct OverBudget {
    const CacheFixture& fx = CacheFixture::get("qwen3moe");
    std::unique_ptr<tiers::ExpertCache> cache;
    int l0 = 0, l1 = 0, experts = 0;
    std::vector<int> all;

    void open(const std::vector<int>& counts = {}) {
        ASSERT_TRUE(fx.error.empty()) << fx.error;
        tiers::CacheOptions co;
        co.pinShare = 0.5;
        auto made = cache_test::makeCache(fx, aio::IoBackend::PreadThreads, 2, false, co);
        ASSERT_TRUE(made.isOk()) << made.status().toString();
        cache = std::move(*made);
        l0 = fx.sparseLayers[0];
        l1 = fx.sparseLayers[1];
        experts = fx.cfg.nExperts;
        const uint64_t slot = cache->slotBytes();
        ASSERT_TRUE(cache->setBudget(cache->minimumBudget() + uint64_t(2 * experts) * slot).isOk());
        cache->setPins({{l0, 3}});
        cache->waitIdle();
        ASSERT_EQ(cache->pins().size(), 1u);
        for (int e = 0; e < experts; ++e)
            all.push_back(e);
        ASSERT_TRUE(cache->beginLayer(l1, all, counts).isOk());
        cache->waitIdle();
        ASSERT_TRUE(cache->setBudget(cache->minimumBudget() + 2 * slot).isOk());
        ASSERT_EQ(cache->pinCapacity(), 1);
        ASSERT_EQ(cache->pins().size(), 1u) << "the pin must survive the lower budget";
        const tiers::TierResidency r = cache->telemetry().residency;
        ASSERT_GT(r.allocatedBytes, r.budgetBytes) << "the scenario needs slots held over budget";
        ASSERT_TRUE(cache->checkConsistency().isOk()) << cache_test::state(*cache);
    }
    void drain() {
        for (;;) {
            SwiGluView v;
            Result<int> pos = cache->next(&v);
            ASSERT_TRUE(pos.isOk()) << pos.status().toString();
            if (*pos < 0) break;
            ASSERT_EQ(fx.checkView({l1, all[size_t(*pos)]}, v), "");
            cache->finished(*pos);
        }
        cache->waitIdle();
        ASSERT_TRUE(cache->checkConsistency().isOk()) << cache_test::state(*cache);
        const tiers::TierResidency r = cache->telemetry().residency;
        EXPECT_LE(r.allocatedBytes, r.budgetBytes);
    }
};

// setPins moves the pin to an expert already resident (wanted by the open layer): no read takes
// the old pin's slot, so only a trim gives it back.
TEST(CacheBudget, SetPinsRestoresTheBudgetAtOnce) {
    OverBudget s;
    s.open();
    if (HasFatalFailure()) return;
    s.cache->setPins({{s.l1, 5}});
    ASSERT_EQ(s.cache->pins().size(), 1u);
    EXPECT_TRUE(s.cache->checkConsistency().isOk()) << cache_test::state(*s.cache);
    s.drain();
}

// rebalancePins swaps the cold pin for the hottest expert (routed by the open layer, resident).
TEST(CacheBudget, RebalancePinsRestoresTheBudgetAtOnce) {
    OverBudget s;
    std::vector<int> counts(16, 1);
    counts[7] = 50; // expert 7 of the open layer is by far the hottest
    s.open(counts);
    if (HasFatalFailure()) return;
    ASSERT_EQ(s.cache->rebalancePins(), 1);
    const std::vector<tiers::ExpertId> pins = s.cache->pins();
    ASSERT_EQ(pins.size(), 1u);
    EXPECT_EQ(pins[0], (tiers::ExpertId{s.l1, 7}));
    EXPECT_TRUE(s.cache->checkConsistency().isOk()) << cache_test::state(*s.cache);
    s.drain();
}

// Every operation that frees room returns within the budget once nothing is busy: the layer's
// experts finished one by one, each finished() trims.
TEST(CacheBudget, FinishingTheLayerReturnsToTheBudget) {
    OverBudget s;
    s.open();
    if (HasFatalFailure()) return;
    s.drain();
}

// An ExpertSource that parks the first load() of the armed thread until released; everything else
// is forwarded. The hand-over uses relaxed atomics only (see the file comment).
class ParkingSource : public tiers::ExpertSource {
public:
    explicit ParkingSource(std::unique_ptr<tiers::ExpertSource> inner) : inner_(std::move(inner)) {}
    void arm() { armed_.store(true, std::memory_order_relaxed); }
    bool parked() const { return parked_.load(std::memory_order_relaxed); }
    void release() { released_.store(true, std::memory_order_relaxed); }
    int loads() const { return loads_.load(std::memory_order_relaxed); }

    uint64_t slotBytes() const override { return inner_->slotBytes(); }
    uint64_t readBytes() const override { return inner_->readBytes(); }
    int readsPerExpert() const override { return inner_->readsPerExpert(); }
    void load(tiers::ExpertId id, uint8_t* slot, LoadDone done) override {
        loads_.fetch_add(1, std::memory_order_relaxed);
        bool expected = true;
        if (armed_.compare_exchange_strong(expected, false, std::memory_order_relaxed)) {
            parked_.store(true, std::memory_order_relaxed);
            while (!released_.load(std::memory_order_relaxed))
                std::this_thread::yield();
        }
        inner_->load(id, slot, std::move(done));
    }
    SwiGluView view(tiers::ExpertId id, const uint8_t* slot) const override {
        return inner_->view(id, slot);
    }
    std::string describe() const override { return inner_->describe(); }

private:
    std::unique_ptr<tiers::ExpertSource> inner_;
    std::atomic<bool> armed_{false}, parked_{false}, released_{false};
    std::atomic<int> loads_{0};
};

// Thread A submits the reads of a pin change (several loads); its first load() parks. Thread B
// (this one) then grows the budget and prefetches whole layers, allocating new slots, and releases
// A, which submits the rest. Every read must land in its own slot: the views' bytes are checked.
TEST(CacheRace, SubmitWhileAnotherThreadGrowsTheSlotTable) {
    const CacheFixture& fx = CacheFixture::get("qwen3moe");
    ASSERT_TRUE(fx.error.empty()) << fx.error;
    aio::IoOptions io;
    io.backend = aio::IoBackend::PreadThreads;
    io.queueDepth = 2;
    auto pool = aio::IoPool::create(io);
    ASSERT_TRUE(pool.isOk()) << pool.status().toString();
    auto inner = tiers::openContainerSource(fx.container, fx.cfg, **pool);
    ASSERT_TRUE(inner.isOk()) << inner.status().toString();
    auto parkingOwned = std::make_unique<ParkingSource>(std::move(*inner));
    ParkingSource& parking = *parkingOwned;
    tiers::CacheOptions co;
    co.pinShare = 1.0;
    auto made = tiers::ExpertCache::create(std::move(*pool), std::move(parkingOwned), fx.cfg, co);
    ASSERT_TRUE(made.isOk()) << made.status().toString();
    tiers::ExpertCache& cache = **made;
    const uint64_t slot = cache.slotBytes();
    const int E = fx.cfg.nExperts;
    const int l0 = fx.sparseLayers[0];
    ASSERT_TRUE(cache.setBudget(cache.minimumBudget() + 8 * slot).isOk());

    std::vector<tiers::ExpertId> pins;
    for (int e = 0; e < 8; ++e)
        pins.push_back({l0, e});
    parking.arm();
    std::thread a([&] { cache.setPins(pins); });
    while (!parking.parked())
        std::this_thread::yield();
    // A is inside submit(), between two loads. Grow the table by far more than its first size.
    ASSERT_TRUE(cache.setBudget(0 + cache.minimumBudget() + uint64_t(4 * E) * slot).isOk());
    for (size_t i = 1; i < fx.sparseLayers.size(); ++i) {
        std::vector<int> layer;
        for (int e = 0; e < E; ++e)
            layer.push_back(e);
        cache.prefetch(fx.sparseLayers[i], layer);
    }
    parking.release();
    a.join();
    cache.waitIdle();
    ASSERT_TRUE(cache.checkConsistency().isOk()) << cache_test::state(cache);
    EXPECT_GE(parking.loads(), 8 + E);
    // Every pinned expert was read into its own slot: open its layer and check each view.
    std::vector<int> want;
    for (int e = 0; e < 8; ++e)
        want.push_back(e);
    ASSERT_TRUE(cache.beginLayer(l0, want).isOk());
    int checked = 0;
    for (;;) {
        SwiGluView v;
        Result<int> pos = cache.next(&v);
        ASSERT_TRUE(pos.isOk()) << pos.status().toString();
        if (*pos < 0) break;
        ASSERT_EQ(fx.checkView({l0, want[size_t(*pos)]}, v), "");
        cache.finished(*pos);
        ++checked;
    }
    EXPECT_EQ(checked, 8);
    EXPECT_EQ(cache.telemetry().counters.hitsPinned, 8u) << "the pins' reads were all used";
}

} // namespace

// A VRAM tier on a device sharing the system's memory: its bytes count in the RAM budget, so the
// RAM slots get the rest (at least the working set), budget() reports the whole and setting it
// back changes nothing; a device with memory of its own takes nothing.
TEST(CacheBudget, SharedVramCountsInTheRamBudget) {
    const CacheFixture& fx = CacheFixture::get("qwen3moe");
    ASSERT_TRUE(fx.error.empty()) << fx.error;
    auto made = cache_test::makeCache(fx, aio::IoBackend::PreadThreads, 2, false);
    ASSERT_TRUE(made.isOk()) << made.status().toString();
    tiers::ExpertCache& c = **made;
    const uint64_t slot = c.slotBytes();
    const uint64_t want = c.minimumBudget() + 10 * slot;
    ASSERT_TRUE(c.setBudget(want).isOk());
    EXPECT_EQ(c.telemetry().residency.budgetBytes, want);
    c.setVramCapacity(4, slot, 0);
    EXPECT_EQ(c.vramTierRamBytes(), 0u);
    EXPECT_EQ(c.budget(), want);
    c.setVramCapacity(4, slot, 4 * slot); // re-applies the budget given
    EXPECT_EQ(c.vramTierRamBytes(), 4 * slot);
    EXPECT_EQ(c.telemetry().residency.budgetBytes, want - 4 * slot);
    EXPECT_EQ(c.budget(), want);
    ASSERT_TRUE(c.setBudget(c.budget()).isOk());
    EXPECT_EQ(c.budget(), want) << "setBudget(budget()) is stable";
    ASSERT_TRUE(c.setBudget(c.minimumBudget() + slot).isOk());
    EXPECT_EQ(c.telemetry().residency.budgetBytes, c.minimumBudget()) << "never below the minimum";
    EXPECT_TRUE(c.checkConsistency().isOk()) << cache_test::state(c);
}
