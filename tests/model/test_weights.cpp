// Weight loading against broken checkpoints (built from a fixture by a tiny writer) and the
// summary arithmetic.
#include "io/safetensors.h"
#include "model/weights.h"
#include "safetensors_writer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

namespace coli {
namespace {

bool haveFixture(const std::string& name) {
    return std::filesystem::exists(std::string(COLI_FIXTURE_DIR) + "/" + name + "/config.json");
}

#define REQUIRE_FIXTURE(name)                                                                      \
    if (!haveFixture(name))                                                                        \
    GTEST_SKIP() << "fixture " name " not generated (run via ctest: fixtures_generate makes it)"

Result<ModelWeights> loadDir(const std::string& dir) {
    auto cfg = loadConfig(dir);
    if (!cfg) return cfg.status();
    auto ck = Checkpoint::open(dir);
    if (!ck) return ck.status();
    return loadWeights(**ck, *cfg);
}

TEST(Weights, FixtureLoadsPerExpert) {
    REQUIRE_FIXTURE("olmoe");
    auto w = loadDir(std::string(COLI_FIXTURE_DIR) + "/olmoe");
    ASSERT_TRUE(w.isOk()) << w.status().toString();
    ASSERT_EQ(w->layers.size(), 2u);
    ASSERT_EQ(w->experts[1].size(), 8u);
    EXPECT_EQ(w->experts[1][7].gate.rows, 32);
    EXPECT_EQ(w->experts[1][7].gate.cols, 64);
    EXPECT_EQ(w->experts[1][7].down.rows, 64);
    EXPECT_FALSE(w->lmHead.empty());
}

// Stacked GraniteMoE experts are split per expert: gate rows then up rows of input_linear.
TEST(Weights, GraniteStackedExpertsSplitGateThenUp) {
    REQUIRE_FIXTURE("granitemoe");
    const std::string dir = std::string(COLI_FIXTURE_DIR) + "/granitemoe";
    auto w = loadDir(dir);
    ASSERT_TRUE(w.isOk()) << w.status().toString();
    auto ck = Checkpoint::open(dir);
    ASSERT_TRUE(ck.isOk());
    std::vector<float> stacked;
    ASSERT_TRUE(
        (*ck)->readF32("model.layers.1.block_sparse_moe.input_linear.weight", stacked).isOk());
    const int F = 32, d = 64, e = 5;
    const SwiGluWeights& x = w->experts[1][e];
    ASSERT_EQ(x.gate.data.size(), size_t(F * d));
    EXPECT_TRUE(
        std::equal(x.gate.data.begin(), x.gate.data.end(), stacked.begin() + e * 2 * F * d));
    EXPECT_TRUE(
        std::equal(x.up.data.begin(), x.up.data.end(), stacked.begin() + e * 2 * F * d + F * d));
    EXPECT_TRUE(w->lmHead.empty()); // tied: the output matrix is the embedding
    EXPECT_EQ(&w->outputMatrix(), &w->embed);
}

TEST(Weights, MissingTensorsListExpectedNames) {
    REQUIRE_FIXTURE("olmoe");
    auto tensors = test::readAll(std::string(COLI_FIXTURE_DIR) + "/olmoe");
    ASSERT_FALSE(tensors.empty());
    std::erase_if(tensors, [](const test::TensorData& t) {
        return t.name == "model.layers.1.self_attn.k_proj.weight" ||
               t.name == "model.layers.0.mlp.experts.3.up_proj.weight";
    });
    const std::string dir = test::makeCheckpoint("missing", "olmoe", tensors);
    auto w = loadDir(dir);
    ASSERT_FALSE(w.isOk());
    EXPECT_EQ(w.status().code(), ErrorCode::NotFound);
    const std::string m = w.status().message();
    EXPECT_NE(m.find("model.layers.1.self_attn.k_proj.weight"), std::string::npos) << m;
    EXPECT_NE(m.find("model.layers.0.mlp.experts.3.up_proj.weight"), std::string::npos) << m;
    EXPECT_NE(m.find("2 expected tensor(s) missing"), std::string::npos) << m;
}

// A config that misses many tensors lists the first 20 and counts the rest, without listing them.
TEST(Weights, MissingListIsCappedAndCounted) {
    REQUIRE_FIXTURE("olmoe");
    auto tensors = test::readAll(std::string(COLI_FIXTURE_DIR) + "/olmoe");
    size_t renamed = 0;
    for (auto& t : tensors) // renamed rather than dropped: the total size stays plausible
        if (t.name.find(".experts.") != std::string::npos) t.name = "renamed." + t.name, ++renamed;
    ASSERT_GT(renamed, 20u);
    auto w = loadDir(test::makeCheckpoint("missing_many", "olmoe", tensors));
    ASSERT_FALSE(w.isOk());
    EXPECT_EQ(w.status().code(), ErrorCode::NotFound);
    const std::string m = w.status().message();
    EXPECT_NE(m.find(std::to_string(renamed) + " expected tensor(s) missing"), std::string::npos)
        << m;
    EXPECT_NE(m.find("and " + std::to_string(renamed - 20) + " more"), std::string::npos) << m;
    size_t listed = 0;
    for (size_t p = m.find(".experts."); p != std::string::npos; p = m.find(".experts.", p + 1))
        ++listed;
    EXPECT_EQ(listed, 20u) << m;
}

// Sizes the checkpoint cannot hold are refused from the config alone, before any per-layer or
// per-expert planning (which for absurd values would exhaust memory), naming config.json.
TEST(Weights, ImplausibleSizesRefusedBeforePlanning) {
    REQUIRE_FIXTURE("olmoe");
    const std::string dir = std::string(COLI_FIXTURE_DIR) + "/olmoe";
    auto cfg = loadConfig(dir);
    ASSERT_TRUE(cfg.isOk()) << cfg.status().toString();
    auto ck = Checkpoint::open(dir);
    ASSERT_TRUE(ck.isOk());
    EXPECT_TRUE(checkPlausibleSizes(**ck, *cfg).isOk());

    ModelConfig many = *cfg;
    many.nLayers = 1000;
    many.sparseLayer.assign(1000, true);
    auto w = loadWeights(**ck, many);
    ASSERT_FALSE(w.isOk());
    EXPECT_EQ(w.status().code(), ErrorCode::Malformed);
    EXPECT_NE(w.status().message().find("config.json"), std::string::npos) << w.status().message();
    EXPECT_NE(w.status().message().find("num_hidden_layers 1000"), std::string::npos)
        << w.status().message();
    EXPECT_EQ(computeSummary(**ck, many).totalParams, 0);

    // Sizes whose product overflows int64 (1024 x 65536 x 3 x 2^20 x 2^20) are refused too.
    ModelConfig huge = *cfg;
    huge.nLayers = 1024;
    huge.sparseLayer.assign(1024, true);
    huge.nExperts = 65536;
    huge.expertFfn = 1 << 20;
    huge.dModel = 1 << 20;
    EXPECT_GT(expectedParamsLowerBound(huge), 9.3e18);
    EXPECT_EQ(checkPlausibleSizes(**ck, huge).code(), ErrorCode::Malformed);
}

TEST(Weights, MissingStackedExpertTensor) {
    REQUIRE_FIXTURE("granitemoe");
    auto tensors = test::readAll(std::string(COLI_FIXTURE_DIR) + "/granitemoe");
    ASSERT_FALSE(tensors.empty());
    std::erase_if(tensors, [](const test::TensorData& t) {
        return t.name == "model.layers.2.block_sparse_moe.output_linear.weight";
    });
    auto w = loadDir(test::makeCheckpoint("missing_stacked", "granitemoe", tensors));
    ASSERT_FALSE(w.isOk());
    EXPECT_EQ(w.status().code(), ErrorCode::NotFound);
    EXPECT_NE(w.status().message().find("model.layers.2.block_sparse_moe.output_linear.weight"),
              std::string::npos)
        << w.status().message();
}

TEST(Weights, WrongShapeNamesTensorAndShapes) {
    REQUIRE_FIXTURE("olmoe");
    auto tensors = test::readAll(std::string(COLI_FIXTURE_DIR) + "/olmoe");
    ASSERT_FALSE(tensors.empty());
    for (auto& t : tensors) {
        if (t.name == "model.layers.0.self_attn.q_proj.weight") { // [64, 64] -> [32, 64]
            t.shape = {32, 64};
            t.data.resize(32 * 64);
        }
    }
    auto w = loadDir(test::makeCheckpoint("wrong_shape", "olmoe", tensors));
    ASSERT_FALSE(w.isOk());
    EXPECT_EQ(w.status().code(), ErrorCode::Malformed);
    const std::string m = w.status().message();
    EXPECT_NE(m.find("model.layers.0.self_attn.q_proj.weight"), std::string::npos) << m;
    EXPECT_NE(m.find("[32, 64]"), std::string::npos) << m;
    EXPECT_NE(m.find("expected [64, 64]"), std::string::npos) << m;
}

TEST(Weights, CancelStopsLoading) {
    REQUIRE_FIXTURE("mixtral");
    const std::string dir = std::string(COLI_FIXTURE_DIR) + "/mixtral";
    auto cfg = loadConfig(dir);
    auto ck = Checkpoint::open(dir);
    ASSERT_TRUE(cfg.isOk() && ck.isOk());
    std::atomic<bool> cancel{false};
    int calls = 0;
    auto w = loadWeights(
        **ck, *cfg, [&](double) { cancel = ++calls >= 3; }, &cancel);
    ASSERT_FALSE(w.isOk());
    EXPECT_EQ(w.status().code(), ErrorCode::Cancelled);
    EXPECT_EQ(calls, 3);
}

// Counts from the config's arithmetic (written out here, not taken from the engine).
TEST(Weights, SummaryOfOlmoeFixture) {
    REQUIRE_FIXTURE("olmoe");
    const std::string dir = std::string(COLI_FIXTURE_DIR) + "/olmoe";
    auto cfg = loadConfig(dir);
    auto ck = Checkpoint::open(dir);
    ASSERT_TRUE(cfg.isOk() && ck.isOk());
    const ModelConfig& c = *cfg;
    ASSERT_EQ(c.dModel, 64);
    ASSERT_EQ(c.nLayers, 2);
    ASSERT_EQ(c.nExperts, 8);
    ASSERT_EQ(c.topK, 2);
    ASSERT_EQ(c.expertFfn, 32);
    ASSERT_EQ(c.vocabSize, 512);
    ASSERT_EQ(c.nHeads, 4);
    ASSERT_EQ(c.nKvHeads, 2);
    const int64_t perExpert = 3 * 32 * 64;
    const int64_t perLayerDense = 2 * 64 + 64 * 64 + 2 * 32 * 64 + 64 * 64 + 64 + 32 + 8 * 64;
    const int64_t total = 2 * 512 * 64 + 64 + 2 * (perLayerDense + 8 * perExpert);
    ModelSummary s = computeSummary(**ck, c);
    EXPECT_EQ(s.totalParams, total);
    EXPECT_EQ(s.activeParams, total - 2 * 6 * perExpert);
    EXPECT_EQ(s.bytesPerExpert, perExpert * 4); // F32 on disk
    EXPECT_EQ(s.expertBytes, 2 * 8 * perExpert * 4);
    EXPECT_EQ(s.denseBytes, (total - 2 * 8 * perExpert) * 4);
    EXPECT_EQ(s.expertsPerLayer, 8);
    EXPECT_EQ(s.moeLayers, 2);
    EXPECT_EQ(s.storage, "safetensors (F32)");
}

} // namespace
} // namespace coli
