// LoadedModel::load: every fixture family loads with its tokenizer, template and EOS ids; every
// missing or broken file gives an error naming it; progress and cancel work; NaN weights stop
// generation with a Numeric error.
#include "fixture_dir.h"

#include "runtime/session.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

using namespace coli;
using namespace coli::test;
namespace fs = std::filesystem;

namespace {

Status loadStatus(const std::string& dir) {
    auto lm = LoadedModel::load(dir, ModelLoadOptions{});
    return lm.status();
}

void expectErrorNaming(const Status& s, const std::string& what) {
    ASSERT_FALSE(s.isOk()) << "expected an error naming " << what;
    EXPECT_NE(s.message().find(what), std::string::npos) << s.toString();
}

} // namespace

TEST(LoadedModel, EveryFixtureLoadsCompletely) {
    for (const char* name :
         {"olmoe", "qwen2moe", "qwen3moe", "mixtral", "granitemoe", "deepseekv2", "deepseekv3"}) {
        SCOPED_TRACE(name);
        std::vector<LoadProgress> seen;
        auto lm = LoadedModel::load(fixturePath(name), ModelLoadOptions{},
                                    [&](const LoadProgress& p) { seen.push_back(p); });
        ASSERT_TRUE(lm.isOk()) << lm.status().toString();
        const LoadedModel& m = *lm.value();
        EXPECT_EQ(m.dir(), fixturePath(name));
        EXPECT_NE(m.chatTemplate(), nullptr);
        auto text = m.renderChat({{"user", "Hi"}}, true);
        EXPECT_TRUE(text.isOk()) << text.status().toString();

        // EOS ids are exactly generation_config.json's (int or list).
        auto gen = readJson(fixturePath(name) + "/generation_config.json")["eos_token_id"];
        std::vector<int32_t> want =
            gen.is_array() ? gen.get<std::vector<int32_t>>() : std::vector<int32_t>{gen.get<int>()};
        EXPECT_EQ(m.generationConfig().eosIds, want);
        EXPECT_FALSE(m.generationConfig().hasSamplingDefaults);

        // Progress: starts at config, ends at 1.0, never goes backwards.
        ASSERT_GE(seen.size(), 3u);
        EXPECT_EQ(seen.front().stage, "config");
        EXPECT_DOUBLE_EQ(seen.back().fraction, 1.0);
        for (size_t i = 1; i < seen.size(); ++i)
            EXPECT_GE(seen[i].fraction, seen[i - 1].fraction) << seen[i].stage;
    }
}

TEST(LoadedModel, MissingDirectoryIsNamed) {
    const std::string dir = std::string(COLI_BINARY_DIR) + "/no/such/model-dir";
    Status s = loadStatus(dir);
    expectErrorNaming(s, dir);
    EXPECT_EQ(s.code(), ErrorCode::NotFound);
}

TEST(LoadedModel, MissingFilesAreNamed) {
    for (const char* file : {"config.json", "tokenizer.json", "model.safetensors"}) {
        SCOPED_TRACE(file);
        const std::string dir = copyFixture("qwen3moe", std::string("missing-") + file);
        fs::remove(dir + "/" + file);
        expectErrorNaming(loadStatus(dir), file);
    }
}

TEST(LoadedModel, MalformedFilesAreNamed) {
    for (const char* file : {"config.json", "tokenizer.json", "generation_config.json"}) {
        SCOPED_TRACE(file);
        const std::string dir = copyFixture("qwen3moe", std::string("bad-") + file);
        writeText(dir + "/" + file, "{ this is not json");
        Status s = loadStatus(dir);
        expectErrorNaming(s, file);
        EXPECT_EQ(s.code(), ErrorCode::Malformed) << s.toString();
    }
}

