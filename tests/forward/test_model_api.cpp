// Model::load / forward contract: progress, cancel, argument errors, summary, KV cache checks.
#include "forward/model.h"
#include "golden_fixture.h"
#include "io/safetensors.h"
#include "safetensors_writer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace coli {
namespace {

#define REQUIRE_FIXTURE(name)                                                                      \
    if (!std::filesystem::exists(test::fixtureDir(name) + "/config.json"))                         \
    GTEST_SKIP() << "fixture " name " not generated (run via ctest: fixtures_generate makes it)"

std::unique_ptr<Model> loadOk(const std::string& name) {
    auto m = Model::load(test::fixtureDir(name), ModelLoadOptions{});
    EXPECT_TRUE(m.isOk()) << m.status().toString();
    return m.isOk() ? std::move(m.value()) : nullptr;
}

TEST(ModelApi, ProgressIsMonotonicAndEndsAtOne) {
    REQUIRE_FIXTURE("mixtral");
    std::vector<double> fractions;
    auto m = Model::load(test::fixtureDir("mixtral"), ModelLoadOptions{},
                         [&](const LoadProgress& p) { fractions.push_back(p.fraction); });
    ASSERT_TRUE(m.isOk()) << m.status().toString();
    ASSERT_GT(fractions.size(), 10u); // one report per tensor at least
    EXPECT_TRUE(std::is_sorted(fractions.begin(), fractions.end()));
    EXPECT_EQ(fractions.front(), 0.0);
    EXPECT_EQ(fractions.back(), 1.0);
}

TEST(ModelApi, CancelDuringLoad) {
    REQUIRE_FIXTURE("qwen3moe");
    std::atomic<bool> cancel{false};
    int reports = 0;
    auto m = Model::load(
        test::fixtureDir("qwen3moe"), ModelLoadOptions{},
        [&](const LoadProgress& p) {
            if (p.stage == "weights" && ++reports == 5) cancel = true;
        },
        &cancel);
    ASSERT_FALSE(m.isOk());
    EXPECT_EQ(m.status().code(), ErrorCode::Cancelled);
    EXPECT_EQ(reports, 5);
}

TEST(ModelApi, LoadErrorsPropagate) {
    auto missing = Model::load(std::string(COLI_BINARY_DIR) + "/no/such/model", {});
    ASSERT_FALSE(missing.isOk());
    EXPECT_EQ(missing.status().code(), ErrorCode::NotFound);
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(COLI_BINARY_DIR) / "test_forward_tmp" / "unsupported";
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir / "config.json") << R"({"architectures": ["LlamaForCausalLM"]})";
    auto unsupported = Model::load(dir.string(), {});
    ASSERT_FALSE(unsupported.isOk());
    EXPECT_EQ(unsupported.status().code(), ErrorCode::Unsupported);
    EXPECT_NE(unsupported.status().message().find("LlamaForCausalLM"), std::string::npos);
}

TEST(ModelApi, ForwardRejectsBadArguments) {
    REQUIRE_FIXTURE("olmoe");
    auto model = loadOk("olmoe");
    ASSERT_TRUE(model);
    const int vocab = model->config().vocabSize;
    for (ForwardPath path : {ForwardPath::Fast, ForwardPath::Reference}) {
        model->setPath(path);
        KVCache kv;
        std::vector<float> logits;
        std::vector<int32_t> bad = {1, vocab};
        Status s = model->forward(bad, kv, logits);
        EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
        EXPECT_NE(s.message().find(std::to_string(vocab)), std::string::npos) << s.message();
        EXPECT_EQ(kv.size(), 0); // unchanged on error
        std::vector<int32_t> negative = {-1};
        EXPECT_EQ(model->forward(negative, kv, logits).code(), ErrorCode::InvalidArgument);
        EXPECT_EQ(model->forward({}, kv, logits).code(), ErrorCode::InvalidArgument);
    }
}

TEST(ModelApi, ForwardRejectsContextOverflow) {
    REQUIRE_FIXTURE("olmoe");
    auto model = loadOk("olmoe");
    ASSERT_TRUE(model);
    const int maxPos = model->config().maxPositions;
    KVCache kv;
    std::vector<float> logits;
    std::vector<int32_t> tokens(maxPos + 1, 3);
    Status s = model->forward(tokens, kv, logits);
    EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(s.message().find("max_position_embeddings"), std::string::npos) << s.message();
    EXPECT_EQ(kv.size(), 0);
}

