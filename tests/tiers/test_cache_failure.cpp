// Failed expert reads (docs/design.md "Threading contract" 7: a failed read frees its slot and is
// reported to the layer that wanted it). A streamed Model (the qwen3moe fixture as a checkpoint,
// 3 reads per expert, and as a container, 1 read) decodes at the minimum budget; a read is made
// to fail through IoPool::injectFailure:
//   - a demanded read: forward() returns Io ("injected ..."), the KV cache keeps its size, the
//     slot table stays consistent, and the next forward() of the same token gives exactly the
//     logits of a resident model;
//   - failures at random points of later steps (prefetch reads included): every step either
//     succeeds or fails cleanly, and retrying reproduces the resident logits bit for bit;
//   - a prefetch-only read (issued, failed and freed before its layer is demanded) never fails
//     the forward.
// Driven directly (no Model): a demand read that fails is reported by next() and leaves the cache
// usable; a failed prefetch read never fails its layer, whether it failed before the layer opened
// or while the open layer waited for it (an in-flight hit).
#include "cache_test_util.h"
#include "forward/model.h"

#include <cstdint>
#include <random>

using namespace coli;
using cache_test::CacheFixture;

namespace {

constexpr uint64_t kDisarm = uint64_t(1) << 62; // injectFailure that never fires

std::vector<int32_t> promptFor(int vocab, int n) {
    std::vector<int32_t> t;
    for (int i = 0; i < n; ++i)
        t.push_back(int32_t((i * 37 + 11) % vocab));
    return t;
}

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::string modelDir(bool container) {
    if (!container) return cache_test::fixture("qwen3moe");
    const CacheFixture& fx = CacheFixture::get("qwen3moe");
    return fx.error.empty() ? fx.dir : std::string();
}

// The resident model's logits after the prompt, then after each of `steps` (one token each).
std::vector<std::vector<float>> residentLogits(const std::string& dir,
                                               const std::vector<int32_t>& prompt,
                                               const std::vector<int32_t>& steps) {
    std::vector<std::vector<float>> out;
    ModelLoadOptions o;
    o.threads = 2;
    auto m = Model::load(dir, o);
    EXPECT_TRUE(m.isOk()) << m.status().toString();
    if (!m) return out;
    KVCache kv;
    std::vector<float> logits;
    EXPECT_TRUE((*m)->forward(prompt, kv, logits).isOk());
    out.push_back(logits);
    for (int32_t t : steps) {
        const int32_t one[1] = {t};
        EXPECT_TRUE((*m)->forward(one, kv, logits).isOk());
        out.push_back(logits);
    }
    return out;
}

std::unique_ptr<Model> streamed(const std::string& dir, bool prefetch) {
    ModelLoadOptions o;
    o.threads = 2;
    o.tiers.stream = true;
    o.tiers.ramBudgetBytes = 0; // the minimum working set: most steps must read
    o.tiers.ioQueueDepth = 2;
    o.tiers.prefetch = prefetch;
    auto m = Model::load(dir, o);
    EXPECT_TRUE(m.isOk()) << m.status().toString();
    return m ? std::move(*m) : nullptr;
}

class CacheFailure : public ::testing::TestWithParam<bool> {}; // true: container

TEST_P(CacheFailure, DemandedReadFailsDuringDecodeThenRecovers) {
    const std::string dir = modelDir(GetParam());
    ASSERT_FALSE(dir.empty());
    std::unique_ptr<Model> m = streamed(dir, false);
    ASSERT_NE(m, nullptr);
    tiers::ExpertCache* cache = m->expertCache();
    ASSERT_NE(cache, nullptr);
    const ModelConfig& cfg = m->config();
    const std::vector<int32_t> prompt = promptFor(cfg.vocabSize, 40);
    const std::vector<int32_t> steps = {7, 300, 42, 5, 99, 123};
    const auto want = residentLogits(dir, prompt, steps);
    ASSERT_EQ(want.size(), steps.size() + 1);

    KVCache kv;
    std::vector<float> logits;
    ASSERT_TRUE(m->forward(prompt, kv, logits).isOk());
    ASSERT_TRUE(sameBits(logits, want[0]));
    cache->waitIdle();
    // Routed (layer, expert) pairs per token: topK per MoE layer; the minimum budget holds
    // topK + queue depth slots, fewer than that, so the step must read.
    int moe = 0;
    for (bool s : cfg.sparseLayer)
        moe += s ? 1 : 0;
    ASSERT_GT(moe * cfg.topK, cfg.topK + cache->pool().queueDepth());

    const int kvBefore = kv.size();
    const tiers::TierCounters before = cache->telemetry().counters;
    cache->pool().injectFailure(0);
    const int32_t one[1] = {steps[0]};
    std::vector<float> failedLogits = {1.0f, 2.0f};
    const Status st = m->forward(one, kv, failedLogits);
    EXPECT_EQ(st.code(), ErrorCode::Io) << st.toString();
    EXPECT_NE(st.message().find("injected"), std::string::npos) << st.toString();
    EXPECT_EQ(kv.size(), kvBefore);
    cache->waitIdle();
    EXPECT_TRUE(cache->checkConsistency().isOk()) << cache_test::state(*cache);
    const tiers::TierCounters after = cache->telemetry().counters;
    EXPECT_EQ(after.failedReads, before.failedReads + 1);
    EXPECT_EQ(cache->pool().stats().failed, 1u);
    cache_test::expectCoherent(after);

    // The same token again, nothing injected: exactly the resident logits.
    ASSERT_TRUE(m->forward(one, kv, logits).isOk());
    EXPECT_EQ(kv.size(), kvBefore + 1);
    EXPECT_TRUE(sameBits(logits, want[1])) << "logits after recovery differ";

    // Prefetch on, failures at random points of the remaining steps (demand or prefetch reads):
    // a step either succeeds or fails cleanly (Io, kv unchanged); retried, it reproduces the
    // resident logits.
    cache->setPrefetch(true);
    std::mt19937 rng(GetParam() ? 11 : 12);
    int failedSteps = 0;
    for (size_t i = 1; i < steps.size(); ++i) {
        SCOPED_TRACE("step " + std::to_string(i));
        const int32_t tok[1] = {steps[i]};
        cache->pool().injectFailure(uint64_t(std::uniform_int_distribution<int>(0, 6)(rng)));
        const int n = kv.size();
        Status s = m->forward(tok, kv, logits);
        cache->pool().injectFailure(kDisarm);
        if (!s.isOk()) {
            ++failedSteps;
            EXPECT_EQ(s.code(), ErrorCode::Io) << s.toString();
            EXPECT_EQ(kv.size(), n);
            cache->waitIdle();
            ASSERT_TRUE(cache->checkConsistency().isOk()) << cache_test::state(*cache);
            s = m->forward(tok, kv, logits);
        }
        ASSERT_TRUE(s.isOk()) << s.toString();
        EXPECT_TRUE(sameBits(logits, want[i + 1])) << "logits differ";
    }
    cache->waitIdle();
    EXPECT_TRUE(cache->checkConsistency().isOk()) << cache_test::state(*cache);
    const tiers::TierCounters end = cache->telemetry().counters;
    cache_test::expectCoherent(end);
    std::printf("%s: failed reads %llu, steps failed %d of %zu (the rest hit a prefetch or no "
                "read)\n",
                GetParam() ? "container" : "checkpoint", (unsigned long long)end.failedReads,
                failedSteps, steps.size() - 1);
}

// A prefetch read fails before its layer is demanded: the slot is freed, the forward reads the
// expert again on demand and succeeds with the resident logits.
TEST_P(CacheFailure, FailedPrefetchReadDoesNotFailTheForward) {
    const std::string dir = modelDir(GetParam());
    ASSERT_FALSE(dir.empty());
    std::unique_ptr<Model> m = streamed(dir, true);
    ASSERT_NE(m, nullptr);
    tiers::ExpertCache* cache = m->expertCache();
    const ModelConfig& cfg = m->config();
    const std::vector<int32_t> prompt = promptFor(cfg.vocabSize, 40);
    const std::vector<int32_t> steps = {7, 300, 42};
    const auto want = residentLogits(dir, prompt, steps);
    ASSERT_EQ(want.size(), steps.size() + 1);
    KVCache kv;
    std::vector<float> logits;
    ASSERT_TRUE(m->forward(prompt, kv, logits).isOk());
    int firstMoe = -1;
    for (int l = cfg.nLayers - 1; l >= 0; --l)
        if (cfg.sparseLayer[size_t(l)]) firstMoe = l;
    for (size_t i = 0; i < steps.size(); ++i) {
        SCOPED_TRACE("step " + std::to_string(i));
        cache->waitIdle();
        const tiers::TierCounters before = cache->telemetry().counters;
        // The lookahead's call, made by hand: every expert of the first MoE layer, into free
        // slots (a budget of 16 more for the moment). The first read to complete fails.
        std::vector<int> all;
        for (int e = 0; e < cfg.nExperts; ++e)
            all.push_back(e);
        ASSERT_TRUE(cache->setBudget(cache->minimumBudget() + 16 * cache->slotBytes()).isOk());
        cache->pool().injectFailure(0);
        cache->prefetch(firstMoe, all);
        cache->waitIdle();
        ASSERT_TRUE(cache->setBudget(0).isOk()); // the token reads at the minimum again
        const tiers::TierCounters mid = cache->telemetry().counters;
        ASSERT_GT(mid.prefetchIssued, before.prefetchIssued) << "no prefetch read was started";
        EXPECT_EQ(mid.failedReads, before.failedReads + 1);
        ASSERT_TRUE(cache->checkConsistency().isOk()) << cache_test::state(*cache);
        const int32_t one[1] = {steps[i]};
        const Status st = m->forward(one, kv, logits);
        ASSERT_TRUE(st.isOk()) << st.toString();
        EXPECT_TRUE(sameBits(logits, want[i + 1])) << "logits differ";
    }
    cache->waitIdle();
    EXPECT_TRUE(cache->checkConsistency().isOk()) << cache_test::state(*cache);
    cache_test::expectCoherent(cache->telemetry().counters);
}

INSTANTIATE_TEST_SUITE_P(Sources, CacheFailure, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) {
                             return std::string(i.param ? "container" : "checkpoint");
                         });

