// The colibri manifest: round trip, validation of hostile manifests, openContainer's checks, and
// the stored-format helpers the converter and the reader share.
#include "convert/manifest.h"
#include "convert/plan.h"
#include "convert/sha256.h"
#include "convert/stored_format.h"
#include "st_writer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <bit>
#include <cmath>
#include <limits>

namespace coli::convert {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A small, consistent container description: 2 layers x 2 experts of [64 x 128] / [128 x 64].
Container sample() {
    Container c;
    c.formatVersion = kContainerFormatVersion;
    c.converterVersion = kConverterVersion;
    c.converter = "coli convert test";
    c.modelId = "tiny";
    c.architecture = "OlmoeForCausalLM";
    c.sourceFiles = {{"model.safetensors", 1000, std::string(64, 'a')}};
    c.quantisation = {{"experts", "int4-g64"}, {"dense", "int8-g64"}, {"embeddings", "bf16"},
                      {"lm_head", "bf16"},     {"norms", "f32"},      {"router", "f32"}};
    const uint64_t blob = 4 * 4096;
    c.shards = {
        {"model-00001-of-00001.safetensors", 4096 + 4 * blob + 512 + 4096, std::string(64, 'b')}};
    for (int l = 0; l < 2; ++l) {
        for (int e = 0; e < 2; ++e) {
            ExpertEntry x;
            x.layer = l;
            x.expert = e;
            x.tensor =
                "model.layers." + std::to_string(l) + ".experts." + std::to_string(e) + ".packed";
            x.file = c.shards[0].file;
            x.offset = 4096 + uint64_t(l * 2 + e) * blob;
            x.length = blob;
            x.gate = {
                StoredFormat::Q4_G64, {64, 128}, 0, storedBytes(StoredFormat::Q4_G64, 64, 128)};
            x.up = {StoredFormat::Q4_G64, {64, 128}, 4608, x.gate.length};
            x.down = {
                StoredFormat::Q4_G64, {128, 64}, 9216, storedBytes(StoredFormat::Q4_G64, 128, 64)};
            c.experts.push_back(x);
        }
    }
    c.tensors = {{"model.norm.weight",
                  TensorClass::Norms,
                  c.shards[0].file,
                  4096 + 4 * blob,
                  512,
                  StoredFormat::F32,
                  {128},
                  "BF16"}};
    return c;
}

TEST(Manifest, RoundTripsAndIsDeterministic) {
    const Container c = sample();
    const std::string text = manifestToJson(c);
    EXPECT_EQ(text, manifestToJson(c));
    auto back = parseManifest(text, "colibri.json");
    ASSERT_TRUE(back) << back.status().toString();
    EXPECT_EQ(manifestToJson(back.value()), text);
    const ExpertEntry* e = back->expert(1, 0);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->offset, 4096u + 2 * 4 * 4096);
    EXPECT_EQ(e->down.shape, (std::vector<int64_t>{128, 64}));
    EXPECT_EQ(back->expert(2, 0), nullptr);
    EXPECT_EQ(back->expert(0, 5), nullptr);
    ASSERT_NE(back->tensor("model.norm.weight"), nullptr);
    EXPECT_EQ(back->tensor("nope"), nullptr);
    EXPECT_EQ(back->describe(),
              "int4-g64 experts, int8-g64 dense, bf16 embeddings, bf16 lm_head, f32 norms, "
              "f32 router");
}