TEST(ModelApi, CacheFromAnotherModelIsRefused) {
    REQUIRE_FIXTURE("olmoe");
    REQUIRE_FIXTURE("qwen3moe");
    auto a = loadOk("olmoe");
    auto b = loadOk("qwen3moe");
    ASSERT_TRUE(a && b);
    KVCache kv;
    std::vector<float> logits;
    std::vector<int32_t> t = {1, 2, 3};
    ASSERT_TRUE(a->forward(t, kv, logits).isOk());
    EXPECT_EQ(b->forward(t, kv, logits).code(), ErrorCode::InvalidArgument);
    kv.clear();
    EXPECT_TRUE(b->forward(t, kv, logits).isOk()); // an empty cache is reusable
    EXPECT_EQ(int(logits.size()), b->config().vocabSize);
}

// Long batches run in chunks; a batch longer than a chunk equals token-by-token decoding.
// 600 positions: one token at a time the KV cache grows twice (room for 257, then 516, then 1034
// positions, each head's rows copied over), in one batch never; the bits must not differ.
TEST(ModelApi, LongBatchEqualsStepwise) {
    REQUIRE_FIXTURE("qwen2moe");
    auto model = loadOk("qwen2moe");
    ASSERT_TRUE(model);
    std::vector<int32_t> seq;
    for (int i = 0; i < 600; ++i)
        seq.push_back((i * 37 + 11) % model->config().vocabSize);
    KVCache a, b;
    std::vector<float> batch, step, last;
    ASSERT_TRUE(model->forward(seq, a, batch, true).isOk());
    for (int32_t t : seq) {
        ASSERT_TRUE(model->forward(std::span<const int32_t>(&t, 1), b, last).isOk());
        step.insert(step.end(), last.begin(), last.end());
    }
    EXPECT_EQ(batch, step); // each row is computed the same way in both
    EXPECT_EQ(a.size(), 600);
    EXPECT_EQ(b.capacity(), 1034); // twice the 517 tokens it held when it last grew
}

// MLA (DeepSeek-V2/V3) computes prefill and decode with one formulation (the absorbed
// up-projections), so a cached latent never depends on how the prompt was split: one batch, token
// by token, and a cache rebuilt from its copied rows (a persisted session, KVCache::assign) give
// the same bits.
TEST(ModelApi, MlaBatchStepwiseAndRestoredCacheAgreeBitForBit) {
    REQUIRE_FIXTURE("deepseekv2");
    REQUIRE_FIXTURE("deepseekv3");
    for (const char* name : {"deepseekv2", "deepseekv3"}) {
        SCOPED_TRACE(name);
        auto model = loadOk(name);
        ASSERT_TRUE(model);
        const ModelConfig& c = model->config();
        std::vector<int32_t> seq;
        for (int i = 0; i < 100; ++i)
            seq.push_back((i * 37 + 11) % c.vocabSize);
        KVCache a, b;
        std::vector<float> batch, step, last;
        ASSERT_TRUE(model->forward(seq, a, batch, true).isOk());
        for (int32_t t : seq) {
            ASSERT_TRUE(model->forward(std::span<const int32_t>(&t, 1), b, last).isOk());
            step.insert(step.end(), last.begin(), last.end());
        }
        EXPECT_EQ(batch, step);
        // One latent row per layer and position: kv_lora_rank + qk_rope_head_dim floats.
        EXPECT_EQ(a.positionFloats(),
                  size_t(c.nLayers) * size_t(c.mla.kvLoraRank + c.mla.qkRopeHeadDim));
        // The first 60 positions copied out and back into a fresh cache, then the rest.
        std::vector<float> rows(60 * a.positionFloats());
        for (int p = 0; p < 60; ++p)
            a.copyPosition(p, rows.data() + size_t(p) * a.positionFloats());
        KVCache r;
        ASSERT_TRUE(r.assign(c.nLayers, kvShape(c), c.maxPositions, rows, 60).isOk());
        std::vector<float> resumed;
        ASSERT_TRUE(
            model->forward(std::span<const int32_t>(seq).subspan(60), r, resumed, true).isOk());
        EXPECT_TRUE(std::equal(resumed.begin(), resumed.end(),
                               batch.begin() + 60 * ptrdiff_t(c.vocabSize)));
    }
}

