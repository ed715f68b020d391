// The placement plan (engine/placement/placement_plan.h, plan_inputs.h): the shape read from each
// fixture model against values computed here from its config.json and safetensors headers, the
// plan's arithmetic at chosen budgets and rates, the budget's edge cases (0, everything fits),
// the heat formula on a hand-made heat table, and the trace hit rate against the simulator.
#include "cachesim/access_sequence.h"
#include "cachesim/simulator.h"
#include "forward/model.h"
#include "placement/memory_bandwidth.h"
#include "placement/placement_plan.h"
#include "placement/plan_inputs.h"
#include "runtime/expert_budget.h"
#include "tiers/expert_cache.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

namespace coli::placement {
namespace {

namespace fs = std::filesystem;

const char* kFamilies[] = {"olmoe",      "mixtral",    "qwen2moe",  "qwen3moe",
                           "granitemoe", "deepseekv2", "deepseekv3"};

nlohmann::json readJson(const fs::path& p) {
    std::ifstream f(p);
    return nlohmann::json::parse(f);
}

// config.json's integer `key`, or `fallback` when it is absent or null.
int64_t intOr(const nlohmann::json& c, const char* key, int64_t fallback) {
    return c.contains(key) && c[key].is_number() ? c[key].get<int64_t>() : fallback;
}

// What the plan should find, from config.json and the safetensors headers alone.
struct Expected {
    uint64_t denseBytes = 0, bytesPerExpert = 0, slotBytes = 0;
    int moeLayers = 0, expertsPerLayer = 0, topK = 0;
};

bool isRoutedExpert(const std::string& name) {
    // OLMoE / Qwen / Mixtral: "...experts.N...."; GraniteMoE: stacked input/output_linear.
    return name.find(".experts.") != std::string::npos ||
           name.find("block_sparse_moe.input_linear") != std::string::npos ||
           name.find("block_sparse_moe.output_linear") != std::string::npos;
}

Expected expectedFor(const fs::path& dir) {
    const nlohmann::json c = readJson(dir / "config.json");
    Expected e;
    e.topK = c["num_experts_per_tok"].get<int>();
    e.expertsPerLayer = int(
        intOr(c, "num_experts", intOr(c, "num_local_experts", intOr(c, "n_routed_experts", 0))));
    const int layers = c["num_hidden_layers"].get<int>();
    std::vector<int> mlpOnly;
    if (c.contains("mlp_only_layers") && c["mlp_only_layers"].is_array())
        mlpOnly = c["mlp_only_layers"].get<std::vector<int>>();
    const int step = int(intOr(c, "decoder_sparse_step", 1));
    const int firstDense = int(intOr(c, "first_k_dense_replace", 0)); // DeepSeek
    for (int l = firstDense; l < layers; ++l)
        if (std::find(mlpOnly.begin(), mlpOnly.end(), l) == mlpOnly.end() && (l + 1) % step == 0)
            ++e.moeLayers;
    const int64_t d = c["hidden_size"].get<int64_t>();
    const int64_t ffn = intOr(c, "moe_intermediate_size", c["intermediate_size"].get<int64_t>());
    // A checkpoint's experts are widened to f32 in RAM; a slot also stages the raw bytes when they
    // are not f32 already.
    const uint64_t widened = uint64_t(3 * d * ffn) * 4;
    bool rawF32 = true;

    uint64_t total = 0, experts = 0;
    for (const auto& entry : fs::directory_iterator(dir)) {
        if (entry.path().extension() != ".safetensors") continue;
        std::ifstream f(entry.path(), std::ios::binary);
        uint64_t n = 0;
        f.read(reinterpret_cast<char*>(&n), 8);
        std::string header(n, '\0');
        f.read(header.data(), std::streamsize(n));
        const nlohmann::json tensors = nlohmann::json::parse(header);
        for (auto it = tensors.begin(); it != tensors.end(); ++it) {
            const std::string& name = it.key();
            const nlohmann::json& t = it.value();
            if (name == "__metadata__") continue;
            // DeepSeek-V3's multi-token-prediction layer (model.layers.{num_hidden_layers}) is
            // not part of the model that runs.
            int layer = -1;
            if (std::sscanf(name.c_str(), "model.layers.%d.", &layer) == 1 && layer >= layers)
                continue;
            const uint64_t bytes =
                t["data_offsets"][1].get<uint64_t>() - t["data_offsets"][0].get<uint64_t>();
            total += bytes;
            if (isRoutedExpert(name)) {
                experts += bytes;
                rawF32 = rawF32 && t["dtype"] == "F32";
            }
        }
    }
    e.denseBytes = total - experts;
    e.bytesPerExpert = experts / uint64_t(e.moeLayers * e.expertsPerLayer);
    e.slotBytes = widened + (rawF32 ? 0 : e.bytesPerExpert);
    return e;
}

std::unique_ptr<Model> loadStreaming(const fs::path& dir) {
    ModelLoadOptions opt;
    opt.threads = 1;
    opt.tiers.stream = true;
    // Buffered reads: the slot is then f32 + the stored part (expectedFor); under O_DIRECT each
    // staged part is rounded out to whole 4096-byte blocks (docs/tiers.md "Buffered or O_DIRECT").
    opt.tiers.directIo = aio::DirectIo::Off;
    auto m = Model::load(dir.string(), opt);
    EXPECT_TRUE(m.isOk()) << m.status().message();
    return m ? std::move(m.value()) : nullptr;
}

TEST(PlanShape, FixturesMatchConfigAndHeaders) {
    for (const char* family : kFamilies) {
        SCOPED_TRACE(family);
        const fs::path dir = fs::path(COLI_FIXTURE_DIR) / family;
        const Expected e = expectedFor(dir);
        auto model = loadStreaming(dir);
        ASSERT_TRUE(model);
        auto shape = planShape(*model);
        ASSERT_TRUE(shape.isOk()) << shape.status().message();
        EXPECT_EQ(shape->denseBytes, e.denseBytes);
        EXPECT_EQ(shape->bytesPerExpert, e.bytesPerExpert);
        EXPECT_EQ(shape->slotBytes, e.slotBytes);
        EXPECT_EQ(shape->moeLayers, e.moeLayers);
        EXPECT_EQ(shape->expertsPerLayer, e.expertsPerLayer);
        EXPECT_EQ(shape->topK, e.topK);
        EXPECT_EQ(shape->workingSlots, e.topK + 4); // top-k + the default I/O queue depth
        EXPECT_EQ(shape->expertBytes(),
                  e.bytesPerExpert * uint64_t(e.moeLayers * e.expertsPerLayer));

        // The plan at a budget of 5 experts beyond the working set, h = 0.25, 10 GB/s, 1 GB/s.
        const uint64_t budget = uint64_t(e.topK + 4 + 5) * e.slotBytes + e.slotBytes / 2;
        auto p = makePlan(*shape, budget, 0.25, HitRateSource::Trace, 10e9, 1e9);
        ASSERT_TRUE(p.isOk()) << p.status().message();
        EXPECT_EQ(p->budgetBytes, budget);
        EXPECT_EQ(p->workingSetBytes, uint64_t(e.topK + 4) * e.slotBytes);
        EXPECT_EQ(p->expertsThatFit, 5);
        EXPECT_EQ(p->cachedExpertBytes, 5 * e.slotBytes);
        EXPECT_EQ(p->hitRateSource, HitRateSource::Trace);
        const double routed = double(e.moeLayers * e.topK);
        const double mem = double(e.denseBytes) + routed * double(e.slotBytes);
        const double disk = 0.75 * routed * double(e.bytesPerExpert);
        EXPECT_DOUBLE_EQ(p->memBytesPerToken, mem);
        EXPECT_DOUBLE_EQ(p->diskBytesPerToken, disk);
        EXPECT_DOUBLE_EQ(p->secondsPerToken, mem / 10e9 + disk / 1e9);
        EXPECT_DOUBLE_EQ(p->tokensPerSecond, 1.0 / (mem / 10e9 + disk / 1e9));
    }
}

TEST(PlanShape, WeightFilesAreTheShards) {
    const fs::path dir = fs::path(COLI_FIXTURE_DIR) / "mixtral"; // 3 shards and an index
    auto files = modelWeightFiles(dir.string());
    ASSERT_TRUE(files.isOk()) << files.status().message();
    ASSERT_EQ(files->size(), 3u);
    for (const auto& f : *files)
        EXPECT_EQ(f.bytes, fs::file_size(f.path)) << f.path;
    EXPECT_FALSE(modelWeightFiles((fs::path(COLI_FIXTURE_DIR) / "missing").string()).isOk());
}

PlanShape smallShape() {
    PlanShape s;
    s.denseBytes = 1000;
    s.bytesPerExpert = 100;
    s.slotBytes = 128;
    s.moeLayers = 4;
    s.expertsPerLayer = 8;
    s.topK = 2;
    s.workingSlots = 6;
    return s;
}

TEST(MakePlan, BudgetZeroIsTheWorkingSetAndNothingHits) {
    auto p = makePlan(smallShape(), 0, 0.7, HitRateSource::Heat, 1e9, 1e8);
    ASSERT_TRUE(p.isOk());
    EXPECT_EQ(p->budgetBytes, 6u * 128);
    EXPECT_EQ(p->expertsThatFit, 0);
    EXPECT_EQ(p->hitRate, 0.0);
    EXPECT_EQ(p->hitRateSource, HitRateSource::None);
    EXPECT_DOUBLE_EQ(p->diskBytesPerToken, 4 * 2 * 100.0);
    EXPECT_DOUBLE_EQ(p->secondsPerToken, (1000 + 8 * 128.0) / 1e9 + 800 / 1e8);
}

TEST(MakePlan, EverythingFitsReadsNothingFromDisk) {
    for (uint64_t budget : {uint64_t(6 + 32) * 128, uint64_t(1) << 40}) {
        auto p = makePlan(smallShape(), budget, 0.3, HitRateSource::Trace, 2e9, 0);
        ASSERT_TRUE(p.isOk());
        EXPECT_EQ(p->expertsThatFit, 32);
        EXPECT_EQ(p->hitRate, 1.0);
        EXPECT_EQ(p->hitRateSource, HitRateSource::None);
        EXPECT_EQ(p->diskBytesPerToken, 0.0);
        // No disk rate is needed when nothing is read from disk.
        EXPECT_DOUBLE_EQ(p->tokensPerSecond, 2e9 / (1000 + 8 * 128.0));
    }
    // One expert short of all: the given hit rate stands.
    auto p = makePlan(smallShape(), uint64_t(6 + 31) * 128, 0.3, HitRateSource::Trace, 2e9, 1e9);
    ASSERT_TRUE(p.isOk());
    EXPECT_EQ(p->expertsThatFit, 31);
    EXPECT_EQ(p->hitRate, 0.3);
}

TEST(MakePlan, MissingRateGivesNoSpeed) {
    auto p = makePlan(smallShape(), 10 * 128, 0.5, HitRateSource::Trace, 1e9, 0);
    ASSERT_TRUE(p.isOk());
    EXPECT_EQ(p->tokensPerSecond, 0.0);
    EXPECT_EQ(p->secondsPerToken, 0.0);
}

TEST(MakePlan, RefusesBadInput) {
    EXPECT_FALSE(makePlan(smallShape(), 0, 1.5, HitRateSource::Trace, 1, 1).isOk());
    EXPECT_FALSE(makePlan(smallShape(), 0, -0.1, HitRateSource::Trace, 1, 1).isOk());
    EXPECT_FALSE(makePlan(smallShape(), 0, std::nan(""), HitRateSource::Trace, 1, 1).isOk());
    EXPECT_FALSE(makePlan(smallShape(), 0, 0.5, HitRateSource::Trace, -1, 1).isOk());
    PlanShape noExperts = smallShape();
    noExperts.moeLayers = 0;
    EXPECT_FALSE(makePlan(noExperts, 0, 0.5, HitRateSource::Trace, 1, 1).isOk());
    PlanShape smallSlot = smallShape();
    smallSlot.slotBytes = 50;
    auto r = makePlan(smallSlot, 0, 0.5, HitRateSource::Trace, 1, 1);
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), ErrorCode::InvalidArgument);
}