// Driven directly: a read that fails while its layer waits for it is reported by next() (Io,
// the layer closed) and the cache stays usable: the same layer opened again reads it and hands
// out the right bytes. Both backends.
TEST(CacheFailureDirect, DemandedReadFailureIsReportedAndRecovered) {
    const CacheFixture& fx = CacheFixture::get("qwen3moe");
    ASSERT_TRUE(fx.error.empty()) << fx.error;
    for (aio::IoBackend b : {aio::IoBackend::Uring, aio::IoBackend::PreadThreads}) {
        SCOPED_TRACE(aio::ioBackendName(b));
        auto made = cache_test::makeCache(fx, b, 2, false);
        if (!made && made.status().code() == ErrorCode::Unsupported) continue;
        ASSERT_TRUE(made.isOk()) << made.status().toString();
        tiers::ExpertCache& cache = **made;
        const int layer = fx.sparseLayers[0];
        for (int round = 0; round < 50; ++round) {
            SCOPED_TRACE("round " + std::to_string(round));
            std::vector<int> experts;
            for (int j = 0; j < fx.cfg.topK + 2; ++j)
                experts.push_back((round * 3 + j) % fx.cfg.nExperts);
            // Evict them first: another layer's experts fill the minimum budget.
            std::vector<int> other;
            for (int e = 0; e < fx.cfg.nExperts; ++e)
                other.push_back(e);
            ASSERT_TRUE(cache.beginLayer(fx.sparseLayers[1], other).isOk());
            for (;;) {
                SwiGluView v;
                Result<int> p = cache.next(&v);
                ASSERT_TRUE(p.isOk());
                if (*p < 0) break;
                cache.finished(*p);
            }
            cache.waitIdle();
            cache.pool().injectFailure(uint64_t(round % 3));
            ASSERT_TRUE(cache.beginLayer(layer, experts).isOk());
            Status failure;
            int handed = 0;
            for (;;) {
                SwiGluView v;
                Result<int> p = cache.next(&v);
                if (!p) {
                    failure = p.status();
                    break;
                }
                if (*p < 0) break;
                ASSERT_EQ(fx.checkView({layer, experts[size_t(*p)]}, v), "");
                ++handed;
                cache.finished(*p);
            }
            cache.pool().injectFailure(kDisarm);
            EXPECT_EQ(failure.code(), ErrorCode::Io) << "handed " << handed;
            EXPECT_NE(failure.message().find("injected"), std::string::npos);
            // Closed by the error: a new layer may open, and next() on the closed one says -1.
            SwiGluView none;
            Result<int> closed = cache.next(&none);
            ASSERT_TRUE(closed.isOk());
            EXPECT_EQ(*closed, -1);
            cache.waitIdle();
            ASSERT_TRUE(cache.checkConsistency().isOk()) << cache_test::state(cache);
            ASSERT_TRUE(cache.beginLayer(layer, experts).isOk());
            int again = 0;
            for (;;) {
                SwiGluView v;
                Result<int> p = cache.next(&v);
                ASSERT_TRUE(p.isOk()) << p.status().toString();
                if (*p < 0) break;
                ASSERT_EQ(fx.checkView({layer, experts[size_t(*p)]}, v), "");
                ++again;
                cache.finished(*p);
            }
            EXPECT_EQ(again, int(experts.size()));
        }
        cache.waitIdle();
        EXPECT_TRUE(cache.checkConsistency().isOk()) << cache_test::state(cache);
        const tiers::TierCounters c = cache.telemetry().counters;
        cache_test::expectCoherent(c);
        EXPECT_EQ(c.failedReads, 50u);
    }
}

