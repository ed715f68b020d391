// config.json parsing: keys and defaults per family (expected values are those of Hugging Face's
// configuration_*.py classes and the published config.json files), and clear errors.
#include "model/config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace coli {
namespace {

Result<ModelConfig> parse(const std::string& json) {
    return parseConfig(json, "config.json");
}

ModelConfig parseOk(const std::string& json) {
    auto r = parse(json);
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    return r.isOk() ? r.value() : ModelConfig{};
}

// Expects an error of `code` whose message contains every string in `needles`.
void expectError(const std::string& json, ErrorCode code, std::vector<std::string> needles) {
    auto r = parse(json);
    ASSERT_FALSE(r.isOk()) << json;
    EXPECT_EQ(r.status().code(), code) << r.status().toString();
    for (const auto& n : needles)
        EXPECT_NE(r.status().message().find(n), std::string::npos)
            << "message '" << r.status().message() << "' lacks '" << n << "'";
}

// Absurd sizes stop at the config (Malformed naming the key and the limit), before anything is
// planned per layer or expert.
TEST(Config, AbsurdSizesAreMalformed) {
    const std::string base = R"({"architectures": ["OlmoeForCausalLM"], "hidden_size": 64,
        "intermediate_size": 32, "num_attention_heads": 4, "num_experts_per_tok": 2, )";
    expectError(base + R"("num_hidden_layers": 100000, "num_experts": 8})", ErrorCode::Malformed,
                {"config.json", "num_hidden_layers", "100000", "1024"});
    expectError(base + R"("num_hidden_layers": 2, "num_experts": 70000})", ErrorCode::Malformed,
                {"config.json", "num_experts", "65536"});
    expectError(base + R"("num_hidden_layers": 2, "num_experts": 8, "vocab_size": 2000000000})",
                ErrorCode::Malformed, {"vocab_size"});
    parseOk(base + R"("num_hidden_layers": 1024, "num_experts": 65536})");
}

// A file given as the model directory says so (not ".../config.json/config.json: not found").
TEST(Config, FileInsteadOfDirectory) {
    namespace fs = std::filesystem;
    const fs::path file = fs::temp_directory_path() / "coli_test_config_not_a_dir.json";
    std::ofstream(file) << "{}";
    auto r = loadConfig(file.string());
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), ErrorCode::NotFound);
    EXPECT_NE(r.status().message().find("not a directory"), std::string::npos)
        << r.status().message();
    EXPECT_EQ(r.status().message().find("config.json/config.json"), std::string::npos);
    fs::remove(file);
}

// allenai/OLMoE-1B-7B-0924 config.json (abridged to the keys the engine reads).
TEST(Config, OlmoeRealConfig) {
    ModelConfig c = parseOk(R"({"architectures": ["OlmoeForCausalLM"], "hidden_size": 2048,
        "intermediate_size": 1024, "num_hidden_layers": 16, "num_attention_heads": 16,
        "num_key_value_heads": 16, "num_experts": 64, "num_experts_per_tok": 8,
        "norm_topk_prob": false, "clip_qkv": null, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
        "vocab_size": 50304, "max_position_embeddings": 4096, "tie_word_embeddings": false})");
    EXPECT_EQ(c.family, Family::Olmoe);
    EXPECT_EQ(c.nExperts, 64);
    EXPECT_EQ(c.topK, 8);
    EXPECT_EQ(c.expertFfn, 1024);
    EXPECT_EQ(c.headDim, 128);
    EXPECT_EQ(c.qkNorm, QkNorm::WholeProjection);
    EXPECT_FALSE(c.normTopkProb);
    EXPECT_FALSE(c.routerSoftmaxOverTopk);
    EXPECT_EQ(c.clipQkv, 0.0f); // null = off
    EXPECT_EQ(c.sharedFfn, 0);
    ASSERT_EQ(c.sparseLayer.size(), 16u);
    for (bool s : c.sparseLayer)
        EXPECT_TRUE(s);
}

TEST(Config, OlmoeDefaults) {
    // OlmoeConfig defaults when keys are absent.
    ModelConfig c = parseOk(R"({"architectures": ["OlmoeForCausalLM"], "clip_qkv": 8.0})");
    EXPECT_EQ(c.vocabSize, 50304);
    EXPECT_EQ(c.dModel, 2048);
    EXPECT_EQ(c.expertFfn, 2048);
    EXPECT_EQ(c.nLayers, 16);
    EXPECT_EQ(c.nHeads, 16);
    EXPECT_EQ(c.nKvHeads, 16); // None -> num_attention_heads
    EXPECT_EQ(c.maxPositions, 4096);
    EXPECT_FLOAT_EQ(c.rmsNormEps, 1e-5f);
    EXPECT_FLOAT_EQ(c.ropeTheta, 10000.f);
    EXPECT_EQ(c.nExperts, 64);
    EXPECT_EQ(c.topK, 8);
    EXPECT_FALSE(c.tieWordEmbeddings);
    EXPECT_FALSE(c.attentionBias);
    EXPECT_FLOAT_EQ(c.clipQkv, 8.0f);
    EXPECT_TRUE(c.ropeScaling.type.empty());
}

