// The VRAM tier changes speed, never the tokens (docs/gpu.md): on every fixture family's int4
// colibri container, the shipped default model's, and an int8 in-memory quantisation, computing
// routed experts on the Vulkan test device (lavapipe here) with a VRAM budget holding all of them,
// half of them (the rest admitted as routed until full, then on the CPU) or one, gives the same
// greedy tokens and bit-identical final logits as the CPU alone. The counters show that experts
// really ran on the device.
#include "convert/converter.h"
#include "forward/model.h"
#include "gpu_test_device.h"
#include "st_writer.h"

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

void checkModel(const std::string& path, const WeightQuantisation& quantisation = {}) {
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
        auto m = Model::load(path, o);
        ASSERT_TRUE(m.isOk()) << m.status().toString();
        ASSERT_TRUE((*m)->gpuActive()) << (*m)->gpuNote();
        const Run got = generate(**m);
        EXPECT_EQ(got.tokens, want.tokens);
        ASSERT_EQ(got.finalLogits.size(), want.finalLogits.size());
        EXPECT_EQ(0, std::memcmp(got.finalLogits.data(), want.finalLogits.data(),
                                 want.finalLogits.size() * sizeof(float)))
            << "final logits differ";
        const GpuCounters c = (*m)->gpuCounters();
        per = c.expertBytes;
        std::printf("%s: VRAM %d/%d experts, %lld experts and %lld token jobs on the GPU, %lld "
                    "flagged\n",
                    path.c_str(), c.resident, c.capacity, (long long)c.experts, (long long)c.jobs,
                    (long long)c.flagged);
        EXPECT_EQ(c.capacity, slots);
        EXPECT_GT(c.experts, 0);
        EXPECT_GE(c.jobs, c.experts);
        EXPECT_LE(c.resident, c.capacity);
        if (share == 100) {
            EXPECT_EQ(c.resident, total);
        }
    }
}

const char* kFamilies[] = {"olmoe",      "qwen2moe",   "qwen3moe",  "mixtral",
                           "granitemoe", "deepseekv2", "deepseekv3"};

class GpuInvariance : public ::testing::TestWithParam<const char*> {};

TEST_P(GpuInvariance, Int4ContainerSameTokensAndLogits) {
    COLI_GPU_CONTEXT_OR_SKIP(ctx);
    checkModel(container(std::string(COLI_FIXTURE_DIR) + "/" + GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Families, GpuInvariance, ::testing::ValuesIn(kFamilies));

TEST(GpuInvarianceDefaultModel, Int4Container) {
    COLI_GPU_CONTEXT_OR_SKIP(ctx);
    checkModel(container(COLI_SHIPPED_MODEL_DIR));
}

TEST(GpuInvarianceDefaultModel, Int8InMemory) {
    COLI_GPU_CONTEXT_OR_SKIP(ctx);
    WeightQuantisation q;
    q.experts = quant::WeightFormat::Q8_G64;
    checkModel(COLI_SHIPPED_MODEL_DIR, q);
}

} // namespace
