// GenerateStats' time split and per-turn tier counters (runtime/session.h): the five parts are a
// partition of generate()'s wall time as measured around the call, the compute regions are seen,
// a small RAM budget shows reads, and the tier counters are the turn's own (not cumulative).
// No speed is asserted: only shares, signs and counts.
#include "fixture_dir.h"

#include "runtime/session.h"
#include "tiers/expert_cache.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>

using namespace coli;
using namespace coli::test;

namespace {

std::unique_ptr<LoadedModel> load(const std::string& family, bool stream,
                                  ForwardPath path = ForwardPath::Fast) {
    ModelLoadOptions o;
    o.path = path;
    o.tiers.stream = stream;
    o.tiers.ramBudgetBytes = 0; // the minimum working set: experts are read again and again
    auto lm = LoadedModel::load(fixturePath(family), o);
    EXPECT_TRUE(lm.isOk()) << lm.status().toString();
    return lm ? std::move(lm.value()) : nullptr;
}

GenerateParams greedy(int n) {
    GenerateParams p;
    p.maxNewTokens = n;
    p.sampler.temperature = 0;
    p.ignoreEos = true;
    return p;
}

std::vector<int32_t> goldenPrompt(const std::string& family) {
    return readJson(fixturePath(family) + "/golden.json")["greedy"]["prompt"]
        .get<std::vector<int32_t>>();
}

// Runs one turn and checks that the split is a partition of the wall time measured here.
GenerateStats runAndCheckPartition(Session& s, const std::vector<int32_t>& prompt, int n) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = s.generate(prompt, greedy(n), {});
    const double measured =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    if (!r) return {};
    const GenerateStats& st = r.value();
    const TimeSplit& t = st.time;
    for (double part : {t.attention, t.expertFfn, t.expertWait, t.sampling, t.other})
        EXPECT_GE(part, 0.0);
    // The parts add up to the call's own wall time (other is the remainder) ...
    EXPECT_NEAR(t.total(), st.wallSeconds, 1e-9);
    // ... and that is the wall time seen by the caller, within 0.02 of it.
    EXPECT_NEAR(t.total() / measured, 1.0, 0.02)
        << "total " << t.total() << " s, measured " << measured << " s";
    double shares = 0;
    for (double part : {t.attention, t.expertFfn, t.expertWait, t.sampling, t.other})
        shares += t.share(part);
    EXPECT_NEAR(shares, 1.0, 1e-9);
    EXPECT_GT(t.attention, 0.0);
    EXPECT_GT(t.expertFfn, 0.0);
    return st;
}

} // namespace

TEST(TimeSplit, StreamedExpertsWithTheMinimumBudget) {
    auto lm = load("qwen3moe", /*stream=*/true);
    ASSERT_NE(lm, nullptr);
    ASSERT_NE(lm->model().expertCache(), nullptr);
    Session s(*lm);
    const auto prompt = goldenPrompt("qwen3moe");
    const GenerateStats st = runAndCheckPartition(s, prompt, 48);
    ASSERT_EQ(st.generatedTokens, 48);
    // The working set alone cannot hold the model's experts: the turn read some, and waited.
    const tiers::TierCounters& c = st.tiers;
    EXPECT_TRUE(st.time.expertWait > 0 || c.misses > 0);
    EXPECT_GT(c.misses, 0u);
    EXPECT_GT(c.bytesRead, 0u);
    EXPECT_GT(c.routed, 0u);
    EXPECT_EQ(c.routed, c.hitsPinned + c.hitsCache + c.misses);
    EXPECT_DOUBLE_EQ(st.time.expertWait, c.ioWaitSeconds);
    // Every token run through the model: the prompt, then every sampled token but the last.
    EXPECT_EQ(c.tokens, uint64_t(st.promptTokens - st.reusedTokens + st.generatedTokens - 1));
    EXPECT_GE(tiers::hitRate(c), 0.0);
    EXPECT_LT(tiers::hitRate(c), 1.0);
    EXPECT_DOUBLE_EQ(tiers::bytesReadPerToken(c), double(c.bytesRead) / double(c.tokens));
}