// Each mutation of a valid manifest must be refused with a message naming the problem.
TEST(Manifest, RefusesInconsistentEntries) {
    const json good = json::parse(manifestToJson(sample()));
    struct Mut {
        const char* what;
        std::function<void(json&)> f;
        const char* expect;
        ErrorCode code = ErrorCode::Malformed;
    };
    const Mut muts[] = {
        {"unaligned expert", [](json& j) { j["experts"][1]["offset"] = 4096 + 3 * 4096 + 8; },
         "not a multiple of 4096"},
        {"blob past shard end", [](json& j) { j["experts"][3]["offset"] = 4096 * 100; }, "outside"},
        {"part outside blob", [](json& j) { j["experts"][0]["down"]["offset"] = 12000 + 4096; },
         "outside the expert's blob"},
        {"wrong part length", [](json& j) { j["experts"][0]["gate"]["length"] = 17; },
         "length does not match"},
        {"unknown format", [](json& j) { j["experts"][0]["up"]["format"] = "int3-g7"; },
         "unknown format"},
        {"unknown shard", [](json& j) { j["tensors"][0]["file"] = "other.safetensors"; },
         "is not a shard"},
        {"tensor length", [](json& j) { j["tensors"][0]["length"] = 100; }, "does not match"},
        {"unknown class", [](json& j) { j["tensors"][0]["class"] = "mystery"; }, "unknown class"},
        {"duplicate expert", [](json& j) { j["experts"][1]["expert"] = 0; }, "listed twice"},
        {"path in shard name", [](json& j) { j["shards"][0]["file"] = "../x"; },
         "not a plain file name"},
        {"missing key", [](json& j) { j["experts"][0].erase("length"); }, "'length'"},
        {"not colibri", [](json& j) { j["format"] = "gguf"; }, "is not 'colibri'"},
        {"newer version", [](json& j) { j["format_version"] = 99; }, "newer",
         ErrorCode::Unsupported},
    };
    for (const Mut& m : muts) {
        json j = good;
        m.f(j);
        auto r = parseManifest(j.dump(), "x/colibri.json");
        ASSERT_FALSE(r) << m.what;
        EXPECT_EQ(r.status().code(), m.code) << m.what;
        EXPECT_NE(r.status().message().find(m.expect), std::string::npos)
            << m.what << ": " << r.status().message();
        EXPECT_EQ(r.status().message().rfind("x/colibri.json", 0), 0u) << m.what;
    }
    EXPECT_FALSE(parseManifest("{", "x"));
    EXPECT_FALSE(parseManifest("[]", "x"));
}

TEST(Manifest, OpenContainerChecksShardsExistWithTheirSizes) {
    st_test::TempDir tmp;
    const Container c = sample();
    EXPECT_FALSE(isContainerDir(tmp.path().string()));
    auto none = openContainer(tmp.path().string());
    ASSERT_FALSE(none);
    EXPECT_EQ(none.status().code(), ErrorCode::NotFound);

    st_test::writeText(tmp.path() / kManifestName, manifestToJson(c));
    EXPECT_TRUE(isContainerDir(tmp.path().string()));
    auto missing = openContainer(tmp.path().string());
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.status().code(), ErrorCode::NotFound);
    EXPECT_NE(missing.status().message().find(c.shards[0].file), std::string::npos);

    st_test::writeBytes(tmp.path() / c.shards[0].file, st_test::Bytes(c.shards[0].bytes - 1));
    auto shortShard = openContainer(tmp.path().string());
    ASSERT_FALSE(shortShard);
    EXPECT_EQ(shortShard.status().code(), ErrorCode::Malformed);

    st_test::writeBytes(tmp.path() / c.shards[0].file, st_test::Bytes(c.shards[0].bytes));
    auto ok = openContainer(tmp.path().string());
    ASSERT_TRUE(ok) << ok.status().toString();
    EXPECT_EQ(ok->dir, tmp.path().string());
    EXPECT_EQ(ok->experts.size(), 4u);
}

TEST(StoredFormat, NamesRoundTrip) {
    for (StoredFormat f : {StoredFormat::F32, StoredFormat::BF16, StoredFormat::Q8_G32,
                           StoredFormat::Q8_G64, StoredFormat::Q4_G32, StoredFormat::Q4_G64}) {
        StoredFormat back;
        ASSERT_TRUE(parseStoredFormat(storedFormatName(f), &back));
        EXPECT_EQ(back, f);
        if (isQuantised(f)) {
            EXPECT_STREQ(quant::formatInfo(weightFormat(f)).name, storedFormatName(f));
        }
    }
    StoredFormat x;
    EXPECT_FALSE(parseStoredFormat("int8", &x));
    EXPECT_EQ(storedBytes(StoredFormat::Q4_G64, 3, 128), 3u * 2 * 36);
    EXPECT_EQ(storedBytes(StoredFormat::Q8_G32, 2, 64), 2u * 2 * 36);
    EXPECT_EQ(storedBytes(StoredFormat::BF16, 3, 5), 30u);
}