// Optional side files: no generation_config.json falls back to config.json's eos_token_id; no
// tokenizer_config.json loads, and only renderChat complains, naming the file.
TEST(LoadedModel, OptionalFilesMayBeAbsent) {
    const std::string dir = copyFixture("qwen3moe", "optional");
    fs::remove(dir + "/generation_config.json");
    fs::remove(dir + "/tokenizer_config.json");
    auto lm = LoadedModel::load(dir, ModelLoadOptions{});
    ASSERT_TRUE(lm.isOk()) << lm.status().toString();
    const int cfgEos = readJson(dir + "/config.json")["eos_token_id"].get<int>();
    EXPECT_EQ(lm.value()->generationConfig().eosIds, std::vector<int32_t>{cfgEos});
    EXPECT_EQ(lm.value()->chatTemplate(), nullptr);
    auto text = lm.value()->renderChat({{"user", "Hi"}}, true);
    ASSERT_FALSE(text.isOk());
    EXPECT_EQ(text.status().code(), ErrorCode::NotFound);
    EXPECT_NE(text.status().message().find("tokenizer_config.json"), std::string::npos);
}

// A tokenizer_config.json without chat_template: loads; renderChat names the file.
TEST(LoadedModel, NoChatTemplateKey) {
    const std::string dir = copyFixture("qwen3moe", "notemplate");
    auto tc = readJson(dir + "/tokenizer_config.json");
    tc.erase("chat_template");
    writeText(dir + "/tokenizer_config.json", tc.dump());
    auto lm = LoadedModel::load(dir, ModelLoadOptions{});
    ASSERT_TRUE(lm.isOk()) << lm.status().toString();
    EXPECT_EQ(lm.value()->chatTemplate(), nullptr);
    auto text = lm.value()->renderChat({{"user", "Hi"}}, true);
    ASSERT_FALSE(text.isOk());
    EXPECT_NE(text.status().message().find("tokenizer_config.json"), std::string::npos);
}

TEST(LoadedModel, EosOutsideVocabularyIsRefused) {
    const std::string dir = copyFixture("qwen3moe", "eosrange");
    writeText(dir + "/generation_config.json", R"({"eos_token_id": 100000})");
    Status s = loadStatus(dir);
    expectErrorNaming(s, "generation_config.json");
}

TEST(LoadedModel, CancelBeforeLoadIsCancelled) {
    std::atomic<bool> cancel{true};
    auto lm = LoadedModel::load(fixturePath("qwen3moe"), ModelLoadOptions{}, {}, &cancel);
    ASSERT_FALSE(lm.isOk());
    EXPECT_EQ(lm.status().code(), ErrorCode::Cancelled) << lm.status().toString();
}

// NaN weights: generation stops with a Numeric error instead of emitting garbage.
TEST(LoadedModel, NanWeightsGiveNumericError) {
    const std::string dir = copyFixture("qwen3moe", "nan");
    const std::string file = dir + "/model.safetensors";
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f.good());
    uint64_t headerLen = 0;
    f.read(reinterpret_cast<char*>(&headerLen), 8);
    std::string header(headerLen, '\0');
    f.read(header.data(), static_cast<std::streamsize>(headerLen));
    auto h = nlohmann::json::parse(header);
    ASSERT_TRUE(h.contains("model.norm.weight"));
    const auto off = h["model.norm.weight"]["data_offsets"];
    const uint64_t begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
    // All-ones bits are NaN in F32, F16 and BF16 alike.
    const std::string nan(end - begin, '\xff');
    f.seekp(static_cast<std::streamoff>(8 + headerLen + begin));
    f.write(nan.data(), static_cast<std::streamsize>(nan.size()));
    f.close();

    auto lm = LoadedModel::load(dir, ModelLoadOptions{});
    if (!lm.isOk()) {
        // Refusing NaN weights at load is also acceptable, provided the file is named.
        EXPECT_NE(lm.status().message().find("model.safetensors"), std::string::npos)
            << lm.status().toString();
        return;
    }
    Session s(*lm.value());
    GenerateParams p;
    p.maxNewTokens = 4;
    std::string shown;
    auto r = s.generate(std::vector<int32_t>{1, 2, 3}, p, [&](std::string_view t) { shown += t; });
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), ErrorCode::Numeric) << r.status().toString();
    EXPECT_TRUE(shown.empty());
}