// Qwen/Qwen1.5-MoE-A2.7B style, with a dense layer and a sparse step.
TEST(Config, Qwen2MoeSharedExpertAndDenseLayers) {
    ModelConfig c = parseOk(R"({"architectures": ["Qwen2MoeForCausalLM"], "hidden_size": 2048,
        "num_hidden_layers": 6, "num_attention_heads": 16, "num_key_value_heads": 16,
        "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
        "intermediate_size": 5632, "num_experts": 60, "num_experts_per_tok": 4,
        "decoder_sparse_step": 2, "mlp_only_layers": [3]})");
    EXPECT_EQ(c.family, Family::Qwen2Moe);
    EXPECT_TRUE(c.attentionBias); // qkv_bias default true
    EXPECT_FALSE(c.attentionOutBias);
    EXPECT_EQ(c.sharedFfn, 5632);
    EXPECT_TRUE(c.sharedExpertGate);
    EXPECT_EQ(c.expertFfn, 1408);
    EXPECT_EQ(c.denseFfn, 5632);
    EXPECT_EQ(c.qkNorm, QkNorm::None);
    // sparse iff not in mlp_only_layers and (layer + 1) % step == 0
    EXPECT_EQ(c.sparseLayer, (std::vector<bool>{false, true, false, false, false, true}));
}

TEST(Config, Qwen2MoeDefaults) {
    ModelConfig c = parseOk(R"({"architectures": ["Qwen2MoeForCausalLM"]})");
    EXPECT_EQ(c.vocabSize, 151936);
    EXPECT_EQ(c.nLayers, 24);
    EXPECT_EQ(c.nHeads, 16);
    EXPECT_EQ(c.nKvHeads, 16);
    EXPECT_EQ(c.expertFfn, 1408);
    EXPECT_EQ(c.sharedFfn, 5632);
    EXPECT_EQ(c.denseFfn, 5632);
    EXPECT_EQ(c.nExperts, 60);
    EXPECT_EQ(c.topK, 4);
    EXPECT_EQ(c.maxPositions, 32768);
    EXPECT_FLOAT_EQ(c.rmsNormEps, 1e-6f);
    EXPECT_FALSE(c.normTopkProb);
    for (bool s : c.sparseLayer)
        EXPECT_TRUE(s);
}

// Qwen/Qwen3-30B-A3B config.json values: head_dim 128 != hidden / heads.
TEST(Config, Qwen3MoeHeadDimAndPerHeadNorm) {
    ModelConfig c = parseOk(R"({"architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 2048,
        "head_dim": 128, "num_attention_heads": 32, "num_key_value_heads": 4,
        "num_hidden_layers": 48, "moe_intermediate_size": 768, "num_experts": 128,
        "num_experts_per_tok": 8, "norm_topk_prob": true, "rope_theta": 1000000.0,
        "max_position_embeddings": 40960, "vocab_size": 151936})");
    EXPECT_EQ(c.family, Family::Qwen3Moe);
    EXPECT_EQ(c.headDim, 128);
    EXPECT_EQ(c.qkNorm, QkNorm::PerHead);
    EXPECT_TRUE(c.normTopkProb);
    EXPECT_FLOAT_EQ(c.ropeTheta, 1e6f);
    EXPECT_FALSE(c.attentionBias);
}

TEST(Config, Qwen3MoeDefaults) {
    ModelConfig c = parseOk(R"({"architectures": ["Qwen3MoeForCausalLM"]})");
    EXPECT_EQ(c.nHeads, 32);
    EXPECT_EQ(c.nKvHeads, 4);
    EXPECT_EQ(c.headDim, 2048 / 32); // no head_dim key: hidden_size / num_attention_heads
    EXPECT_EQ(c.expertFfn, 768);
    EXPECT_EQ(c.denseFfn, 6144);
    EXPECT_EQ(c.nExperts, 128);
    EXPECT_EQ(c.topK, 8);
    EXPECT_FALSE(c.normTopkProb); // Qwen3MoeConfig default (real checkpoints set true)
}

