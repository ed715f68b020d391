// The topic probe (engine/probe/topic_probe.h) on the shipped default model with a few prompts of
// its own topic set: counts add up exactly, runs are deterministic, windows and chunks change
// nothing of the totals, co-activation keeps each expert's strongest partners, small topics are
// refused, progress and cancel work, and a streamed model learns nothing from the probe.
#include "probe/topic_probe.h"
#include "tiers/expert_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

using namespace coli;
using namespace coli::probe;

namespace {

const std::string kModel = COLI_SHIPPED_MODEL_DIR;

// The first `prompts` prompts of the first `topics` topics of the shipped default set.
TopicSet smallSet(size_t topics = 3, size_t prompts = 3) {
    auto full = loadTopicSet(std::string(COLI_SOURCE_DIR) + "/resources/topics/default-model.json");
    EXPECT_TRUE(full.isOk()) << full.status().message();
    TopicSet s = *full;
    s.topics.resize(std::min(topics, s.topics.size()));
    for (Topic& t : s.topics)
        t.prompts.resize(std::min(prompts, t.prompts.size()));
    return s;
}

ProbeOptions small() {
    ProbeOptions o;
    o.minPrompts = 0;
    o.minTokens = 0;
    return o;
}

const LoadedModel& model() {
    static std::unique_ptr<LoadedModel> lm = [] {
        ModelLoadOptions o;
        o.threads = 1;
        auto r = LoadedModel::load(kModel, o);
        EXPECT_TRUE(r.isOk()) << r.status().message();
        return std::move(r.value());
    }();
    return *lm;
}

} // namespace

TEST(TopicProbe, CountsAddUpPerTopicLayerAndPrompt) {
    const TopicSet set = smallSet();
    auto r = runTopicProbe(model(), set, small());
    ASSERT_TRUE(r.isOk()) << r.status().message();
    const ModelConfig& c = model().model().config();
    EXPECT_EQ(r->nLayers, c.nLayers);
    EXPECT_EQ(r->nExperts, c.nExperts);
    EXPECT_EQ(r->topK, c.topK);
    ASSERT_EQ(r->topics.size(), 3u);
    int64_t all = 0;
    for (size_t t = 0; t < set.topics.size(); ++t) {
        int64_t tokens = 0;
        for (const std::string& p : set.topics[t].prompts)
            tokens += int64_t(model().tokenizer().encode(p, false).size());
        EXPECT_EQ(r->topics[t].tokens, tokens); // the prompts' own tokens: BOS not counted
        EXPECT_EQ(r->topics[t].prompts, 3);
        EXPECT_EQ(r->topics[t].id, set.topics[t].id);
        all += tokens;
        for (int layer : r->moeLayers) {
            int64_t slots = 0;
            double shares = 0;
            for (int e = 0; e < r->nExperts; ++e) {
                slots += r->slotsOf(int(t), layer, e);
                shares += r->share(int(t), layer, e);
            }
            EXPECT_EQ(slots, tokens * r->topK) << "topic " << t << " layer " << layer;
            EXPECT_NEAR(shares, 1.0, 1e-12);
        }
    }
    EXPECT_EQ(r->tokens, all);
    // The prompts' counts are the topics' counts, split.
    ASSERT_EQ(r->prompts.size(), 9u);
    std::vector<int64_t> summed(r->routedSlots.size(), 0);
    for (const PromptStats& p : r->prompts)
        for (int i = 0; i < r->nRouted(); ++i)
            summed[size_t(p.topic) * size_t(r->nRouted()) + size_t(i)] += p.routedSlots[size_t(i)];
    EXPECT_EQ(summed, r->routedSlots);
}

TEST(TopicProbe, DeterministicAndChunkingKeepsTheTotals) {
    const TopicSet set = smallSet(2, 2);
    auto a = runTopicProbe(model(), set, small());
    auto b = runTopicProbe(model(), set, small());
    ASSERT_TRUE(a.isOk() && b.isOk());
    EXPECT_EQ(a->routedSlots, b->routedSlots);
    ASSERT_EQ(a->coactivation.size(), b->coactivation.size());
    for (size_t i = 0; i < a->coactivation.size(); ++i) {
        EXPECT_EQ(a->coactivation[i].a, b->coactivation[i].a);
        EXPECT_EQ(a->coactivation[i].b, b->coactivation[i].b);
        EXPECT_EQ(a->coactivation[i].count, b->coactivation[i].count);
    }
    // Short windows (each from an empty cache after the BOS) and short chunks: every token
    // still counts once.
    ProbeOptions o = small();
    o.windowTokens = 9; // 8 prompt tokens per window
    o.chunkTokens = 3;
    auto w = runTopicProbe(model(), set, o);
    ASSERT_TRUE(w.isOk()) << w.status().message();
    for (size_t t = 0; t < 2; ++t) {
        EXPECT_EQ(w->topics[t].tokens, a->topics[t].tokens);
        int64_t windows = 0;
        for (const PromptStats& p : a->prompts)
            if (p.topic == int(t)) windows += (p.tokens + 7) / 8;
        EXPECT_EQ(w->topics[t].windows, windows);
        for (int layer : w->moeLayers) {
            int64_t slots = 0;
            for (int e = 0; e < w->nExperts; ++e)
                slots += w->slotsOf(int(t), layer, e);
            EXPECT_EQ(slots, w->topics[t].tokens * w->topK);
        }
    }
}

