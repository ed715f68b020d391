// The mirror's fallback under concurrency (docs/mirror.md "Threads"): the expert cache over a
// container (qwen3moe) with a full mirror, driven by random layer batches with prefetches on both
// I/O backends (queue depth 3), while a second thread polls the mirror's status and the telemetry
// (the GUI's role) and, part-way through, cuts the mirror's files short (every later mirror read
// fails, is switched off and re-read from the primary on a pool thread). Every view handed out must
// be the expert's stored blob; the counters must add up (bytes per disk = bytes read, no failed
// read seen by the cache); the status must say the mirror is off once, with the file named. Built
// for ThreadSanitizer too (label tsan); run with --gtest_repeat=200 (docs/testing.md).
#include "cache_test_util.h"
#include "mirror_test_util.h"

#include <atomic>
#include <random>
#include <thread>
#include <unistd.h>

using namespace coli;
using cache_test::CacheFixture;

namespace {

struct Param {
    const char* name;
    aio::IoBackend backend;
};

std::ostream& operator<<(std::ostream& os, const Param& p) {
    return os << p.name;
}

class MirrorStress : public ::testing::TestWithParam<Param> {};

TEST_P(MirrorStress, FallbackUnderLoadKeepsBytesAndCounters) {
    const CacheFixture& fx = CacheFixture::get("qwen3moe");
    ASSERT_TRUE(fx.error.empty()) << fx.error;
    st_test::TempDir tmp;
    const std::string mirrorDir = (tmp.path() / "mirror").string();
    const std::vector<std::string> shards = mirror_test::shardNames(fx.dir);
    mirror_test::makeMirror(fx.dir, mirrorDir, shards);
    tiers::MirrorSetup setup;
    setup.dir = mirrorDir;
    for (const std::string& f : shards)
        setup.files[std::filesystem::weakly_canonical(fx.dir + "/" + f).string()] =
            mirrorDir + "/" + f;
    setup.share = 0.6;

    aio::IoOptions io;
    io.backend = GetParam().backend;
    io.queueDepth = 3;
    auto pool = aio::IoPool::create(io);
    if (!pool && pool.status().code() == ErrorCode::Unsupported)
        GTEST_SKIP() << pool.status().toString();
    ASSERT_TRUE(pool.isOk()) << pool.status().toString();
    auto src = tiers::openContainerSource(fx.container, fx.cfg, **pool, setup);
    ASSERT_TRUE(src.isOk()) << src.status().toString();
    ASSERT_TRUE((*src)->router()->warnings().empty());
    auto made = tiers::ExpertCache::create(std::move(*pool), std::move(*src), fx.cfg, {});
    ASSERT_TRUE(made.isOk()) << made.status().toString();
    tiers::ExpertCache& cache = **made;
    ASSERT_TRUE(cache.setBudget(cache.minimumBudget() + 2 * cache.slotBytes()).isOk());

    std::atomic<bool> stop{false};
    std::atomic<int> polls{0};
    std::thread observer([&] {
        while (!stop.load(std::memory_order_acquire)) {
            const tiers::MirrorStatus s = cache.mirrorStatus();
            const tiers::TierTelemetry t = cache.telemetry();
            EXPECT_EQ(t.counters.bytesReadPrimary + t.counters.bytesReadMirror,
                      t.counters.bytesRead);
            if (s.fellBack) {
                EXPECT_FALSE(s.problem.empty());
            }
            polls.fetch_add(1, std::memory_order_relaxed);
            std::this_thread::yield();
        }
    });

    std::mt19937 rng(7);
    const int nLayers = int(fx.sparseLayers.size());
    constexpr int kBatches = 400;
    uint64_t mirrorBytesAtCut = 0;
    for (int b = 0; b < kBatches; ++b) {
        if (b == kBatches / 3) {
            cache.waitIdle();
            mirrorBytesAtCut = cache.counters().bytesReadMirror;
            for (const std::string& f : shards)
                ASSERT_EQ(0, ::truncate((mirrorDir + "/" + f).c_str(), 0));
        }
        const int layer = fx.sparseLayers[size_t(b % nLayers)];
        std::vector<int> all(size_t(fx.cfg.nExperts));
        for (int e = 0; e < fx.cfg.nExperts; ++e)
            all[size_t(e)] = e;
        std::shuffle(all.begin(), all.end(), rng);
        all.resize(size_t(fx.cfg.topK));
        ASSERT_TRUE(cache.beginLayer(layer, all).isOk());
        // The next layer's likely experts, while this one is open.
        std::vector<int> next(all.begin(), all.begin() + 2);
        cache.prefetch(fx.sparseLayers[size_t((b + 1) % nLayers)], next);
        for (;;) {
            SwiGluView view;
            Result<int> pos = cache.next(&view);
            ASSERT_TRUE(pos.isOk()) << pos.status().toString();
            if (*pos < 0) break;
            ASSERT_EQ(fx.checkView({layer, all[size_t(*pos)]}, view), "");
            cache.finished(*pos);
        }
        cache.endTokens(1);
    }
    cache.waitIdle();
    stop.store(true, std::memory_order_release);
    observer.join();
    EXPECT_GT(polls.load(), 0);
    ASSERT_TRUE(cache.checkConsistency().isOk()) << cache.checkConsistency().toString();
    const tiers::TierCounters c = cache.counters();
    const tiers::MirrorStatus s = cache.mirrorStatus();
    EXPECT_TRUE(s.fellBack);
    EXPECT_NE(s.problem.find(mirrorDir), std::string::npos) << s.problem;
    EXPECT_EQ(c.failedReads, 0u);
    EXPECT_GT(mirrorBytesAtCut, 0u);
    EXPECT_EQ(c.bytesReadMirror, mirrorBytesAtCut);
    EXPECT_EQ(c.bytesReadPrimary + c.bytesReadMirror, c.bytesRead);
}

INSTANTIATE_TEST_SUITE_P(Backends, MirrorStress,
                         ::testing::Values(Param{"pread", aio::IoBackend::PreadThreads},
                                           Param{"uring", aio::IoBackend::Uring}),
                         [](const auto& info) { return std::string(info.param.name); });

} // namespace
