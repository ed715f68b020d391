// The expert cache under stress, driven directly (no forward pass): thousands of random layer
// batches over a real container (qwen3moe: 4 MoE layers x 16 experts, int4 blobs) on both I/O
// backends with queue depth >= 2, with prefetches of the next layer while a layer is open, budget
// changes (grow, shrink, down to the minimum) and pin changes at random points (prefetches and
// pins of the open layer's own experts included), and an observer thread reading telemetry, heat
// and consistency and changing the budget, pins, user pins and exclusions meanwhile (the GUI's
// role). The per-expert map must match the slot table at every check (checkConsistency) and its
// hits must add up to the routed count in every snapshot. Every handed-out
// view must be the expert's stored blob, byte for byte (read independently of the cache), also
// after budget shrinks and prefetches while it is held; the slot table must stay consistent after
// every batch; the counters must add up at the end. Also built and run under ThreadSanitizer (label
// tsan).
#include "cache_test_util.h"

#include <atomic>
#include <cstdlib>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <thread>

using namespace coli;
using cache_test::CacheFixture;

namespace {

struct StressParam {
    const char* name;
    aio::IoBackend backend;
    int depth;
    bool direct;
};

std::ostream& operator<<(std::ostream& os, const StressParam& p) {
    return os << p.name;
}

#if defined(__SANITIZE_THREAD__)
constexpr int kBatches = 1500; // TSan is ~10x slower; still thousands of views checked
#else
constexpr int kBatches = 2500;
#endif

// COLI_STRESS_SEED (default 0) shifts every random sequence of this file: the soak label's seed
// sweep (tests/tiers/CMakeLists.txt) runs it over many seeds; a failure names its seed.
unsigned seedOffset() {
    const char* s = std::getenv("COLI_STRESS_SEED");
    return s ? unsigned(std::strtoul(s, nullptr, 10)) : 0u;
}

std::vector<int> distinctExperts(std::mt19937& rng, int nExperts, int k) {
    std::vector<int> all(static_cast<size_t>(nExperts));
    for (int e = 0; e < nExperts; ++e)
        all[size_t(e)] = e;
    std::shuffle(all.begin(), all.end(), rng);
    all.resize(size_t(k));
    return all;
}

class CacheStress : public ::testing::TestWithParam<StressParam> {};

TEST_P(CacheStress, RandomBatchesKeepBytesAndConsistency) {
    const StressParam& p = GetParam();
    const CacheFixture& fx = CacheFixture::get("qwen3moe");
    ASSERT_TRUE(fx.error.empty()) << fx.error;
    const ModelConfig& cfg = fx.cfg;
    ASSERT_EQ(cfg.nExperts, 16);
    tiers::CacheOptions co;
    co.pinShare = 0.5;
    auto made = cache_test::makeCache(fx, p.backend, p.depth, p.direct, co);
    if (!made && made.status().code() == ErrorCode::Unsupported)
        GTEST_SKIP() << p.name << ": " << made.status().toString();
    ASSERT_TRUE(made.isOk()) << made.status().toString();
    tiers::ExpertCache& cache = **made;
    ASSERT_EQ(cache.pool().backend(), p.backend);
    ASSERT_EQ(cache.pool().queueDepth(), p.depth);
    ASSERT_EQ(cache.pool().directIo(), p.direct);

    const uint64_t slot = cache.slotBytes(), minimum = cache.minimumBudget();
    const int nLayers = int(fx.sparseLayers.size());
    const uint64_t everything = minimum + uint64_t(nLayers * cfg.nExperts) * slot;
    ASSERT_EQ(minimum, uint64_t(cfg.topK + p.depth) * slot);
    // Below the minimum is refused and changes nothing.
    ASSERT_TRUE(cache.setBudget(0).isOk());
    EXPECT_EQ(cache.setBudget(minimum - 1).code(), ErrorCode::InvalidArgument);
    EXPECT_EQ(cache.budget(), minimum);

    std::mt19937 rng(1234u + unsigned(p.depth) * 7u + unsigned(p.backend) + seedOffset() * 7919u);
    SCOPED_TRACE("COLI_STRESS_SEED=" + std::to_string(seedOffset()));
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    auto randomBudget = [&](std::mt19937& g) -> uint64_t {
        switch (std::uniform_int_distribution<int>(0, 4)(g)) {
        case 0:
            return 0;
        case 1:
            return minimum;
        case 2:
            return minimum + uint64_t(std::uniform_int_distribution<int>(1, 8)(g)) * slot;
        case 3:
            return minimum + uint64_t(std::uniform_int_distribution<int>(1, 64)(g)) * slot + 100;
        default:
            return everything * 2;
        }
    };

    // The observer: what the GUI and the engine's telemetry do while the compute thread works.
    std::atomic<bool> stop{false};
    std::atomic<int> observerErrors{0}, observerRounds{0};
    std::string observerFirstError;
    std::thread observerThread([&] {
        std::mt19937 g(99 + seedOffset());
        while (!stop.load()) {
            const tiers::TierTelemetry t = cache.telemetry();
            const tiers::TierCounters& k = t.counters;
            std::string err;
            if (k.hitsPinned + k.hitsCache + k.misses != k.routed) err = "hits + misses != routed";
            uint64_t hits = 0;
            for (uint32_t h : t.experts.hits)
                hits += h;
            if (hits != k.routed) err = "expert map hits != routed";
            const Status st = cache.checkConsistency();
            if (!st.isOk()) err = st.toString();
            if (cache.heatSnapshot().size() != size_t(cfg.nLayers * cfg.nExperts))
                err = "heat snapshot size";
            (void)cache.pins();
            (void)cache.pinCapacity();
            const int act = std::uniform_int_distribution<int>(0, 19)(g);
            if (act <= 1) {
                const Status b = cache.setBudget(randomBudget(g));
                if (!b.isOk()) err = b.toString();
            } else if (act == 2) {
                cache.rebalancePins(); // pins may change while a layer is open
            } else if (act <= 5) {
                const tiers::ExpertId id{
                    fx.sparseLayers[std::uniform_int_distribution<size_t>(
                        0, fx.sparseLayers.size() - 1)(g)],
                    std::uniform_int_distribution<int>(0, cfg.nExperts - 1)(g)};
                if (act == 3) {
                    const Status u = cache.pinUser(id); // refused when the hot-store is full
                    if (!u.isOk() && u.message().find("hot-store is full") == std::string::npos)
                        err = u.toString();
                } else if (act == 4) {
                    cache.unpinUser(id);
                } else if (!cache.exclude(id) && std::uniform_int_distribution<int>(0, 3)(g) == 0) {
                    cache.setExclusions({});
                }
            }
            if (!err.empty() && observerErrors.fetch_add(1) == 0) observerFirstError = err;
            observerRounds.fetch_add(1);
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
    });
    // Joined on every exit (a failed ASSERT returns early).
    struct Joiner {
        std::atomic<bool>& stop;
        std::thread& t;
        ~Joiner() {
            stop.store(true);
            if (t.joinable()) t.join();
        }
    } joiner{stop, observerThread};

    uint64_t routed = 0, viewsChecked = 0, aborted = 0;
    int layerIdx = 0;
    // O_DIRECT reads bypass the page cache: each is a real disk read, so fewer batches.
    const int batches = p.direct ? kBatches / 2 : kBatches;
    for (int batch = 0; batch < batches; ++batch) {
        SCOPED_TRACE("batch " + std::to_string(batch));
        // Mostly the forward pass's order (layer after layer), sometimes a jump.
        layerIdx = pick(0, 9) == 0 ? pick(0, nLayers - 1) : (layerIdx + 1) % nLayers;
        const int layer = fx.sparseLayers[size_t(layerIdx)];
        const int nextLayer = fx.sparseLayers[size_t((layerIdx + 1) % nLayers)];
        const int roll = pick(0, 9);
        const int k = roll < 6   ? pick(1, cfg.topK)
                      : roll < 9 ? pick(cfg.topK, 2 * cfg.topK)
                                 : pick(1, cfg.nExperts);
        const std::vector<int> experts = distinctExperts(rng, cfg.nExperts, k);
        std::vector<int> counts;
        if (pick(0, 1)) {
            for (int i = 0; i < k; ++i)
                counts.push_back(pick(1, 8));
        }
        if (pick(0, 4) == 0) {
            const std::vector<int> early = distinctExperts(rng, cfg.nExperts, pick(1, 8));
            cache.prefetch(layer, early); // before the layer opens: a lookahead that came early
        }
        ASSERT_TRUE(cache.beginLayer(layer, experts, counts).isOk());
        routed += uint64_t(k);
        if (pick(0, 2) != 0) {
            const std::vector<int> look = distinctExperts(rng, cfg.nExperts, pick(1, 8));
            cache.prefetch(nextLayer, look); // the router lookahead while this layer is open
        }
        std::set<int> handed;
        const bool abortEarly = pick(0, 49) == 0;
        const bool batches = pick(0, 1) == 0;
        for (;;) {
            SwiGluView view;
            Result<int> pos = cache.next(&view);
            ASSERT_TRUE(pos.isOk()) << pos.status().toString();
            if (*pos < 0) break;
            // As the decode takes them (forward_fast.cpp): with the one it waited for, every
            // other expert ready now (tryNext), all held together.
            std::vector<std::pair<int, SwiGluView>> held{{*pos, view}};
            if (batches)
                for (int p; (p = cache.tryNext(&view)) >= 0;)
                    held.emplace_back(p, view);
            for (const auto& [p, v] : held) {
                ASSERT_LT(p, k);
                ASSERT_TRUE(handed.insert(p).second) << "position " << p << " handed twice";
                ASSERT_EQ(fx.checkView({layer, experts[size_t(p)]}, v), "");
                ++viewsChecked;
            }
            // While the views are held: shrink/grow the budget, prefetch the next layer; the held
            // slots must not be freed or reused.
            // Also a prefetch or pins naming the open layer's own experts, some not issued yet.
            const int act = pick(0, 19);
            if (act == 0) {
                ASSERT_TRUE(cache.setBudget(randomBudget(rng)).isOk());
            } else if (act <= 2) {
                cache.prefetch(nextLayer, distinctExperts(rng, cfg.nExperts, pick(1, 16)));
            } else if (act == 3) {
                cache.prefetch(layer, distinctExperts(rng, cfg.nExperts, pick(1, 16)));
            } else if (act == 4) {
                std::vector<tiers::ExpertId> pins;
                for (int e : distinctExperts(rng, cfg.nExperts, 4))
                    pins.push_back({layer, e});
                cache.setPins(pins);
            }
            if (act <= 4) {
                for (const auto& [p, v] : held) {
                    ASSERT_EQ(fx.checkView({layer, experts[size_t(p)]}, v), "")
                        << "after a change while held";
                }
            }
            for (const auto& [p, v] : held)
                cache.finished(p);
            if (abortEarly && pick(0, 1) == 0) {
                cache.abortLayer();
                ++aborted;
                break;
            }
        }
        if (handed.size() != size_t(k)) {
            ASSERT_TRUE(abortEarly) << handed.size() << " of " << k << " handed out";
        }
        // The layer is closed: next() says so without blocking.
        SwiGluView none;
        Result<int> after = cache.next(&none);
        ASSERT_TRUE(after.isOk());
        ASSERT_EQ(*after, -1);
        ASSERT_TRUE(cache.checkConsistency().isOk()) << cache_test::state(cache);
        if (layerIdx == nLayers - 1) cache.endTokens(pick(1, 32));

        // Turn boundaries (no layer open): budget and pin changes.
        const int turn = pick(0, 39);
        if (turn == 0) {
            ASSERT_TRUE(cache.setBudget(randomBudget(rng)).isOk());
        } else if (turn == 1) {
            cache.rebalancePins();
        } else if (turn == 2) {
            std::vector<tiers::ExpertId> pins;
            for (int i = 0; i < 24; ++i)
                pins.push_back(
                    {fx.sparseLayers[size_t(pick(0, nLayers - 1))], pick(0, cfg.nExperts - 1)});
            cache.setPins(pins);
            EXPECT_LE(int(cache.pins().size()), cache.pinCapacity());
        } else if (turn == 3) {
            std::vector<tiers::ExpertId> user; // a stored list applied at load
            for (int i = 0; i < pick(0, 6); ++i)
                user.push_back(
                    {fx.sparseLayers[size_t(pick(0, nLayers - 1))], pick(0, cfg.nExperts - 1)});
            cache.setUserPins(user);
        }
        ASSERT_TRUE(cache.checkConsistency().isOk()) << cache_test::state(cache);
    }
    stop.store(true);
    observerThread.join();
    EXPECT_EQ(observerErrors.load(), 0) << observerFirstError;
    EXPECT_GT(observerRounds.load(), 0);

    cache.waitIdle();
    ASSERT_TRUE(cache.checkConsistency().isOk()) << cache_test::state(cache);
    const tiers::TierTelemetry t = cache.telemetry();
    const tiers::TierCounters& c = t.counters;
    cache_test::expectCoherent(c);
    EXPECT_EQ(c.routed, routed);
    uint64_t mapHits = 0;
    for (uint32_t h : t.experts.hits)
        mapHits += h;
    EXPECT_EQ(mapHits, c.routed);
    // Idle: nothing loading in the map either.
    for (uint8_t s : t.experts.state)
        EXPECT_NE(s & tiers::kExpertStateMask, uint8_t(tiers::ExpertState::Loading));
    EXPECT_EQ(c.failedReads, 0u);
    // Every load started completed (idle now) and read one blob.
    EXPECT_EQ(c.bytesRead, c.readsIssued * cache.source().readBytes());
    const aio::IoStats io = cache.pool().stats();
    EXPECT_EQ(io.reads, c.readsIssued * uint64_t(cache.source().readsPerExpert()));
    EXPECT_EQ(io.failed, 0u);
    EXPECT_LE(io.maxInFlight, p.depth);
    // Placement really varied.
    EXPECT_GT(c.misses, 0u);
    EXPECT_GT(c.hitsCache + c.hitsPinned, 0u);
    EXPECT_GT(c.evictions, 0u);
    EXPECT_GT(c.prefetchIssued, 0u);
    EXPECT_GT(c.prefetchUsed, 0u);
    // Idle and closed: nothing busy, so the allocation is within the budget.
    EXPECT_LE(t.residency.allocatedBytes, t.residency.budgetBytes);
    EXPECT_EQ(t.residency.loadingExperts, 0);
    std::printf("%-22s batches %d views %llu aborted %llu routed %llu hit pinned %llu cache %llu "
                "(in flight %llu) miss %llu evict %llu prefetch %llu used %llu reads %llu "
                "max in flight %d\n",
                p.name, batches, (unsigned long long)viewsChecked, (unsigned long long)aborted,
                (unsigned long long)c.routed, (unsigned long long)c.hitsPinned,
                (unsigned long long)c.hitsCache, (unsigned long long)c.inFlightHits,
                (unsigned long long)c.misses, (unsigned long long)c.evictions,
                (unsigned long long)c.prefetchIssued, (unsigned long long)c.prefetchUsed,
                (unsigned long long)io.reads, io.maxInFlight);
}

const StressParam kParams[] = {
    {"uring_depth2", aio::IoBackend::Uring, 2, false},
    {"uring_depth4_direct", aio::IoBackend::Uring, 4, true},
    {"pread_depth2", aio::IoBackend::PreadThreads, 2, false},
    {"pread_depth3_direct", aio::IoBackend::PreadThreads, 3, true},
};

INSTANTIATE_TEST_SUITE_P(Backends, CacheStress, ::testing::ValuesIn(kParams),
                         [](const ::testing::TestParamInfo<StressParam>& i) {
                             return std::string(i.param.name);
                         });

// ---- prefetches racing evictions and slot reuse ----

// Hands out every expert of the open layer, checking each view's bytes and, after each
// finished(), the slot table. `whileHeld` runs while a view is held (its bytes checked again).
void drainLayer(tiers::ExpertCache& cache, const CacheFixture& fx, int layer,
                const std::vector<int>& experts, const std::function<void()>& whileHeld = {},
                size_t handedBefore = 0) {
    std::set<int> handed;
    for (;;) {
        SwiGluView view;
        Result<int> pos = cache.next(&view);
        ASSERT_TRUE(pos.isOk()) << pos.status().toString();
        if (*pos < 0) break;
        ASSERT_TRUE(handed.insert(*pos).second);
        const tiers::ExpertId id{layer, experts[size_t(*pos)]};
        ASSERT_EQ(fx.checkView(id, view), "");
        if (whileHeld) {
            whileHeld();
            ASSERT_EQ(fx.checkView(id, view), "") << "changed while held";
        }
        cache.finished(*pos);
        ASSERT_TRUE(cache.checkConsistency().isOk()) << cache_test::state(cache);
    }
    ASSERT_EQ(handed.size() + handedBefore, experts.size());
}

// At the minimum budget the open layer holds every slot it can; the lookahead asks for the whole
// next layer meanwhile (it may only take slots that are free, finished or of earlier layers),
// then that layer opens and finds some experts loading, some ready, some evicted again.
TEST(CacheReuse, PrefetchWhileOpenLayerHoldsSlotsAtMinimumBudget) {
    const CacheFixture& fx = CacheFixture::get("qwen3moe");
    ASSERT_TRUE(fx.error.empty()) << fx.error;
    auto made = cache_test::makeCache(fx, aio::IoBackend::Auto, 2, false);
    ASSERT_TRUE(made.isOk()) << made.status().toString();
    tiers::ExpertCache& cache = **made;
    const int E = fx.cfg.nExperts, K = fx.cfg.topK, n = int(fx.sparseLayers.size());
    std::mt19937 rng(7 + seedOffset());
    std::vector<int> all(static_cast<size_t>(E));
    for (int e = 0; e < E; ++e)
        all[size_t(e)] = e;
    for (int i = 0; i < 400; ++i) {
        SCOPED_TRACE("round " + std::to_string(i));
        const int layer = fx.sparseLayers[size_t(i % n)];
        const int next = fx.sparseLayers[size_t((i + 1) % n)];
        const std::vector<int> a = distinctExperts(rng, E, K);
        ASSERT_TRUE(cache.beginLayer(layer, a).isOk());
        cache.prefetch(next, all);
        drainLayer(cache, fx, layer, a, [&] {
            cache.prefetch(next, distinctExperts(rng, E, K)); // may reuse finished slots
            if (i % 5 == 0) {
                ASSERT_TRUE(cache.setBudget(cache.minimumBudget() + 3 * cache.slotBytes()).isOk());
                ASSERT_TRUE(cache.setBudget(0).isOk()); // frees what is not held
            }
        });
        if (HasFatalFailure()) return;
        const std::vector<int> b = distinctExperts(rng, E, i % 3 == 0 ? E : K);
        ASSERT_TRUE(cache.beginLayer(next, b).isOk());
        drainLayer(cache, fx, next, b);
        if (HasFatalFailure()) return;
        if (i % 7 == 0) cache.waitIdle();
    }
    cache.waitIdle();
    ASSERT_TRUE(cache.checkConsistency().isOk()) << cache_test::state(cache);
    const tiers::TierCounters c = cache.telemetry().counters;
    cache_test::expectCoherent(c);
    EXPECT_GT(c.prefetchIssued, 0u);
    EXPECT_GT(c.prefetchUsed, 0u);
    EXPECT_GT(c.inFlightHits, 0u);
    EXPECT_GT(c.evictions, 0u);
    EXPECT_EQ(c.bytesRead, c.readsIssued * cache.source().readBytes());
    std::printf("min budget: routed %llu prefetch issued %llu used %llu in-flight hits %llu "
                "evictions %llu\n",
                (unsigned long long)c.routed, (unsigned long long)c.prefetchIssued,
                (unsigned long long)c.prefetchUsed, (unsigned long long)c.inFlightHits,
                (unsigned long long)c.evictions);
}

// An expert of an earlier layer is finished, then a prefetch reuses its slot while the same
// expert is demanded again: it must be read again, never served from the reused slot.
TEST(CacheReuse, FinishedSlotReusedByPrefetchThenDemandedAgain) {
    const CacheFixture& fx = CacheFixture::get("qwen3moe");
    ASSERT_TRUE(fx.error.empty()) << fx.error;
    auto made = cache_test::makeCache(fx, aio::IoBackend::Auto, 2, false);
    ASSERT_TRUE(made.isOk()) << made.status().toString();
    tiers::ExpertCache& cache = **made;
    const int E = fx.cfg.nExperts, K = fx.cfg.topK;
    const int l0 = fx.sparseLayers[0], l1 = fx.sparseLayers[1];
    for (int i = 0; i < 200; ++i) {
        SCOPED_TRACE("round " + std::to_string(i));
        std::vector<int> a;
        for (int j = 0; j < K; ++j)
            a.push_back((i + j) % E);
        ASSERT_TRUE(cache.beginLayer(l0, a).isOk());
        drainLayer(cache, fx, l0, a);
        if (HasFatalFailure()) return;
        // The whole next layer: every slot of layer l0 (an earlier layer) may be displaced.
        std::vector<int> all;
        for (int e = 0; e < E; ++e)
            all.push_back((e + i) % E);
        cache.prefetch(l1, all);
        ASSERT_TRUE(cache.beginLayer(l0, a).isOk()); // demanded again, slots being reused
        drainLayer(cache, fx, l0, a);
        if (HasFatalFailure()) return;
    }
    cache.waitIdle();
    ASSERT_TRUE(cache.checkConsistency().isOk()) << cache_test::state(cache);
    cache_test::expectCoherent(cache.telemetry().counters);
}

// Loads for an expert the OPEN layer wants but whose read has not started yet (no slot was free):
// a prefetch of the open layer itself, or a pin set meanwhile (setPins is callable from any
// thread). The cache must not start a second read of it into another slot.
void expectOneReadPerExpert(bool viaPins) {
    const CacheFixture& fx = CacheFixture::get("qwen3moe");
    ASSERT_TRUE(fx.error.empty()) << fx.error;
    tiers::CacheOptions co;
    co.pinShare = 1.0;
    auto made = cache_test::makeCache(fx, aio::IoBackend::PreadThreads, 2, false, co);
    ASSERT_TRUE(made.isOk()) << made.status().toString();
    tiers::ExpertCache& cache = **made;
    const int E = fx.cfg.nExperts, layer = fx.sparseLayers[0];
    // Pins need room beyond the working set: 2 more slots, all of them for the hot-store.
    ASSERT_TRUE(
        cache.setBudget(viaPins ? cache.minimumBudget() + 2 * cache.slotBytes() : 0).isOk());
    std::vector<int> experts, counts;
    for (int e = 0; e < E; ++e) {
        experts.push_back(e);
        counts.push_back(e == E - 1 ? 100 : 1); // the last is hot: a prefetch may displace others
    }
    ASSERT_TRUE(cache.beginLayer(layer, experts, counts).isOk());
    SwiGluView view;
    Result<int> first = cache.next(&view);
    ASSERT_TRUE(first.isOk() && *first >= 0);
    ASSERT_EQ(fx.checkView({layer, experts[size_t(*first)]}, view), "");
    cache.finished(*first); // its slot is now the only evictable one
    const int hot = E - 1;  // wanted, not issued yet (the working set is smaller than E)
    const uint64_t issuedBefore = cache.telemetry().counters.readsIssued;
    ASSERT_LT(issuedBefore, uint64_t(E)) << "every expert was issued at once";
    if (viaPins)
        cache.setPins({{layer, hot}});
    else
        cache.prefetch(layer, std::vector<int>{hot});
    // The scenario: a read of `hot` started outside the layer's own issuing.
    ASSERT_EQ(cache.telemetry().counters.readsIssued, issuedBefore + 1)
        << "no read started for expert " << hot << ": " << cache_test::state(cache);
    ASSERT_TRUE(cache.checkConsistency().isOk()) << cache_test::state(cache);
    drainLayer(cache, fx, layer, experts, {}, 1);
    cache.waitIdle();
    ASSERT_TRUE(cache.checkConsistency().isOk()) << cache_test::state(cache);
    const tiers::TierCounters c = cache.telemetry().counters;
    EXPECT_EQ(c.readsIssued, uint64_t(E)) << "an expert was read twice for one layer";
}

// tryNext hands out only experts that are ready, each once, never waits, never closes the layer
// (experts it handed out stay held until finished), and a read it could not give yet is given by
// a later call once it completed.
TEST(CacheReuse, TryNextHandsOutReadyExpertsWithoutClosingTheLayer) {
    const CacheFixture& fx = CacheFixture::get("qwen3moe");
    ASSERT_TRUE(fx.error.empty()) << fx.error;
    auto made = cache_test::makeCache(fx, aio::IoBackend::PreadThreads, 2, false);
    ASSERT_TRUE(made.isOk()) << made.status().toString();
    tiers::ExpertCache& cache = **made;
    const int E = fx.cfg.nExperts, K = fx.cfg.topK, layer = fx.sparseLayers[0];
    ASSERT_GT(E, K);
    ASSERT_TRUE(cache.setBudget(uint64_t(E) * cache.slotBytes() * 4).isOk()); // all fit
    std::vector<int> first, all;
    for (int e = 0; e < E; ++e)
        (e < K ? first : all).push_back(e);
    all.insert(all.begin(), first.begin(), first.end());
    SwiGluView view;
    ASSERT_EQ(cache.tryNext(&view), -1) << "no layer open";
    EXPECT_FALSE(cache.openLayerReady()) << "no layer open";
    // Layer 1: K experts read, then computed together.
    ASSERT_TRUE(cache.beginLayer(layer, first).isOk());
    cache.waitIdle();
    EXPECT_TRUE(cache.openLayerReady()) << "every read completed";
    std::map<int, SwiGluView> held;
    for (int p; (p = cache.tryNext(&view)) >= 0;) {
        ASSERT_TRUE(held.emplace(p, view).second) << "position " << p << " handed twice";
        ASSERT_EQ(fx.checkView({layer, first[size_t(p)]}, view), "");
    }
    ASSERT_EQ(held.size(), size_t(K)) << "every read had completed";
    ASSERT_EQ(cache.tryNext(&view), -1);
    // Still open: the held slots survive a prefetch of every expert of another layer.
    cache.prefetch(fx.sparseLayers[1], std::vector<int>(all));
    cache.waitIdle();
    for (const auto& [p, v] : held)
        ASSERT_EQ(fx.checkView({layer, first[size_t(p)]}, v), "") << "a held slot was reused";
    for (const auto& [p, v] : held)
        cache.finished(p);
    Result<int> end = cache.next(&view);
    ASSERT_TRUE(end.isOk());
    ASSERT_EQ(*end, -1) << "all handed out and finished: next() closes the layer";
    ASSERT_TRUE(cache.checkConsistency().isOk()) << cache_test::state(cache);
    // Layer again with every expert: K resident, the rest read. tryNext gives the resident ones
    // at once (without waiting), the others once read.
    ASSERT_TRUE(cache.beginLayer(layer, all).isOk());
    EXPECT_FALSE(cache.openLayerReady()) << "E - K reads were just started";
    held.clear();
    for (int p; (p = cache.tryNext(&view)) >= 0;) {
        ASSERT_TRUE(held.emplace(p, view).second);
        ASSERT_EQ(fx.checkView({layer, all[size_t(p)]}, view), "");
    }
    for (int p = 0; p < K; ++p)
        ASSERT_TRUE(held.count(p)) << "resident expert at position " << p << " not handed out";
    // The rest as their reads complete (a read starts when tryNext or a completion frees room).
    for (int round = 0; round < E && held.size() < size_t(E); ++round) {
        cache.waitIdle();
        for (int p; (p = cache.tryNext(&view)) >= 0;) {
            ASSERT_TRUE(held.emplace(p, view).second);
            ASSERT_EQ(fx.checkView({layer, all[size_t(p)]}, view), "");
        }
    }
    ASSERT_EQ(held.size(), size_t(E));
    EXPECT_TRUE(cache.openLayerReady()) << "nothing left to hand out";
    for (const auto& [p, v] : held)
        cache.finished(p);
    end = cache.next(&view);
    ASSERT_TRUE(end.isOk());
    ASSERT_EQ(*end, -1);
    ASSERT_TRUE(cache.checkConsistency().isOk()) << cache_test::state(cache);
    cache_test::expectCoherent(cache.telemetry().counters);
}

TEST(CacheReuse, PrefetchOfTheOpenLayerReadsEachExpertOnce) {
    expectOneReadPerExpert(false);
}

TEST(CacheReuse, PinSetDuringAnOpenLayerReadsEachExpertOnce) {
    expectOneReadPerExpert(true);
}

} // namespace