TEST(ExpertBudget, ExpertsThatFitIsTheCacheRule) {
    EXPECT_EQ(expertsThatFit(0, 128, 6, 32), 0);
    EXPECT_EQ(expertsThatFit(6 * 128, 128, 6, 32), 0);
    EXPECT_EQ(expertsThatFit(7 * 128 + 127, 128, 6, 32), 1);
    EXPECT_EQ(expertsThatFit(100 * 128, 128, 6, 32), 32);
    EXPECT_EQ(expertsThatFit(100, 0, 6, 32), 0);
    // The default budget from values: everything when memory allows, else what is left.
    EXPECT_EQ(defaultExpertBudget(6 * 128, 128, 32, uint64_t(64) << 30), 38u * 128);
    EXPECT_EQ(defaultExpertBudget(6 * 128, 128, 32, 0), 6u * 128);
    // A VRAM tier on a device sharing the system's memory counts in the budget: the ceiling
    // grows by its bytes (the RAM slots still get every expert), memory still caps it.
    EXPECT_EQ(defaultExpertBudget(6 * 128, 128, 32, uint64_t(64) << 30, 1000), 38u * 128 + 1000);
    EXPECT_EQ(defaultExpertBudget(6 * 128, 128, 32, 0, 1000), 6u * 128);
}

