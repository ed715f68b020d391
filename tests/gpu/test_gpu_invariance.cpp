// The VRAM tier changes speed, never the tokens (docs/gpu.md): on every fixture family's int4
// colibri container, the shipped default model's, and an int8 in-memory quantisation, computing
// routed experts on the Vulkan test device (lavapipe here) with a VRAM budget holding all of them,
// half of them (admitted as routed, hotter ones replacing colder ones) or one, gives the same
// greedy tokens and bit-identical final logits as the CPU alone; so do the containers' streamed
// experts (the expert cache) at the minimum RAM budget and with every expert in RAM, with VRAM for
// half or all of the experts. The counters show that experts really ran on the device.
#include "convert/converter.h"
#include "forward/model.h"
#include "gpu_test_device.h"
#include "st_writer.h"
#include "tiers/expert_cache.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

using namespace coli;

namespace {

struct Run {
    std::vector<int32_t> tokens;
    std::vector<float> finalLogits;
};

int argmax(const std::vector<float>& v) {
    int best = 0;
    for (int i = 1; i < int(v.size()); ++i)
        if (v[size_t(i)] > v[size_t(best)]) best = i;
    return best;
}

// A 40-token prompt (two chunks: batch-union with gathered rows, then a chunk of 8), then 6
// greedy tokens one by one.
Run generate(const Model& m) {
    Run r;
    const int V = m.config().vocabSize;
    std::vector<int32_t> prompt;
    for (int i = 0; i < 40; ++i)
        prompt.push_back(int32_t((i * 37 + 11) % V));
    KVCache kv;
    std::vector<float> logits;
    Status st = m.forward(prompt, kv, logits);
    EXPECT_TRUE(st.isOk()) << st.toString();
    for (int i = 0; st.isOk() && i < 6; ++i) {
        const int32_t next[1] = {argmax(logits)};
        r.tokens.push_back(next[0]);
        st = m.forward(next, kv, logits);
        EXPECT_TRUE(st.isOk()) << st.toString();
    }
    r.finalLogits = logits;
    return r;
}

// The same greedy tokens and the same final logits, bit for bit.
void expectSame(const Run& got, const Run& want) {
    EXPECT_EQ(got.tokens, want.tokens);
    ASSERT_EQ(got.finalLogits.size(), want.finalLogits.size());
    EXPECT_EQ(0, std::memcmp(got.finalLogits.data(), want.finalLogits.data(),
                             want.finalLogits.size() * sizeof(float)))
        << "final logits differ";
}

std::string selfTestCache() {
    static const std::string p = (std::filesystem::temp_directory_path() /
                                  ("coli-gpu-inv-" + std::to_string(::getpid()) + ".json"))
                                     .string();
    return p;
}

std::string container(const std::string& src) {
    static st_test::TempDir tmp;
    static std::map<std::string, std::string> dirs;
    auto it = dirs.find(src);
    if (it != dirs.end()) return it->second;
    const std::string dst = (tmp.path() / std::to_string(dirs.size())).string();
    auto rep = convert::convertCheckpoint(src, dst, convert::ConvertOptions{});
    EXPECT_TRUE(rep.isOk()) << rep.status().toString();
    return dirs[src] = rep.isOk() ? dst : std::string();
}

void checkModel(const std::string& path, bool streams,
                const WeightQuantisation& quantisation = {}) {
    ASSERT_FALSE(path.empty());
    ModelLoadOptions base;
    base.threads = 2;
    base.quantisation = quantisation;
    auto cpu = Model::load(path, base);
    ASSERT_TRUE(cpu.isOk()) << cpu.status().toString();
    const Run want = generate(**cpu);
    ASSERT_EQ(want.tokens.size(), 6u);
    int total = 0;
    for (int l = 0; l < (*cpu)->config().nLayers; ++l)
        total += (*cpu)->config().sparseLayer[size_t(l)] ? (*cpu)->config().nExperts : 0;
    uint64_t per = 0; // bytes of one expert in VRAM, from the first (all-experts) run

    for (const int share : {100, 50, 0}) {
        SCOPED_TRACE(path + ", VRAM for " + std::to_string(share) + " % of the experts");
        ModelLoadOptions o = base;
        o.tiers.gpu = coli::gpu::testing::testDeviceSpec();
        o.tiers.gpuSelfTestCache = selfTestCache();
        const int slots = share ? std::max(1, total * share / 100) : 1;
        o.tiers.vramBudgetBytes = share == 100 ? 0 : uint64_t(slots) * per + per / 2;
        o.tiers.gpuTestFlagEvery = share == 50 ? 3 : 0; // the CPU recomputes flagged experts
        o.tiers.gpuTestStaging = share == 50;           // copies through the staging ring
        auto m = Model::load(path, o);
        ASSERT_TRUE(m.isOk()) << m.status().toString();
        ASSERT_TRUE((*m)->gpuActive()) << (*m)->gpuNote();
        const Run got = generate(**m);
        expectSame(got, want);
        const GpuCounters c = (*m)->gpuCounters();
        per = c.expertBytes;
        std::printf("%s: VRAM %d/%d experts, %lld experts and %lld token jobs on the GPU, %lld "
                    "flagged, %lld evictions\n",
                    path.c_str(), c.resident, c.capacity, (long long)c.experts, (long long)c.jobs,
                    (long long)c.flagged, (long long)c.evictions);
        EXPECT_EQ(c.capacity, slots);
        EXPECT_GT(c.experts, 0);
        EXPECT_GE(c.jobs, c.experts);
        if (share == 50) {
            EXPECT_GT(c.flagged, 0);
            EXPECT_GT(c.evictions, 0) << "hotter experts replace colder ones (VramPlacement)";
        }
        if (share == 100) {
            EXPECT_EQ(c.evictions, 0) << "everything fits: nothing is ever evicted";
        }
        EXPECT_LE(c.resident, c.capacity);
        if (share == 100) {
            EXPECT_EQ(c.resident, total);
        }
    }
    if (!streams) return;

    // Streamed experts (the expert cache), RAM budget minimum and all, crossed with VRAM for half
    // of the experts and for all of them: experts enter VRAM as they are routed, from the RAM
    // slot they were computed from; the cache counts them as VRAM hits.
    for (const bool ramAll : {false, true})
        for (const int share : {50, 100}) {
            // RAM minimum with VRAM for half: every 3rd GPU job counts as flagged, so experts go
            // back through the cache to the CPU (ExpertCache::wantOnCpu).
            const int flagEvery = !ramAll && share == 50 ? 3 : 0;
            SCOPED_TRACE(path + ", streamed, RAM " + (ramAll ? "all" : "minimum") + ", VRAM " +
                         std::to_string(share) + " %");
            ModelLoadOptions o = base;
            o.tiers.stream = true;
            o.tiers.gpu = coli::gpu::testing::testDeviceSpec();
            o.tiers.gpuSelfTestCache = selfTestCache();
            o.tiers.gpuTestFlagEvery = flagEvery;
            o.tiers.gpuTestStaging = share == 50; // copies through the staging ring
            const int slots = std::max(1, total * share / 100);
            o.tiers.vramBudgetBytes = uint64_t(slots) * per + per / 2;
            auto m = Model::load(path, o);
            ASSERT_TRUE(m.isOk()) << m.status().toString();
            ASSERT_TRUE((*m)->gpuActive()) << (*m)->gpuNote();
            tiers::ExpertCache* cache = (*m)->expertCache();
            ASSERT_NE(cache, nullptr);
            ASSERT_TRUE(
                cache->setBudget(ramAll ? uint64_t(total + 8) * cache->slotBytes() : 0).isOk());
            const Run got = generate(**m);
            expectSame(got, want);
            const GpuCounters c = (*m)->gpuCounters();
            cache->waitIdle();
            EXPECT_TRUE(cache->checkConsistency().isOk()) << cache->checkConsistency().toString();
            const tiers::TierTelemetry t = cache->telemetry();
            std::printf("%s: streamed, RAM %s, VRAM %d/%d experts: %lld experts on the GPU, %lld "
                        "evictions, %llu VRAM hits of %llu routed, %.1f MiB read\n",
                        path.c_str(), ramAll ? "all" : "minimum", c.resident, c.capacity,
                        (long long)c.experts, (long long)c.evictions,
                        (unsigned long long)t.counters.hitsVram,
                        (unsigned long long)t.counters.routed,
                        double(t.counters.bytesRead) / 1048576.0);
            EXPECT_GT(c.experts, 0);
            EXPECT_GT(c.resident, 0);
            if (flagEvery) {
                EXPECT_GT(c.flagged, 0);
            }
            EXPECT_EQ(t.counters.hitsVram + t.counters.hitsPinned + t.counters.hitsCache +
                          t.counters.misses,
                      t.counters.routed);
            EXPECT_GT(t.counters.hitsVram, 0u);
            EXPECT_EQ(t.residency.vramExperts, c.resident);
            EXPECT_EQ(t.residency.vramCapacity, c.capacity);
            int vramStates = 0;
            for (uint8_t st : t.experts.state)
                vramStates += (st & tiers::kExpertStateMask) == uint8_t(tiers::ExpertState::Vram);
            EXPECT_EQ(vramStates, c.resident);
        }
}

const char* kFamilies[] = {"olmoe",      "qwen2moe",   "qwen3moe",  "mixtral",
                           "granitemoe", "deepseekv2", "deepseekv3"};

class GpuInvariance : public ::testing::TestWithParam<const char*> {};

TEST_P(GpuInvariance, Int4ContainerSameTokensAndLogits) {
    COLI_GPU_CONTEXT_OR_SKIP(ctx);
    checkModel(container(std::string(COLI_FIXTURE_DIR) + "/" + GetParam()), true);
}

INSTANTIATE_TEST_SUITE_P(Families, GpuInvariance, ::testing::ValuesIn(kFamilies));

TEST(GpuInvarianceDefaultModel, Int4Container) {
    COLI_GPU_CONTEXT_OR_SKIP(ctx);
    checkModel(container(COLI_SHIPPED_MODEL_DIR), true);
}

// Learned VRAM pins (Model::setVramPins): resident experts are copied before the first token,
// streamed ones when first routed; pins are never evicted though the tier evicts others; the
// tokens and logits stay the CPU's.
TEST(GpuInvarianceDefaultModel, VramPinsStayAndChangeNoBit) {
    COLI_GPU_CONTEXT_OR_SKIP(ctx);
    const std::string path = container(COLI_SHIPPED_MODEL_DIR);
    ModelLoadOptions base;
    base.threads = 2;
    auto cpu = Model::load(path, base);
    ASSERT_TRUE(cpu.isOk()) << cpu.status().toString();
    const ::Run want = generate(**cpu);
    const ModelConfig& cfg = (*cpu)->config();
    std::vector<tiers::ExpertId> hottest; // an arbitrary "learned" order: two per layer
    for (int l = 0; l < cfg.nLayers; ++l)
        if (cfg.sparseLayer[size_t(l)])
            for (int e : {5, 2})
                hottest.push_back({l, e});
    for (const bool streamed : {false, true}) {
        SCOPED_TRACE(streamed ? "streamed" : "resident");
        ModelLoadOptions o = base;
        o.tiers.stream = streamed;
        o.tiers.gpu = coli::gpu::testing::testDeviceSpec();
        o.tiers.gpuSelfTestCache = selfTestCache();
        auto probe = Model::load(path, o);
        ASSERT_TRUE(probe.isOk()) << probe.status().toString();
        const uint64_t per = (*probe)->gpuCounters().expertBytes;
        ASSERT_GT(per, 0u);
        o.tiers.vramBudgetBytes = 24 * per + per / 2; // 24 slots: 12 for pins
        auto m = Model::load(path, o);
        ASSERT_TRUE(m.isOk()) << m.status().toString();
        ASSERT_EQ((*m)->vramPinCapacity(), 12);
        const std::vector<tiers::ExpertId> pins = (*m)->setVramPins(hottest);
        ASSERT_EQ(pins.size(), 12u);
        const GpuCounters atStart = (*m)->gpuCounters();
        EXPECT_EQ(atStart.resident, streamed ? 0 : 12) << "resident pins are copied at once";
        const ::Run got = generate(**m);
        expectSame(got, want);
        const GpuCounters c = (*m)->gpuCounters();
        EXPECT_GT(c.evictions, 0);
        EXPECT_EQ((*m)->vramPins().size(), 12u);
        std::printf("%s pins: %d/%d resident, %lld evictions, %lld experts on the GPU\n",
                    streamed ? "streamed" : "resident", c.resident, c.capacity,
                    (long long)c.evictions, (long long)c.experts);
        if (!streamed) continue;
        // Every pin the text routed is in VRAM and stayed there.
        const tiers::ExpertMap map = (*m)->expertCache()->telemetry().experts;
        int routedPins = 0;
        for (const tiers::ExpertId& id : pins) {
            const size_t k = size_t(id.layer) * size_t(map.nExperts) + size_t(id.expert);
            if (map.hits[k] == 0) continue;
            ++routedPins;
            EXPECT_EQ(map.state[k] & tiers::kExpertStateMask, uint8_t(tiers::ExpertState::Vram))
                << "layer " << id.layer << " expert " << id.expert;
        }
        EXPECT_GT(routedPins, 0);
    }
}

// The VRAM budget changed at run time (Model::setVramBudget): down to 4 experts and back to all,
// resident and streamed; the tier follows (capacity, residency, the expert cache's map and RAM
// split), the tokens and logits stay the CPU's; a budget below one expert and a model without a
// GPU tier are refused.
TEST(GpuInvarianceDefaultModel, VramBudgetChangesAtRunTime) {
    COLI_GPU_CONTEXT_OR_SKIP(ctx);
    const std::string path = container(COLI_SHIPPED_MODEL_DIR);
    ModelLoadOptions base;
    base.threads = 2;
    auto cpu = Model::load(path, base);
    ASSERT_TRUE(cpu.isOk()) << cpu.status().toString();
    const ::Run want = generate(**cpu);
    EXPECT_EQ((*cpu)->setVramBudget(1 << 20).code(), ErrorCode::Unsupported);
    EXPECT_EQ((*cpu)->vramBudget(), 0u);
    for (const bool streamed : {false, true}) {
        SCOPED_TRACE(streamed ? "streamed" : "resident");
        ModelLoadOptions o = base;
        o.tiers.stream = streamed;
        o.tiers.gpu = coli::gpu::testing::testDeviceSpec();
        o.tiers.gpuSelfTestCache = selfTestCache();
        auto m = Model::load(path, o);
        ASSERT_TRUE(m.isOk()) << m.status().toString();
        ASSERT_TRUE((*m)->gpuActive()) << (*m)->gpuNote();
        expectSame(generate(**m), want);
        const GpuCounters all = (*m)->gpuCounters();
        const uint64_t per = all.expertBytes;
        EXPECT_EQ((*m)->setVramBudget(per - 1).code(), ErrorCode::InvalidArgument);
        ASSERT_TRUE((*m)->setVramBudget(4 * per + per / 2).isOk());
        EXPECT_EQ((*m)->vramBudget(), 4 * per);
        GpuCounters c = (*m)->gpuCounters();
        EXPECT_EQ(c.capacity, 4);
        EXPECT_LE(c.resident, 4);
        if (streamed) {
            const tiers::TierTelemetry t = (*m)->expertCache()->telemetry();
            EXPECT_EQ(t.residency.vramCapacity, 4);
            EXPECT_EQ(t.residency.vramExperts, c.resident);
            EXPECT_TRUE((*m)->expertCache()->checkConsistency().isOk());
        }
        expectSame(generate(**m), want);
        ASSERT_TRUE((*m)->setVramBudget(uint64_t(all.capacity) * per).isOk());
        c = (*m)->gpuCounters();
        EXPECT_EQ(c.capacity, all.capacity);
        expectSame(generate(**m), want);
        c = (*m)->gpuCounters();
        std::printf("%s: VRAM budget all -> 4 -> all experts: %d/%d resident after, %lld "
                    "evictions, %lld experts on the GPU\n",
                    streamed ? "streamed" : "resident", c.resident, c.capacity,
                    (long long)c.evictions, (long long)c.experts);
        EXPECT_GT(c.resident, 4);
        if (streamed) {
            int vramStates = 0;
            for (uint8_t st : (*m)->expertCache()->telemetry().experts.state)
                vramStates += (st & tiers::kExpertStateMask) == uint8_t(tiers::ExpertState::Vram);
            EXPECT_EQ(vramStates, c.resident);
        }
    }
}

TEST(GpuInvarianceDefaultModel, Int8InMemory) {
    COLI_GPU_CONTEXT_OR_SKIP(ctx);
    WeightQuantisation q;
    q.experts = quant::WeightFormat::Q8_G64;
    checkModel(COLI_SHIPPED_MODEL_DIR, false, q);
}

} // namespace