TEST(Config, MixtralDefaultsAndRouting) {
    ModelConfig c = parseOk(R"({"architectures": ["MixtralForCausalLM"], "sliding_window": 4096})");
    EXPECT_EQ(c.family, Family::Mixtral);
    EXPECT_EQ(c.vocabSize, 32000);
    EXPECT_EQ(c.dModel, 4096);
    EXPECT_EQ(c.expertFfn, 14336);
    EXPECT_EQ(c.nLayers, 32);
    EXPECT_EQ(c.nKvHeads, 8);
    EXPECT_EQ(c.nExperts, 8);
    EXPECT_EQ(c.topK, 2);
    EXPECT_EQ(c.maxPositions, 131072);
    EXPECT_FLOAT_EQ(c.ropeTheta, 1e6f);
    EXPECT_FLOAT_EQ(c.rmsNormEps, 1e-5f);
    EXPECT_TRUE(c.normTopkProb); // top-k weights always renormalised
    EXPECT_EQ(c.slidingWindow, 4096);
    EXPECT_EQ(parseOk(R"({"architectures": ["MixtralForCausalLM"], "sliding_window": null})")
                  .slidingWindow,
              0);
}

// ibm-granite/granite-3.0-1b-a400m-base config.json values.
TEST(Config, GraniteMoeMultipliers) {
    ModelConfig c = parseOk(R"({"architectures": ["GraniteMoeForCausalLM"], "hidden_size": 1024,
        "intermediate_size": 512, "num_hidden_layers": 24, "num_attention_heads": 16,
        "num_key_value_heads": 8, "num_local_experts": 32, "num_experts_per_tok": 8,
        "embedding_multiplier": 12.0, "attention_multiplier": 0.015625,
        "residual_multiplier": 0.22, "logits_scaling": 6.0, "tie_word_embeddings": true,
        "vocab_size": 49155, "max_position_embeddings": 4096})");
    EXPECT_EQ(c.family, Family::GraniteMoe);
    EXPECT_FLOAT_EQ(c.embeddingMultiplier, 12.0f);
    EXPECT_FLOAT_EQ(c.attentionMultiplier, 0.015625f);
    EXPECT_FLOAT_EQ(c.residualMultiplier, 0.22f);
    EXPECT_FLOAT_EQ(c.logitsScaling, 6.0f);
    EXPECT_TRUE(c.tieWordEmbeddings);
    EXPECT_TRUE(c.routerSoftmaxOverTopk);
    EXPECT_EQ(c.nExperts, 32);
    EXPECT_EQ(c.expertFfn, 512);
}

TEST(Config, GraniteMoeDefaults) {
    ModelConfig c = parseOk(R"({"architectures": ["GraniteMoeForCausalLM"]})");
    EXPECT_FLOAT_EQ(c.embeddingMultiplier, 1.0f);
    EXPECT_FLOAT_EQ(c.attentionMultiplier, 1.0f); // HF default 1.0 is the softmax scale itself
    EXPECT_FLOAT_EQ(c.residualMultiplier, 1.0f);
    EXPECT_FLOAT_EQ(c.logitsScaling, 1.0f);
    EXPECT_EQ(c.maxPositions, 2048);
    EXPECT_EQ(c.expertFfn, 11008);
    EXPECT_EQ(c.nKvHeads, 32);
    EXPECT_EQ(c.nExperts, 8);
    EXPECT_EQ(c.topK, 2);
}

TEST(Config, ModelTypeFallbackAndRopeParameters) {
    // transformers 5 writes rope_theta inside rope_parameters.
    ModelConfig c = parseOk(
        R"({"model_type": "qwen3_moe", "rope_parameters": {"rope_type": "default", "rope_theta": 5e5}})");
    EXPECT_EQ(c.family, Family::Qwen3Moe);
    EXPECT_FLOAT_EQ(c.ropeTheta, 5e5f);
    EXPECT_TRUE(c.ropeScaling.type.empty());
    ModelConfig l = parseOk(
        R"({"architectures": ["MixtralForCausalLM"], "rope_scaling": {"type": "linear", "factor": 2.0}})");
    EXPECT_EQ(l.ropeScaling.type, "linear");
    EXPECT_FLOAT_EQ(l.ropeScaling.factor, 2.0f);
}

TEST(Config, UnknownArchitectureListsSupported) {
    expectError(R"({"architectures": ["DbrxForCausalLM"]})", ErrorCode::Unsupported,
                {"DbrxForCausalLM", "OlmoeForCausalLM", "Qwen2MoeForCausalLM",
                 "Qwen3MoeForCausalLM", "MixtralForCausalLM", "GraniteMoeForCausalLM"});
    expectError(R"({"model_type": "llama"})", ErrorCode::Unsupported,
                {"llama", "OlmoeForCausalLM"});
}

