// Checkpoint: single-file and sharded directories, f32 conversion of F32/F16/BF16, element ranges,
// and the refusals for a broken index or shard set.
#include "io/dtype.h"
#include "io/safetensors.h"

#include "st_writer.h"
#include "test_helpers.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <thread>

using namespace st_test;
using coli::Checkpoint;
using coli::ErrorCode;

namespace {

uint16_t bf16Of(float x) {
    return uint16_t(std::bit_cast<uint32_t>(x) >> 16);
} // exact for these

std::string indexJson(const std::vector<std::pair<std::string, std::string>>& map) {
    std::string s = R"({"metadata": {"total_size": 0}, "weight_map": {)";
    for (size_t i = 0; i < map.size(); ++i) {
        if (i) s += ",";
        s += "\"" + map[i].first + "\": \"" + map[i].second + "\"";
    }
    return s + "}}";
}

// Two shards: shard 1 holds embed (F32) and layer0 (F16), shard 2 holds experts (BF16, stacked).
void writeTwoShards(const TempDir& d) {
    writeSafetensors(d.path() / "model-00001-of-00002.safetensors",
                     {{"embed", "F32", {2, 2}, f32Bytes({1.0f, -0.5f, 3.25f, 1e-30f})},
                      {"layer0", "F16", {3}, u16Bytes({0x3C00, 0x0001, 0xFC00})}});
    std::vector<uint16_t> experts;
    for (int e = 0; e < 4; ++e)
        for (int i = 0; i < 6; ++i)
            experts.push_back(bf16Of(float(e * 10 + i)));
    writeSafetensors(d.path() / "model-00002-of-00002.safetensors",
                     {{"experts", "BF16", {4, 2, 3}, u16Bytes(experts)}});
}

const std::vector<std::pair<std::string, std::string>> kTwoShardMap = {
    {"embed", "model-00001-of-00002.safetensors"},
    {"layer0", "model-00001-of-00002.safetensors"},
    {"experts", "model-00002-of-00002.safetensors"}};

} // namespace

TEST(Checkpoint, SingleFileReadsBackExactValues) {
    TempDir d;
    writeSafetensors(
        d.path() / "model.safetensors",
        {{"f32", "F32", {4}, f32Bytes({1.5f, -2.25f, std::ldexp(1.0f, -140), INFINITY})},
         {"f16", "F16", {6}, u16Bytes({0x3C00, 0x0001, 0x03FF, 0x7C00, 0xFC00, 0x8000})},
         {"bf16", "BF16", {3}, u16Bytes({0x3F80, 0xC0A0, 0x0001})},
         {"i32", "I32", {1}, Bytes{7, 0, 0, 0}}});
    auto ck = Checkpoint::open(d.path().string());
    ASSERT_TRUE(ck) << ck.status().toString();
    EXPECT_EQ(ck.value()->shardPaths().size(), 1u);
    EXPECT_EQ(ck.value()->totalBytes(), 16u + 12u + 6u + 4u);

    std::vector<float> v;
    ASSERT_TRUE(ck.value()->readF32("f32", v));
    EXPECT_EQ(v, (std::vector<float>{1.5f, -2.25f, std::ldexp(1.0f, -140), INFINITY}));

    ASSERT_TRUE(ck.value()->readF32("f16", v));
    ASSERT_EQ(v.size(), 6u);
    EXPECT_EQ(v[0], 1.0f);
    EXPECT_EQ(v[1], std::ldexp(1.0f, -24));    // smallest f16 subnormal
    EXPECT_EQ(v[2], std::ldexp(1023.0f, -24)); // largest f16 subnormal
    EXPECT_TRUE(std::isinf(v[3]) && v[3] > 0);
    EXPECT_TRUE(std::isinf(v[4]) && v[4] < 0);
    EXPECT_TRUE(v[5] == 0.0f && std::signbit(v[5]));

    ASSERT_TRUE(ck.value()->readF32("bf16", v));
    EXPECT_EQ(v, (std::vector<float>{1.0f, -5.0f, std::ldexp(1.0f, -133)}));

    EXPECT_TRUE(hasError(ck.value()->readF32("i32", v), ErrorCode::Unsupported, {"'i32'", "I32"}));
    EXPECT_TRUE(hasError(ck.value()->readF32("nope", v), ErrorCode::NotFound, {"'nope'"}));
}

