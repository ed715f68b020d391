// A long prompt at the smallest budget: 3000 tokens (the qwen3moe fixture's context is 40960)
// through forward() with ramBudgetBytes 0 (topK + queue depth slots for 4 x 16 experts), prefetch
// on, as its checkpoint and as its container: completes, and the final logits equal a resident
// model's bit for bit. One call of 3000 tokens (many prefill chunks, each a batch-union), and the
// same tokens in calls of random sizes (1 .. 300: prefill and decode steps mixed), each against
// the resident model fed the same calls. Label slow (1-2.5 min on two loaded cores).
#include "cache_test_util.h"
#include "forward/model.h"

#include <random>

using namespace coli;

namespace {

constexpr int kTokens = 3000;

// Logits of the last token after feeding `tokens` in calls of the given sizes.
std::vector<float> run(Model& m, const std::vector<int32_t>& tokens,
                       const std::vector<int>& calls) {
    KVCache kv;
    std::vector<float> logits;
    size_t at = 0;
    for (int n : calls) {
        const Status st =
            m.forward(std::span<const int32_t>(tokens.data() + at, size_t(n)), kv, logits);
        EXPECT_TRUE(st.isOk()) << st.toString();
        if (!st.isOk()) return {};
        at += size_t(n);
    }
    EXPECT_EQ(kv.size(), int(tokens.size()));
    return logits;
}

void checkLongPrompt(const std::string& dir) {
    ASSERT_FALSE(dir.empty());
    ModelLoadOptions base;
    base.threads = 2;
    auto resident = Model::load(dir, base);
    ASSERT_TRUE(resident.isOk()) << resident.status().toString();
    const ModelConfig& cfg = (*resident)->config();
    ASSERT_GE(cfg.maxPositions, kTokens);
    std::mt19937 rng(5);
    std::vector<int32_t> tokens;
    for (int i = 0; i < kTokens; ++i)
        tokens.push_back(std::uniform_int_distribution<int32_t>(0, cfg.vocabSize - 1)(rng));
    std::vector<int> mixed;
    for (int left = kTokens; left > 0;) {
        const int roll = std::uniform_int_distribution<int>(0, 3)(rng);
        const int n = std::min(left, roll == 0 ? std::uniform_int_distribution<int>(33, 300)(rng)
                                               : std::uniform_int_distribution<int>(1, 8)(rng));
        mixed.push_back(n);
        left -= n;
    }
    for (const std::vector<int>& calls : {std::vector<int>{kTokens}, mixed}) {
        SCOPED_TRACE(calls.size() == 1 ? "one call" : std::to_string(calls.size()) + " calls");
        const std::vector<float> want = run(**resident, tokens, calls);
        ASSERT_EQ(want.size(), size_t(cfg.vocabSize));
        ModelLoadOptions o = base;
        o.tiers.stream = true;
        o.tiers.ramBudgetBytes = 0;
        o.tiers.ioQueueDepth = 2;
        auto m = Model::load(dir, o);
        ASSERT_TRUE(m.isOk()) << m.status().toString();
        tiers::ExpertCache* cache = (*m)->expertCache();
        ASSERT_NE(cache, nullptr);
        ASSERT_EQ(cache->budget(), cache->minimumBudget());
        const std::vector<float> got = run(**m, tokens, calls);
        ASSERT_EQ(got.size(), want.size());
        EXPECT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * sizeof(float)))
            << "final logits differ";
        cache->waitIdle();
        EXPECT_TRUE(cache->checkConsistency().isOk()) << cache_test::state(*cache);
        const tiers::TierTelemetry t = cache->telemetry();
        cache_test::expectCoherent(t.counters);
        EXPECT_EQ(t.counters.tokens, uint64_t(kTokens));
        EXPECT_LE(t.residency.allocatedBytes, cache->minimumBudget());
        EXPECT_GT(t.counters.evictions, 0u);
        std::printf(
            "%s, %zu calls: routed %llu misses %llu reads %llu (%.1f MiB) evictions %llu "
            "prefetch %llu/%llu used\n",
            dir.c_str(), calls.size(), (unsigned long long)t.counters.routed,
            (unsigned long long)t.counters.misses, (unsigned long long)t.counters.readsIssued,
            double(t.counters.bytesRead) / (1024.0 * 1024.0),
            (unsigned long long)t.counters.evictions, (unsigned long long)t.counters.prefetchUsed,
            (unsigned long long)t.counters.prefetchIssued);
    }
}

TEST(CacheLongPrompt, CheckpointAtMinimumBudgetMatchesResident) {
    checkLongPrompt(cache_test::fixture("qwen3moe"));
}

TEST(CacheLongPrompt, ContainerAtMinimumBudgetMatchesResident) {
    const cache_test::CacheFixture& fx = cache_test::CacheFixture::get("qwen3moe");
    ASSERT_TRUE(fx.error.empty()) << fx.error;
    checkLongPrompt(fx.dir);
}

} // namespace