// Hand-made heat table: layer/expert/heat/lastSeen, half-life 100 tokens, now = 200.
TEST(HeatHitRate, ShareOfTheHottestN) {
    const std::vector<storage::HeatRecord> records = {
        {0, 0, 40, 200}, // 40 now
        {0, 1, 80, 100}, // 40 after one half-life
        {1, 0, 30, 200}, // 30
        {1, 1, 80, 0},   // 20 after two
        {1, 2, 0, 200},  // no heat
    };
    const double total = 40 + 40 + 30 + 20;
    EXPECT_DOUBLE_EQ(heatHitRate(records, 0, 200, 100), 0.0);
    EXPECT_DOUBLE_EQ(heatHitRate(records, 1, 200, 100), 40 / total);
    EXPECT_DOUBLE_EQ(heatHitRate(records, 2, 200, 100), 80 / total);
    EXPECT_DOUBLE_EQ(heatHitRate(records, 3, 200, 100), 110 / total);
    EXPECT_DOUBLE_EQ(heatHitRate(records, 4, 200, 100), 1.0);
    EXPECT_DOUBLE_EQ(heatHitRate(records, 50, 200, 100), 1.0);
    EXPECT_DOUBLE_EQ(heatHitRate(records, -3, 200, 100), 0.0);
    EXPECT_DOUBLE_EQ(heatHitRate({}, 3, 200, 100), 0.0);
    // Without decay (+inf half-life) the stored values count as they are.
    EXPECT_DOUBLE_EQ(heatHitRate(records, 1, 200, INFINITY), 80 / (40 + 80 + 30 + 80.0));
}