// A second turn's counters are its own: the difference of the cache's cumulative counters.
TEST(TimeSplit, TierCountersArePerTurn) {
    auto lm = load("qwen3moe", /*stream=*/true);
    ASSERT_NE(lm, nullptr);
    tiers::ExpertCache& cache = *lm->model().expertCache();
    Session s(*lm);
    auto prompt = goldenPrompt("qwen3moe");
    const tiers::TierCounters start = cache.counters();
    const GenerateStats a = runAndCheckPartition(s, prompt, 24);
    prompt.insert(prompt.end(), a.generatedIds.begin(), a.generatedIds.end());
    prompt.push_back(prompt.front());
    const GenerateStats b = runAndCheckPartition(s, prompt, 24);
    ASSERT_EQ(b.reusedTokens, int(prompt.size()) - 2); // only the new tokens ran
    EXPECT_EQ(b.tiers.tokens, uint64_t(2 + b.generatedTokens - 1));
    const tiers::TierCounters total = cache.counters() - start;
    EXPECT_EQ(a.tiers.routed + b.tiers.routed, total.routed);
    EXPECT_EQ(a.tiers.misses + b.tiers.misses, total.misses);
    EXPECT_EQ(a.tiers.bytesRead + b.tiers.bytesRead, total.bytesRead);
    EXPECT_EQ(a.tiers.tokens + b.tiers.tokens, total.tokens);
}

// The turn's counters split at the end of the prefill: the prompt's tokens and the decode steps'
// apart, adding up to the turn's, with the decode's read per token as the per-step figure.
TEST(TimeSplit, TierCountersSplitIntoPrefillAndDecode) {
    auto lm = load("qwen3moe", /*stream=*/true);
    ASSERT_NE(lm, nullptr);
    tiers::ExpertCache& cache = *lm->model().expertCache();
    ASSERT_TRUE(cache.setBudget(cache.minimumBudget()).isOk()); // every step reads
    Session s(*lm);
    const auto prompt = goldenPrompt("qwen3moe");
    const GenerateStats st = runAndCheckPartition(s, prompt, 24);
    ASSERT_GT(st.generatedTokens, 1);
    EXPECT_EQ(st.tiersPrefill.tokens, uint64_t(prompt.size()));
    EXPECT_EQ(st.tiersDecode.tokens, uint64_t(st.generatedTokens - 1));
    EXPECT_EQ(st.tiersPrefill.routed + st.tiersDecode.routed, st.tiers.routed);
    EXPECT_EQ(st.tiersPrefill.misses + st.tiersDecode.misses, st.tiers.misses);
    EXPECT_EQ(st.tiersPrefill.bytesRead + st.tiersDecode.bytesRead, st.tiers.bytesRead);
    EXPECT_GT(st.tiersPrefill.bytesRead, 0u);
    EXPECT_GT(st.tiersDecode.bytesRead, 0u);
    // A decode step routes top-k experts per MoE layer on its own: the routed count per decode
    // token is the model's, while a prefill chunk shares experts between its tokens.
    const double routedPerDecodeToken =
        double(st.tiersDecode.routed) / double(st.tiersDecode.tokens);
    const double routedPerPromptToken =
        double(st.tiersPrefill.routed) / double(st.tiersPrefill.tokens);
    EXPECT_GT(routedPerDecodeToken, routedPerPromptToken);
}

// Resident experts: no waiting, no tier counters; a shared expert and the Reference path are timed.
TEST(TimeSplit, ResidentExpertsOnBothPaths) {
    for (ForwardPath path : {ForwardPath::Fast, ForwardPath::Reference}) {
        SCOPED_TRACE(path == ForwardPath::Fast ? "fast" : "reference");
        auto lm = load("qwen2moe", /*stream=*/false, path);
        ASSERT_NE(lm, nullptr);
        ASSERT_EQ(lm->model().expertCache(), nullptr);
        Session s(*lm);
        const GenerateStats st = runAndCheckPartition(s, goldenPrompt("qwen2moe"), 64);
        EXPECT_EQ(st.time.expertWait, 0.0);
        EXPECT_EQ(st.tiers.routed, 0u);
        EXPECT_EQ(st.tiers.tokens, 0u);
        EXPECT_EQ(tiers::hitRate(st.tiers), 0.0);
        EXPECT_EQ(tiers::bytesReadPerToken(st.tiers), 0.0);
    }
}

// A turn cancelled before it starts still reports a partition of its (short) time.
TEST(TimeSplit, CancelledTurnIsStillAPartition) {
    auto lm = load("qwen3moe", /*stream=*/true);
    ASSERT_NE(lm, nullptr);
    Session s(*lm);
    std::atomic<bool> cancel{true};
    auto r = s.generate(goldenPrompt("qwen3moe"), greedy(8), {}, &cancel);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    EXPECT_EQ(r->stopReason, StopReason::Cancelled);
    EXPECT_NEAR(r->time.total(), r->wallSeconds, 1e-9);
    EXPECT_EQ(r->time.attention, 0.0);
    EXPECT_EQ(r->tiers.tokens, 0u);
}
