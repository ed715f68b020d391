// Memory of streamed experts, measured (RSS from /proc/self/statm): a synthetic OLMoE checkpoint
// (tools/bigmodel/make_synthetic.py --scale-down 4: d_model 512, expert FFN 256, 4 layers x 16
// experts; an expert is 1.5 MiB in f32, 64 MiB of experts in all, ~34 MiB dense) is loaded
// resident and streamed at the minimum budget:
//   - streamed RSS growth <= dense (f32) + budget + the resident run's own overhead (workspace,
//     KV, runtime) + 8 MiB;
//   - with every expert cached (setBudget to all) and then setBudget(0), RSS drops by at least
//     80% of the slot bytes freed, both right away (what the app sees, no malloc_trim: slots are
//     anonymous mappings; heap blocks from aligned_alloc stayed resident, -0.0 MiB) and after
//     malloc_trim(0).
// Skipped (GTEST_SKIP, with the reason) when RSS cannot be read or Debian's python3-torch is
// missing. Label slow: the model is generated at run time (~5 s).
#include "cache_test_util.h"
#include "forward/model.h"

#include <cstdlib>
#include <malloc.h>
#include <random>

using namespace coli;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

uint64_t settledRss() {
    malloc_trim(0);
    return cache_test::rssBytes();
}

// A prompt and some decode steps; random tokens so that many experts are routed.
void generate(Model& m, int promptTokens, int steps, unsigned seed) {
    std::mt19937 rng(seed);
    auto tok = [&] {
        return std::uniform_int_distribution<int32_t>(0, m.config().vocabSize - 1)(rng);
    };
    std::vector<int32_t> prompt;
    for (int i = 0; i < promptTokens; ++i)
        prompt.push_back(tok());
    KVCache kv;
    std::vector<float> logits;
    ASSERT_TRUE(m.forward(prompt, kv, logits).isOk());
    for (int i = 0; i < steps; ++i) {
        const int32_t one[1] = {tok()};
        ASSERT_TRUE(m.forward(one, kv, logits).isOk());
    }
}

TEST(CacheMemory, StreamedRssIsDensePlusBudgetAndShrinkFrees) {
    if (cache_test::rssBytes() == 0) GTEST_SKIP() << "/proc/self/statm cannot be read here";
    if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0)
        GTEST_SKIP() << "/usr/bin/python3 with torch (python3-torch) is needed to generate the "
                        "synthetic checkpoint";
    st_test::TempDir tmp;
    const std::string dir = tmp.file("synthetic");
    const std::string cmd =
        "/usr/bin/python3 " COLI_SOURCE_DIR "/tools/bigmodel/make_synthetic.py --out '" + dir +
        "' --scale-down 4 --layers 4 --experts 16 --top-k 4 > '" + tmp.file("make.log") + "' 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;

    ModelLoadOptions base;
    base.threads = 2;
    const uint64_t r0 = settledRss();
    uint64_t residentGrowth = 0, denseF32 = 0, expertsF32 = 0;
    {
        auto m = Model::load(dir, base);
        ASSERT_TRUE(m.isOk()) << m.status().toString();
        const ModelConfig& c = (*m)->config();
        ASSERT_EQ(c.nExperts, 16);
        const uint64_t perExpert = 3ull * uint64_t(c.dModel) * uint64_t(c.expertFfn) * 4;
        expertsF32 = perExpert * uint64_t(c.nLayers) * uint64_t(c.nExperts);
        denseF32 = uint64_t((*m)->summary().totalParams) * 4 - expertsF32;
        generate(**m, 64, 16, 1);
        if (HasFatalFailure()) return;
        residentGrowth = cache_test::rssBytes() - r0;
    }
    // Workspace, KV cache, thread stacks, tables: what the resident run holds beyond weights.
    const int64_t overhead = int64_t(residentGrowth) - int64_t(denseF32 + expertsF32);

    const uint64_t r1 = settledRss();
    ModelLoadOptions o = base;
    o.tiers.stream = true;
    o.tiers.ramBudgetBytes = 0;
    auto m = Model::load(dir, o);
    ASSERT_TRUE(m.isOk()) << m.status().toString();
    tiers::ExpertCache* cache = (*m)->expertCache();
    ASSERT_NE(cache, nullptr);
    generate(**m, 64, 16, 1);
    if (HasFatalFailure()) return;
    cache->waitIdle();
    const uint64_t streamedGrowth = cache_test::rssBytes() - r1;
    const uint64_t budget = cache->budget();
    const uint64_t bound =
        denseF32 + budget + uint64_t(std::max<int64_t>(overhead, 0)) + 8 * 1024 * 1024;
    std::printf("experts f32 %.1f MiB, dense f32 %.1f MiB, slot %.2f MiB\n"
                "resident: RSS +%.1f MiB (overhead beyond weights %.1f MiB)\n"
                "streamed at the minimum budget %.1f MiB: RSS +%.1f MiB (bound %.1f MiB)\n",
                expertsF32 / kMiB, denseF32 / kMiB, cache->slotBytes() / kMiB,
                residentGrowth / kMiB, overhead / kMiB, budget / kMiB, streamedGrowth / kMiB,
                bound / kMiB);
    EXPECT_LE(streamedGrowth, bound);
    // Streaming really keeps the experts out: the saving is most of the experts' bytes.
    EXPECT_GE(double(residentGrowth) - double(streamedGrowth), 0.8 * double(expertsF32 - budget));

    // Everything cached, then the budget lowered at run time: the slots' memory goes back.
    const uint64_t all = cache->minimumBudget() + 64 * cache->slotBytes();
    ASSERT_TRUE(cache->setBudget(all).isOk());
    generate(**m, 96, 64, 2);
    if (HasFatalFailure()) return;
    cache->waitIdle();
    const uint64_t allocBig = cache->telemetry().residency.allocatedBytes;
    const uint64_t rBig = cache_test::rssBytes();
    ASSERT_TRUE(cache->setBudget(0).isOk());
    const uint64_t allocSmall = cache->telemetry().residency.allocatedBytes;
    const uint64_t rNoTrim = cache_test::rssBytes();
    const uint64_t rTrim = settledRss();
    const uint64_t freed = allocBig - allocSmall;
    std::printf("all cached: %.1f MiB of slots, RSS %.1f MiB; setBudget(0): %.1f MiB of slots, "
                "RSS %.1f MiB (-%.1f), after malloc_trim %.1f MiB (-%.1f); freed slots %.1f MiB\n",
                allocBig / kMiB, rBig / kMiB, allocSmall / kMiB, rNoTrim / kMiB,
                (double(rBig) - double(rNoTrim)) / kMiB, rTrim / kMiB,
                (double(rBig) - double(rTrim)) / kMiB, freed / kMiB);
    EXPECT_GT(allocBig, 40 * cache->slotBytes()) << "most experts should have been cached";
    EXPECT_LE(allocSmall, cache->minimumBudget());
    // What a running app sees (nobody calls malloc_trim): setBudget promises the memory now.
    // Slots from glibc's heap failed this: after the first large free glibc raises its mmap
    // threshold, later slots are heap blocks, and freed heap blocks stay resident.
    EXPECT_GE(double(rBig) - double(rNoTrim), 0.8 * double(freed))
        << "setBudget freed " << freed / kMiB << " MiB of slots but RSS dropped by "
        << (double(rBig) - double(rNoTrim)) / kMiB << " MiB (without malloc_trim)";
    EXPECT_GE(double(rBig) - double(rTrim), 0.8 * double(freed));
    EXPECT_TRUE(cache->checkConsistency().isOk()) << cache_test::state(*cache);
}

} // namespace