cachesim::RoutingTraceFile handTrace() {
    cachesim::RoutingTraceFile t;
    t.name = "hand.jsonl";
    t.nLayers = 4;
    t.nExperts = 8;
    t.topK = 2;
    t.moeLayers = {0, 1, 2, 3};
    uint32_t x = 7;
    for (int tok = 0; tok < 40; ++tok) {
        for (int l = 0; l < 4; ++l) {
            x = x * 1103515245u + 12345u;
            const int a = int((x >> 16) % 5); // experts 0-4 mostly: some reuse
            const int b = (a + 1 + int((x >> 8) % 7)) % 8;
            t.experts.push_back(a);
            t.experts.push_back(b);
        }
        t.generated.push_back(tok >= 10 ? 1 : 0);
    }
    return t;
}

TEST(TraceHitRate, IsTheSimulatorsLfruAtTheCapacity) {
    const cachesim::RoutingTraceFile t = handTrace();
    auto seq = cachesim::buildAccessSequence({&t, 1}, 1);
    ASSERT_TRUE(seq.isOk());
    for (int capacity : {0, 3, 8, 20, 32}) {
        cachesim::SimOptions o;
        o.policy = cachesim::Policy::Lfru;
        o.capacity = capacity;
        o.halfLifeTokens = tiers::CacheOptions{}.evictionHalfLifeTokens;
        auto want = cachesim::simulate(*seq, o);
        ASSERT_TRUE(want.isOk());
        auto got = traceHitRate({&t, 1}, smallShape(), capacity);
        ASSERT_TRUE(got.isOk()) << got.status().message();
        EXPECT_DOUBLE_EQ(*got, want->hitRate()) << capacity;
    }
    PlanShape other = smallShape();
    other.expertsPerLayer = 16;
    auto r = traceHitRate({&t, 1}, other, 4);
    ASSERT_FALSE(r.isOk());
    EXPECT_NE(r.status().message().find("hand.jsonl"), std::string::npos);
}

TEST(MemoryBandwidth, StreamReadSumsAndMeasures) {
    std::vector<uint64_t> words(100000);
    std::iota(words.begin(), words.end(), uint64_t(1));
    EXPECT_EQ(streamRead(words.data(), int64_t(words.size())), uint64_t(100000) * 100001 / 2);
    EXPECT_EQ(streamRead(words.data(), 0), 0u);
    EXPECT_GE(memReadBufferBytes(), size_t(256) << 20);
    auto m = measureMemoryReadBandwidth({2, size_t(8) << 20});
    ASSERT_TRUE(m.isOk()) << m.status().message();
    EXPECT_GT(m->bytesPerSecond, 0.0);
    EXPECT_EQ(m->bufferBytes, size_t(8) << 20);
    EXPECT_LE(m->minBytesPerSecond, m->bytesPerSecond);
    EXPECT_GE(m->maxBytesPerSecond, m->bytesPerSecond);
    EXPECT_FALSE(measureMemoryReadBandwidth({0, 0}).isOk());
    EXPECT_FALSE(measureMemoryReadBandwidth({1, 100}).isOk());
}

} // namespace
} // namespace coli::placement