// Driven directly: a prefetch read fails, either before its layer opens (settle: the failure has
// landed, the slot is freed and the layer misses) or after (the layer opens at once and finds the
// read in flight: an in-flight hit). Either way a failed prefetch must not fail the layer: the
// expert is read again on demand. *reported: the rounds whose layer reported an error.
void prefetchFailureRounds(bool settle, int* reported) {
    const CacheFixture& fx = CacheFixture::get("qwen3moe");
    ASSERT_TRUE(fx.error.empty()) << fx.error;
    auto made = cache_test::makeCache(fx, aio::IoBackend::Auto, 4, false);
    ASSERT_TRUE(made.isOk()) << made.status().toString();
    tiers::ExpertCache& cache = **made;
    const int l0 = fx.sparseLayers[0], l1 = fx.sparseLayers[1];
    *reported = 0;
    for (int round = 0; round < 100; ++round) {
        SCOPED_TRACE("round " + std::to_string(round));
        std::vector<int> want;
        for (int j = 0; j < fx.cfg.topK; ++j)
            want.push_back((round + j * 5) % fx.cfg.nExperts);
        // Make room: layer l0's experts, finished (an earlier layer: the prefetch may displace
        // them).
        std::vector<int> fill;
        for (int e = 0; e < fx.cfg.nExperts; ++e)
            fill.push_back(e);
        ASSERT_TRUE(cache.beginLayer(l0, fill).isOk());
        for (;;) {
            SwiGluView v;
            Result<int> p = cache.next(&v);
            ASSERT_TRUE(p.isOk());
            if (*p < 0) break;
            cache.finished(*p);
        }
        cache.endTokens(64); // l1's earlier experts cool down: the fill above displaced them
        cache.waitIdle();
        const tiers::TierCounters before = cache.telemetry().counters;
        const uint64_t failedBefore = before.failedReads;
        cache.pool().injectFailure(0);
        cache.prefetch(l1, want);
        const bool issued = cache.telemetry().counters.prefetchIssued > before.prefetchIssued;
        ASSERT_TRUE(issued) << "no prefetch read started";
        if (settle) cache.waitIdle();
        ASSERT_TRUE(cache.beginLayer(l1, want).isOk());
        int handed = 0;
        Status failure;
        for (;;) {
            SwiGluView v;
            Result<int> p = cache.next(&v);
            if (!p) {
                failure = p.status();
                break;
            }
            if (*p < 0) break;
            ASSERT_EQ(fx.checkView({l1, want[size_t(*p)]}, v), "");
            ++handed;
            cache.finished(*p);
        }
        cache.pool().injectFailure(kDisarm);
        cache.waitIdle();
        ASSERT_TRUE(cache.checkConsistency().isOk()) << cache_test::state(cache);
        const uint64_t failedNow = cache.telemetry().counters.failedReads;
        EXPECT_EQ(failedNow, failedBefore + 1);
        if (!failure.isOk()) {
            EXPECT_EQ(failure.code(), ErrorCode::Io);
            ++*reported;
        } else {
            EXPECT_EQ(handed, fx.cfg.topK);
        }
    }
    cache_test::expectCoherent(cache.telemetry().counters);
}

TEST(CacheFailureDirect, FailedPrefetchIsReadAgainOnDemand) {
    int reported = -1;
    prefetchFailureRounds(true, &reported);
    EXPECT_EQ(reported, 0);
}

// The open layer found the prefetch read in flight (an in-flight hit), then it failed: the layer
// must read the expert again, not fail (recording every wanted slot's failure failed 100 of 100).
TEST(CacheFailureDirect, FailedInFlightPrefetchIsReadAgainOnDemand) {
    int reported = -1;
    prefetchFailureRounds(false, &reported);
    EXPECT_EQ(reported, 0) << reported << " of 100 layers failed because a prefetch read failed";
}

} // namespace