TEST(Checkpoint, LargeF16TensorConvertsAcrossStagingChunks) {
    TempDir d;
    std::vector<uint16_t> h(200003);
    for (size_t i = 0; i < h.size(); ++i)
        h[i] = uint16_t(i * 7919u); // all kinds of patterns
    writeSafetensors(d.path() / "model.safetensors",
                     {{"big", "F16", {int64_t(h.size())}, u16Bytes(h)}});
    auto ck = Checkpoint::open(d.path().string());
    ASSERT_TRUE(ck);
    std::vector<float> v;
    ASSERT_TRUE(ck.value()->readF32("big", v));
    ASSERT_EQ(v.size(), h.size());
    for (size_t i = 0; i < h.size(); ++i) {
        const float want = coli::f16ToF32(h[i]);
        if (std::isnan(want))
            ASSERT_TRUE(std::isnan(v[i])) << i;
        else
            ASSERT_EQ(v[i], want) << i;
    }
}

TEST(Checkpoint, ShardedWithIndex) {
    TempDir d;
    writeTwoShards(d);
    writeText(d.path() / "model.safetensors.index.json", indexJson(kTwoShardMap));
    auto ck = Checkpoint::open(d.path().string());
    ASSERT_TRUE(ck) << ck.status().toString();
    const Checkpoint& c = *ck.value();
    ASSERT_EQ(c.shardPaths().size(), 2u);
    EXPECT_NE(c.shardPaths()[1].find("model-00002-of-00002.safetensors"), std::string::npos);
    EXPECT_EQ(c.find("experts")->shard, 1);
    EXPECT_EQ(c.find("embed")->shard, 0);
    auto all = c.tensors();
    ASSERT_EQ(all.size(), 3u);
    EXPECT_EQ(all[0]->name, "embed");
    EXPECT_EQ(all[1]->name, "experts");
    EXPECT_EQ(all[2]->name, "layer0");

    std::vector<float> v;
    ASSERT_TRUE(c.readF32("embed", v));
    EXPECT_EQ(v, (std::vector<float>{1.0f, -0.5f, 3.25f, 1e-30f}));
    // Expert 2 of a stacked [4, 2, 3] tensor: elements [12, 18).
    float ex[6];
    ASSERT_TRUE(c.readF32Range("experts", 12, 6, ex));
    for (int i = 0; i < 6; ++i)
        EXPECT_EQ(ex[i], float(20 + i));
    EXPECT_TRUE(hasError(c.readF32Range("experts", 20, 5, ex), ErrorCode::InvalidArgument,
                         {"'experts'", "24 elements"}));
    EXPECT_TRUE(
        hasError(c.readF32Range("experts", -1, 1, ex), ErrorCode::InvalidArgument, {"'experts'"}));
    char raw[4];
    EXPECT_TRUE(c.readRaw(*c.find("layer0"), 2, 4, raw));
    EXPECT_TRUE(hasError(c.readRaw(*c.find("layer0"), 2, 5, raw), ErrorCode::InvalidArgument,
                         {"'layer0'"}));
}

TEST(Checkpoint, ConcurrentReadsAgree) {
    TempDir d;
    writeTwoShards(d);
    auto ck = Checkpoint::open(d.path().string());
    ASSERT_TRUE(ck);
    std::vector<int> bad(4, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            for (int it = 0; it < 200; ++it) {
                float ex[6];
                const int e = (t + it) % 4;
                if (!ck.value()->readF32Range("experts", e * 6, 6, ex)) ++bad[t];
                for (int i = 0; i < 6; ++i)
                    if (ex[i] != float(e * 10 + i)) ++bad[t];
            }
        });
    }
    for (auto& th : threads)
        th.join();
    EXPECT_EQ(bad, (std::vector<int>{0, 0, 0, 0}));
}

TEST(Checkpoint, WithoutIndexOpensAllShardsSorted) {
    TempDir d;
    writeTwoShards(d);
    writeText(d.path() / "README.md", "not a shard");
    auto ck = Checkpoint::open(d.path().string());
    ASSERT_TRUE(ck) << ck.status().toString();
    ASSERT_EQ(ck.value()->shardPaths().size(), 2u);
    EXPECT_NE(ck.value()->shardPaths()[0].find("00001"), std::string::npos);
    EXPECT_EQ(ck.value()->find("experts")->shard, 1);
}

TEST(Checkpoint, RefusesDirectoryWithoutSafetensors) {
    TempDir d;
    writeText(d.path() / "config.json", "{}");
    EXPECT_TRUE(hasError(Checkpoint::open(d.path().string()).status(), ErrorCode::NotFound,
                         {d.path().string(), "no *.safetensors"}));
}

TEST(Checkpoint, RefusesMissingDirectory) {
    TempDir d;
    const std::string p = d.file("absent");
    EXPECT_TRUE(hasError(Checkpoint::open(p).status(), ErrorCode::NotFound, {p}));
}