TEST(TopicProbe, CoactivationKeepsEveryExpertsStrongestPartners) {
    const TopicSet set = smallSet(2, 3);
    ProbeOptions all = small();
    all.partners = 1 << 20; // every pair
    ProbeOptions few = small();
    few.partners = 3;
    auto full = runTopicProbe(model(), set, all);
    auto kept = runTopicProbe(model(), set, few);
    ASSERT_TRUE(full.isOk() && kept.isOk());
    const int n = full->nRouted();
    std::vector<int64_t> routed(size_t(n), 0);
    for (size_t i = 0; i < full->routedSlots.size(); ++i)
        routed[i % size_t(n)] += full->routedSlots[i];
    std::map<std::pair<int, int>, uint32_t> keptPairs;
    for (const CoactivationCount& p : kept->coactivation)
        keptPairs[{p.a, p.b}] = p.count;
    std::vector<std::vector<std::pair<uint32_t, int>>> byExpert(static_cast<size_t>(n));
    for (const CoactivationCount& p : full->coactivation) {
        ASSERT_LT(p.a, p.b);
        EXPECT_GE(p.count, 1u);
        // Once per token and pair of layers: never more than either expert's routed tokens.
        EXPECT_LE(int64_t(p.count), std::min(routed[size_t(p.a)], routed[size_t(p.b)]));
        byExpert[size_t(p.a)].push_back({p.count, p.b});
        byExpert[size_t(p.b)].push_back({p.count, p.a});
        auto it = keptPairs.find({p.a, p.b});
        if (it != keptPairs.end()) {
            EXPECT_EQ(it->second, p.count);
        }
    }
    EXPECT_LT(kept->coactivation.size(), full->coactivation.size());
    for (int e = 0; e < n; ++e) {
        auto& list = byExpert[size_t(e)];
        std::sort(list.begin(), list.end(), [](auto x, auto y) {
            return x.first != y.first ? x.first > y.first : x.second < y.second;
        });
        for (size_t k = 0; k < std::min<size_t>(3, list.size()); ++k)
            EXPECT_TRUE(keptPairs.count({std::min(e, list[k].second), std::max(e, list[k].second)}))
                << "expert " << e << " partner " << list[k].second;
    }
}

TEST(TopicProbe, TopicsBelowTheMinimumAreRefusedByName) {
    const TopicSet set = smallSet(2, 3);
    auto r = runTopicProbe(model(), set); // issue 12's minimum: 20 prompts, 2,000 tokens
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), ErrorCode::InvalidArgument);
    const std::string m = r.status().message();
    EXPECT_NE(m.find("\"" + set.topics[0].id + "\" has 3 prompts"), std::string::npos) << m;
    EXPECT_NE(m.find("at least 20 prompts and 2000 tokens"), std::string::npos) << m;
    EXPECT_NE(m.find("default-model.json"), std::string::npos) << m;
}

TEST(TopicProbe, ProgressReachesTheTotalAndCancelStopsBetweenChunks) {
    const TopicSet set = smallSet(2, 2);
    std::vector<ProbeProgress> seen;
    auto r =
        runTopicProbe(model(), set, small(), [&](const ProbeProgress& p) { seen.push_back(p); });
    ASSERT_TRUE(r.isOk());
    ASSERT_GE(seen.size(), 3u);
    EXPECT_EQ(seen.front().tokensDone, 0);
    for (size_t i = 1; i < seen.size(); ++i) {
        EXPECT_GE(seen[i].tokensDone, seen[i - 1].tokensDone);
        EXPECT_EQ(seen[i].tokensTotal, r->tokens);
    }
    EXPECT_EQ(seen.back().tokensDone, r->tokens);
    EXPECT_EQ(seen.back().topic, 1);

    std::atomic<bool> cancel{false};
    int calls = 0;
    auto c = runTopicProbe(
        model(), set, small(),
        [&](const ProbeProgress& p) {
            ++calls;
            if (p.tokensDone > 0) cancel = true;
        },
        &cancel);
    ASSERT_FALSE(c.isOk());
    EXPECT_EQ(c.status().code(), ErrorCode::Cancelled);
    EXPECT_EQ(calls, 2); // the start, then one chunk: nothing after the flag
}

TEST(TopicProbe, AStreamedModelLearnsNothingFromTheProbe) {
    ModelLoadOptions o;
    o.threads = 1;
    o.tiers.stream = true;
    auto lm = LoadedModel::load(kModel, o);
    ASSERT_TRUE(lm.isOk()) << lm.status().message();
    tiers::ExpertCache* cache = lm.value()->model().expertCache();
    ASSERT_NE(cache, nullptr);
    cache->setTokenClock(1000);
    cache->setHeat({0, 3}, 5.0, 900);
    cache->setHeat({2, 7}, 1.5, 1000);
    const std::vector<double> heat = cache->heatSnapshot();
    const int64_t clock = cache->tokenClock();
    const uint64_t routed = cache->counters().routed;
    auto r = runTopicProbe(*lm.value(), smallSet(2, 2), small());
    ASSERT_TRUE(r.isOk()) << r.status().message();
    EXPECT_GT(cache->counters().routed, routed); // the probe's traffic went through the cache
    EXPECT_EQ(cache->tokenClock(), clock);       // ... but the learned clock did not move
    EXPECT_EQ(cache->heatSnapshot(), heat);      // ... nor any learned heat
    EXPECT_TRUE(cache->learning());              // learning is back on afterwards
    // And the counts are those of the resident model (placement never changes a routing).
    auto resident = runTopicProbe(model(), smallSet(2, 2), small());
    ASSERT_TRUE(resident.isOk());
    EXPECT_EQ(r->routedSlots, resident->routedSlots);
}
