// parseGenerationConfig: eos ids as int or list, fallback to config.json, sampling defaults with
// transformers' values for missing keys, and clear errors naming the file and key.
#include "runtime/generation_config.h"

#include <gtest/gtest.h>

using namespace coli;

TEST(GenerationConfig, EosListAndBos) {
    auto r = parseGenerationConfig(R"({"bos_token_id": 1, "eos_token_id": [2, 7]})", "", "g.json");
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    EXPECT_EQ(r->eosIds, (std::vector<int32_t>{2, 7}));
    EXPECT_EQ(r->bosId, 1);
    EXPECT_FALSE(r->hasSamplingDefaults);
}

TEST(GenerationConfig, EosSingleInt) {
    auto r = parseGenerationConfig(R"({"eos_token_id": 5})", "", "g.json");
    ASSERT_TRUE(r.isOk());
    EXPECT_EQ(r->eosIds, (std::vector<int32_t>{5}));
    EXPECT_EQ(r->bosId, -1);
}

TEST(GenerationConfig, FallsBackToConfigJson) {
    auto r = parseGenerationConfig("", R"({"eos_token_id": 9, "bos_token_id": 3})", "g.json");
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    EXPECT_EQ(r->eosIds, (std::vector<int32_t>{9}));
    EXPECT_EQ(r->bosId, 3);
    // The generation config wins where it has the key.
    r = parseGenerationConfig(R"({"eos_token_id": [4]})", R"({"eos_token_id": 9})", "g.json");
    ASSERT_TRUE(r.isOk());
    EXPECT_EQ(r->eosIds, (std::vector<int32_t>{4}));
}

TEST(GenerationConfig, NullEosMeansNone) {
    auto r = parseGenerationConfig(R"({"eos_token_id": null})", R"({"eos_token_id": null})", "g");
    ASSERT_TRUE(r.isOk());
    EXPECT_TRUE(r->eosIds.empty());
}

TEST(GenerationConfig, SamplingDefaultsTakeTransformersValuesForMissingKeys) {
    auto r = parseGenerationConfig(R"({"do_sample": true, "temperature": 0.6, "top_p": 0.9})", "",
                                   "g.json");
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    ASSERT_TRUE(r->hasSamplingDefaults);
    EXPECT_FLOAT_EQ(r->defaults.temperature, 0.6f);
    EXPECT_FLOAT_EQ(r->defaults.topP, 0.9f);
    EXPECT_EQ(r->defaults.topK, 50);
    EXPECT_FLOAT_EQ(r->defaults.minP, 0.0f);
    EXPECT_FLOAT_EQ(r->defaults.repeatPenalty, 1.0f);
}

TEST(GenerationConfig, DoSampleFalseIsGreedy) {
    auto r = parseGenerationConfig(R"({"do_sample": false, "temperature": 0.7})", "", "g.json");
    ASSERT_TRUE(r.isOk());
    ASSERT_TRUE(r->hasSamplingDefaults);
    EXPECT_EQ(r->defaults.temperature, 0.0f);
}

// A sampling default we cannot use is a warning naming the file and key; that key counts as
// absent (transformers' default when other keys are valid, no defaults at all otherwise). The
// EOS ids stay strict (ErrorsNameFileAndKey).
TEST(GenerationConfig, BadSamplingKeysAreWarningsNotErrors) {
    auto r = parseGenerationConfig(R"({"temperature": -5, "top_k": 7, "eos_token_id": 2})", "",
                                   "gen.json");
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    ASSERT_EQ(r->warnings.size(), 1u);
    EXPECT_NE(r->warnings[0].find("gen.json"), std::string::npos) << r->warnings[0];
    EXPECT_NE(r->warnings[0].find("temperature"), std::string::npos) << r->warnings[0];
    EXPECT_NE(r->warnings[0].find("-5"), std::string::npos) << r->warnings[0];
    ASSERT_TRUE(r->hasSamplingDefaults);
    EXPECT_EQ(r->defaults.temperature, 1.0f); // transformers' default for the key
    EXPECT_EQ(r->defaults.topK, 7);           // the valid key is kept
    EXPECT_EQ(r->eosIds, std::vector<int32_t>{2});

    // The only sampling key is bad: no sampling defaults at all (the built-in ones apply).
    r = parseGenerationConfig(R"({"temperature": -5})", "", "gen.json");
    ASSERT_TRUE(r.isOk());
    EXPECT_FALSE(r->hasSamplingDefaults);
    EXPECT_EQ(r->warnings.size(), 1u);

    for (const char* bad :
         {R"({"temperature": "hot"})", R"({"top_k": 2.5})", R"({"top_k": -1})", R"({"top_p": 0})",
          R"({"min_p": 1.5})", R"({"repetition_penalty": 0})", R"({"do_sample": "yes"})"}) {
        r = parseGenerationConfig(bad, "", "gen.json");
        ASSERT_TRUE(r.isOk()) << bad << ": " << r.status().toString();
        EXPECT_EQ(r->warnings.size(), 1u) << bad;
        EXPECT_FALSE(r->hasSamplingDefaults) << bad;
    }

    r = parseGenerationConfig(R"({"temperature": 0.6, "top_p": 0.9})", "", "gen.json");
    ASSERT_TRUE(r.isOk());
    EXPECT_TRUE(r->warnings.empty());
}

TEST(GenerationConfig, ErrorsNameFileAndKey) {
    auto r = parseGenerationConfig("{not json", "", "dir/generation_config.json");
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), ErrorCode::Malformed);
    EXPECT_NE(r.status().message().find("dir/generation_config.json"), std::string::npos);

    r = parseGenerationConfig(R"({"eos_token_id": "x"})", "", "gen.json");
    ASSERT_FALSE(r.isOk());
    EXPECT_NE(r.status().message().find("gen.json"), std::string::npos);
    EXPECT_NE(r.status().message().find("eos_token_id"), std::string::npos);

    r = parseGenerationConfig(R"({"eos_token_id": -3})", "", "gen.json");
    ASSERT_FALSE(r.isOk());
    EXPECT_NE(r.status().message().find("eos_token_id"), std::string::npos);

    r = parseGenerationConfig(R"([1, 2])", "", "gen.json");
    ASSERT_FALSE(r.isOk());
    EXPECT_NE(r.status().message().find("gen.json"), std::string::npos);

    r = parseGenerationConfig("", "{broken", "gen.json");
    ASSERT_FALSE(r.isOk());
    EXPECT_NE(r.status().message().find("config.json"), std::string::npos);
}