TEST(Checkpoint, RefusesMissingShardBeforeOpeningAny) {
    TempDir d;
    writeTwoShards(d);
    // Shard 1 is corrupt and shard 2 is missing: the missing shard must be reported (existence is
    // checked for all shards before any is opened).
    writeBytes(d.path() / "model-00001-of-00002.safetensors", Bytes{1, 2, 3});
    std::filesystem::remove(d.path() / "model-00002-of-00002.safetensors");
    writeText(d.path() / "model.safetensors.index.json", indexJson(kTwoShardMap));
    EXPECT_TRUE(hasError(
        Checkpoint::open(d.path().string()).status(), ErrorCode::NotFound,
        {"model-00002-of-00002.safetensors", "model.safetensors.index.json", "does not exist"}));
}

TEST(Checkpoint, RefusesIndexMappingTensorToWrongShard) {
    TempDir d;
    writeTwoShards(d);
    auto map = kTwoShardMap;
    map[1].second = "model-00002-of-00002.safetensors"; // layer0 is really in shard 1
    writeText(d.path() / "model.safetensors.index.json", indexJson(map));
    EXPECT_TRUE(hasError(Checkpoint::open(d.path().string()).status(), ErrorCode::Malformed,
                         {"model.safetensors.index.json", "'layer0'",
                          "listed in shard 'model-00002-of-00002.safetensors'",
                          "is in " + d.file("model-00001-of-00002.safetensors")}));
    // With only the wrong shard listed, the named shard lacks the tensor.
    map = kTwoShardMap;
    map[2].second = "model-00001-of-00002.safetensors";
    writeText(d.path() / "model.safetensors.index.json", indexJson(map));
    EXPECT_TRUE(hasError(Checkpoint::open(d.path().string()).status(), ErrorCode::Malformed,
                         {"'experts'", "model-00001-of-00002.safetensors", "does not hold it"}));
}

TEST(Checkpoint, RefusesIndexListingTensorNoShardHolds) {
    TempDir d;
    writeTwoShards(d);
    auto map = kTwoShardMap;
    map.push_back({"lm_head", "model-00002-of-00002.safetensors"});
    writeText(d.path() / "model.safetensors.index.json", indexJson(map));
    EXPECT_TRUE(hasError(Checkpoint::open(d.path().string()).status(), ErrorCode::Malformed,
                         {"model.safetensors.index.json", "'lm_head'", "does not hold it"}));
}

TEST(Checkpoint, RefusesInvalidIndexJson) {
    TempDir d;
    writeTwoShards(d);
    writeText(d.path() / "model.safetensors.index.json", R"({"weight_map": {"embed": )");
    EXPECT_TRUE(hasError(Checkpoint::open(d.path().string()).status(), ErrorCode::Malformed,
                         {"model.safetensors.index.json", "not valid JSON"}));
}

TEST(Checkpoint, RefusesIndexWithoutWeightMap) {
    TempDir d;
    writeTwoShards(d);
    writeText(d.path() / "model.safetensors.index.json", R"({"metadata": {}})");
    EXPECT_TRUE(hasError(Checkpoint::open(d.path().string()).status(), ErrorCode::Malformed,
                         {"model.safetensors.index.json", "weight_map"}));
}

TEST(Checkpoint, RefusesShardPathLeavingTheFolder) {
    TempDir d;
    writeTwoShards(d);
    writeText(d.path() / "model.safetensors.index.json",
              indexJson({{"embed", "../model-00001-of-00002.safetensors"}}));
    EXPECT_TRUE(hasError(Checkpoint::open(d.path().string()).status(), ErrorCode::Malformed,
                         {"'embed'", "outside the checkpoint folder"}));
}

TEST(Checkpoint, RefusesTensorInTwoShards) {
    TempDir d;
    writeSafetensors(d.path() / "a.safetensors", {{"w", "F32", {1}, f32Bytes({1.0f})}});
    writeSafetensors(d.path() / "b.safetensors", {{"w", "F32", {1}, f32Bytes({2.0f})}});
    EXPECT_TRUE(hasError(Checkpoint::open(d.path().string()).status(), ErrorCode::Malformed,
                         {"'w'", "two shards", "a.safetensors", "b.safetensors"}));
}

TEST(Checkpoint, BrokenShardErrorNamesTheShard) {
    TempDir d;
    writeTwoShards(d);
    writeBytes(d.path() / "model-00002-of-00002.safetensors", Bytes{1, 2, 3});
    writeText(d.path() / "model.safetensors.index.json", indexJson(kTwoShardMap));
    EXPECT_TRUE(hasError(Checkpoint::open(d.path().string()).status(), ErrorCode::Malformed,
                         {"model-00002-of-00002.safetensors", "shorter than"}));
}