// Mixtral sliding window (HF masking_utils: key j visible from query i iff i - w < j <= i). With
// w = 1 each token attends only to itself, so a position's logits cannot depend on earlier tokens.
TEST(ModelApi, SlidingWindowOfOneIgnoresEarlierTokens) {
    REQUIRE_FIXTURE("mixtral");
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(COLI_BINARY_DIR) / "test_forward_tmp" / "mixtral_window1";
    fs::remove_all(dir);
    fs::create_directories(dir);
    for (const auto& e : fs::directory_iterator(test::fixtureDir("mixtral")))
        fs::copy_file(e.path(), dir / e.path().filename());
    nlohmann::json cfg;
    std::ifstream(dir / "config.json") >> cfg;
    cfg["sliding_window"] = 1;
    std::ofstream(dir / "config.json", std::ios::trunc) << cfg.dump();

    auto windowed = Model::load(dir.string(), {});
    ASSERT_TRUE(windowed.isOk()) << windowed.status().toString();
    auto full = loadOk("mixtral");
    ASSERT_TRUE(full);
    const std::vector<int32_t> a = {5, 17, 42}, b = {99, 3, 42};
    for (ForwardPath path : {ForwardPath::Fast, ForwardPath::Reference}) {
        (*windowed)->setPath(path);
        full->setPath(path);
        std::vector<float> la, lb;
        KVCache ka, kb;
        ASSERT_TRUE((*windowed)->forward(a, ka, la).isOk());
        ASSERT_TRUE((*windowed)->forward(b, kb, lb).isOk());
        EXPECT_EQ(la, lb);
        ka.clear();
        kb.clear();
        ASSERT_TRUE(full->forward(a, ka, la).isOk());
        ASSERT_TRUE(full->forward(b, kb, lb).isOk());
        EXPECT_NE(la, lb); // without the window the earlier tokens matter
    }
}

// A Qwen3-MoE checkpoint whose experts are saved stacked (transformers 5: mlp.experts.gate_up_proj
// [E, 2*ffn, d] = gate rows then up rows per expert, mlp.experts.down_proj [E, d, ffn]) loads and
// gives the golden logits of the per-expert original.
TEST(ModelApi, PackedExpertsMatchGolden) {
    REQUIRE_FIXTURE("qwen3moe");
    namespace fs = std::filesystem;
    auto ck = Checkpoint::open(test::fixtureDir("qwen3moe"));
    ASSERT_TRUE(ck.isOk()) << ck.status().toString();
    const ModelConfig cfg = loadConfig(test::fixtureDir("qwen3moe")).value();
    const int E = cfg.nExperts, F = cfg.expertFfn, d = cfg.dModel;
    std::vector<test::TensorData> out;
    for (const TensorInfo* t : (*ck)->tensors()) {
        if (t->name.find(".mlp.experts.") != std::string::npos) continue;
        test::TensorData td{t->name, t->shape, {}};
        ASSERT_TRUE((*ck)->readF32(t->name, td.data).isOk());
        out.push_back(std::move(td));
    }
    for (int l = 0; l < cfg.nLayers; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".mlp.experts.";
        test::TensorData gu{p + "gate_up_proj", {E, 2 * F, d}, {}},
            dn{p + "down_proj", {E, d, F}, {}};
        for (int e = 0; e < E; ++e) {
            for (const char* part : {"gate_proj", "up_proj"}) {
                std::vector<float> v;
                ASSERT_TRUE(
                    (*ck)->readF32(p + std::to_string(e) + "." + part + ".weight", v).isOk());
                gu.data.insert(gu.data.end(), v.begin(), v.end());
            }
            std::vector<float> v;
            ASSERT_TRUE((*ck)->readF32(p + std::to_string(e) + ".down_proj.weight", v).isOk());
            dn.data.insert(dn.data.end(), v.begin(), v.end());
        }
        out.push_back(std::move(gu));
        out.push_back(std::move(dn));
    }
    const fs::path dir = fs::path(COLI_BINARY_DIR) / "test_forward_tmp" / "qwen3moe_packed";
    fs::remove_all(dir);
    fs::create_directories(dir);
    fs::copy_file(fs::path(test::fixtureDir("qwen3moe")) / "config.json", dir / "config.json");
    test::writeSafetensors((dir / "model.safetensors").string(), out);

    auto model = Model::load(dir.string(), {});
    ASSERT_TRUE(model.isOk()) << model.status().toString();
    test::Golden g;
    ASSERT_TRUE(test::loadGolden("qwen3moe", &g));
    const int V = cfg.vocabSize;
    for (size_t p = 0; p < g.prompts.size(); ++p) {
        KVCache kv;
        std::vector<float> logits;
        ASSERT_TRUE((*model)->forward(g.prompts[p], kv, logits, true).isOk());
        for (size_t i = 0; i < g.prompts[p].size(); ++i)
            EXPECT_LE(test::maxAbsDiff(&logits[i * V], g.logits[p][i].data(), V), 1e-4);
    }
}