TEST(Config, MalformedValuesNameTheKey) {
    expectError("{not json", ErrorCode::Malformed, {"config.json", "JSON"});
    expectError("[1, 2]", ErrorCode::Malformed, {"config.json", "object"});
    expectError(R"({"hidden_size": 8})", ErrorCode::Malformed, {"architectures"});
    expectError(R"({"architectures": []})", ErrorCode::Malformed, {"architectures"});
    expectError(R"({"architectures": ["OlmoeForCausalLM"], "hidden_size": 0})",
                ErrorCode::Malformed, {"config.json", "hidden_size", "> 0"});
    expectError(R"({"architectures": ["OlmoeForCausalLM"], "num_hidden_layers": -2})",
                ErrorCode::Malformed, {"num_hidden_layers"});
    expectError(R"({"architectures": ["OlmoeForCausalLM"], "hidden_size": "64"})",
                ErrorCode::Malformed, {"hidden_size", "integer"});
    expectError(
        R"({"architectures": ["OlmoeForCausalLM"], "num_experts": 4, "num_experts_per_tok": 5})",
        ErrorCode::Malformed, {"num_experts_per_tok", "num_experts"});
    expectError(R"({"architectures": ["MixtralForCausalLM"], "num_local_experts": 0})",
                ErrorCode::Malformed, {"num_local_experts"});
    expectError(
        R"({"architectures": ["OlmoeForCausalLM"], "hidden_size": 100, "num_attention_heads": 16})",
        ErrorCode::Malformed, {"num_attention_heads", "hidden_size"});
    expectError(
        R"({"architectures": ["GraniteMoeForCausalLM"], "hidden_size": 64, "num_attention_heads": 4, "head_dim": 32})",
        ErrorCode::Malformed, {"head_dim", "16"});
    expectError(
        R"({"architectures": ["Qwen3MoeForCausalLM"], "num_attention_heads": 32, "num_key_value_heads": 5})",
        ErrorCode::Malformed, {"num_key_value_heads"});
    expectError(
        R"({"architectures": ["Qwen2MoeForCausalLM"], "num_hidden_layers": 4, "mlp_only_layers": [4]})",
        ErrorCode::Malformed, {"mlp_only_layers", "4"});
    expectError(R"({"architectures": ["Qwen2MoeForCausalLM"], "decoder_sparse_step": 0})",
                ErrorCode::Malformed, {"decoder_sparse_step"});
    expectError(R"({"architectures": ["OlmoeForCausalLM"], "rms_norm_eps": -1})",
                ErrorCode::Malformed, {"rms_norm_eps"});
    expectError(R"({"architectures": ["OlmoeForCausalLM"], "clip_qkv": -1})", ErrorCode::Malformed,
                {"clip_qkv"});
    expectError(R"({"architectures": ["OlmoeForCausalLM"], "tie_word_embeddings": "yes"})",
                ErrorCode::Malformed, {"tie_word_embeddings"});
}

TEST(Config, UnsupportedFeaturesAreRefused) {
    expectError(R"({"architectures": ["OlmoeForCausalLM"], "hidden_act": "gelu"})",
                ErrorCode::Unsupported, {"hidden_act", "gelu"});
    expectError(
        R"({"architectures": ["Qwen3MoeForCausalLM"], "rope_scaling": {"rope_type": "longrope", "factor": 4.0}})",
        ErrorCode::Unsupported, {"longrope"});
    expectError(R"({"architectures": ["Qwen2MoeForCausalLM"], "use_sliding_window": true})",
                ErrorCode::Unsupported, {"use_sliding_window"});
}

TEST(Config, LoadConfigFromDirectory) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(COLI_BINARY_DIR) / "test_model_tmp" / "config_dir";
    fs::remove_all(dir);
    fs::create_directories(dir);
    auto missing = loadConfig(dir.string());
    ASSERT_FALSE(missing.isOk());
    EXPECT_EQ(missing.status().code(), ErrorCode::NotFound);
    EXPECT_NE(missing.status().message().find("config.json"), std::string::npos);
    // Says what is wrong in words a user follows (issue 11), not "config.json: file not found".
    EXPECT_NE(missing.status().message().find(dir.string() +
                                              " is not a model folder: a model "
                                              "folder holds config.json, *.safetensors and "
                                              "tokenizer.json"),
              std::string::npos)
        << missing.status().message();
    std::ofstream(dir / "config.json")
        << R"({"architectures": ["MixtralForCausalLM"], "hidden_size": -1})";
    auto bad = loadConfig(dir.string());
    ASSERT_FALSE(bad.isOk());
    EXPECT_NE(bad.status().message().find((dir / "config.json").string()), std::string::npos);
    EXPECT_NE(bad.status().message().find("hidden_size"), std::string::npos);
}

} // namespace
} // namespace coli