TEST(StoredFormat, GroupFallbackForNarrowMatrices) {
    bool ok = false;
    EXPECT_EQ(formatForCols(StoredFormat::Q4_G64, 128, StoredFormat::Q4_G64, &ok),
              StoredFormat::Q4_G64);
    EXPECT_TRUE(ok);
    EXPECT_EQ(formatForCols(StoredFormat::Q4_G64, 96, StoredFormat::Q4_G64, &ok),
              StoredFormat::Q4_G32);
    EXPECT_TRUE(ok);
    EXPECT_EQ(formatForCols(StoredFormat::Q8_G64, 32, StoredFormat::BF16, &ok),
              StoredFormat::Q8_G32);
    EXPECT_EQ(formatForCols(StoredFormat::Q8_G64, 48, StoredFormat::BF16, &ok), StoredFormat::BF16);
    EXPECT_TRUE(ok);
    formatForCols(StoredFormat::Q4_G32, 48, StoredFormat::Q4_G32, &ok);
    EXPECT_FALSE(ok);
    EXPECT_EQ(formatForCols(StoredFormat::BF16, 7, StoredFormat::BF16, &ok), StoredFormat::BF16);
    EXPECT_TRUE(ok);
}

TEST(StoredFormat, Bf16RoundsToNearestEven) {
    auto bits = [](float f) { return std::bit_cast<uint32_t>(f); };
    auto fromBits = [](uint32_t u) { return std::bit_cast<float>(u); };
    EXPECT_EQ(f32ToBf16(1.0f), 0x3F80);
    EXPECT_EQ(f32ToBf16(-2.0f), 0xC000);
    // Halfway cases: ties go to the even (low bit 0) neighbour.
    EXPECT_EQ(f32ToBf16(fromBits(0x3F808000u)), 0x3F80); // 0x3F80 is even: stays
    EXPECT_EQ(f32ToBf16(fromBits(0x3F818000u)), 0x3F82); // 0x3F81 is odd: rounds up
    EXPECT_EQ(f32ToBf16(fromBits(0x3F808001u)), 0x3F81); // above half: up
    EXPECT_EQ(f32ToBf16(fromBits(0x3F807FFFu)), 0x3F80); // below half: down
    EXPECT_EQ(f32ToBf16(std::numeric_limits<float>::infinity()), 0x7F80);
    EXPECT_EQ(f32ToBf16(std::numeric_limits<float>::max()), 0x7F80); // rounds to infinity
    const uint16_t nan = f32ToBf16(fromBits(0x7F800001u));           // payload only in low bits
    EXPECT_EQ(nan & 0x7F80, 0x7F80);
    EXPECT_NE(nan & 0x007F, 0); // still a NaN
    EXPECT_EQ(bits(1.0f) >> 16, 0x3F80u);
}

TEST(Sha256, KnownVectors) {
    // FIPS 180-4 examples.
    Sha256 a;
    a.update("abc", 3);
    EXPECT_EQ(a.finishHex(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    Sha256 empty;
    EXPECT_EQ(empty.finishHex(),
              "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    st_test::TempDir tmp;
    st_test::writeText(tmp.path() / "f", "abc");
    auto h = sha256File((tmp.path() / "f").string());
    ASSERT_TRUE(h);
    EXPECT_EQ(h.value(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(sha256File((tmp.path() / "missing").string()).status().code(), ErrorCode::NotFound);
}

} // namespace
} // namespace coli::convert