// The attention scratch starts at 64 keys and grows (outside the loops) with the context, token by
// token here (64 -> 128 -> 256 -> 512); Fast still matches Reference at every step's end.
TEST(ModelApi, GrowingContextFastMatchesReference) {
    REQUIRE_FIXTURE("qwen2moe");
    auto model = loadOk("qwen2moe");
    ASSERT_TRUE(model);
    std::vector<int32_t> seq;
    for (int i = 0; i < 300; ++i)
        seq.push_back((i * 31 + 7) % model->config().vocabSize);
    std::vector<float> fast, ref;
    KVCache a, b;
    model->setPath(ForwardPath::Fast);
    for (int32_t t : seq)
        ASSERT_TRUE(model->forward(std::span<const int32_t>(&t, 1), a, fast).isOk());
    model->setPath(ForwardPath::Reference);
    ASSERT_TRUE(model->forward(seq, b, ref).isOk());
    ASSERT_EQ(fast.size(), ref.size());
    double scale = 0;
    for (float r : ref)
        scale = std::max(scale, double(std::abs(r)));
    EXPECT_LE(test::maxAbsDiff(fast.data(), ref.data(), int(ref.size())), 1e-5 * scale);
    EXPECT_EQ(a.size(), 300);
}

TEST(ModelApi, SummaryOfGraniteFixture) {
    REQUIRE_FIXTURE("granitemoe");
    auto model = loadOk("granitemoe");
    ASSERT_TRUE(model);
    const ModelConfig& c = model->config();
    const ModelSummary s = model->summary();
    const int64_t perExpert = 3 * int64_t(c.expertFfn) * c.dModel;
    EXPECT_EQ(s.expertsPerLayer, c.nExperts);
    EXPECT_EQ(s.moeLayers, c.nLayers);
    EXPECT_EQ(s.bytesPerExpert, perExpert * 2); // BF16
    EXPECT_EQ(s.totalParams - s.activeParams,
              int64_t(c.nLayers) * (c.nExperts - c.topK) * perExpert);
    EXPECT_EQ(s.storage, "safetensors (BF16)");
}

// Rw (`coli bench decode --resident`): one pass reads every weight matrix once, here f32: per
// layer q, k, v, o, the router and every expert's gate, up and down, then the LM head, counted
// from config.json's shapes (OLMoE: every layer sparse, no shared expert).
TEST(ModelApi, ResidentWeightReadBandwidthReadsEveryMatrix) {
    REQUIRE_FIXTURE("olmoe");
    auto m = loadOk("olmoe");
    ASSERT_TRUE(m);
    const ModelConfig& c = m->config();
    const uint64_t d = uint64_t(c.dModel), q = uint64_t(c.nHeads) * uint64_t(c.headDim),
                   kv = uint64_t(c.nKvHeads) * uint64_t(c.headDim), E = uint64_t(c.nExperts);
    const uint64_t perLayer = 2 * q * d + 2 * kv * d + E * d + E * 3 * uint64_t(c.expertFfn) * d;
    const uint64_t want = (uint64_t(c.nLayers) * perLayer + uint64_t(c.vocabSize) * d) * 4;
    auto bw = m->residentWeightReadBandwidth(3);
    ASSERT_TRUE(bw.isOk()) << bw.status().toString();
    EXPECT_EQ(bw->bufferBytes, want);
    EXPECT_GT(bw->bytesPerSecond, 0.0);
    EXPECT_LE(bw->minBytesPerSecond, bw->bytesPerSecond);
    EXPECT_GE(bw->maxBytesPerSecond, bw->bytesPerSecond);
    EXPECT_EQ(bw->repetitions, 3);
    for (int bad : {0, 1001}) {
        auto r = m->residentWeightReadBandwidth(bad);
        ASSERT_FALSE(r.isOk()) << bad;
        EXPECT_EQ(r.status().code(), ErrorCode::InvalidArgument) << bad;
    }
}

} // namespace
} // namespace coli
