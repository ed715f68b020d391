// config.json parsing: keys and defaults per family (expected values are those of Hugging Face's
// configuration_*.py classes and the published config.json files), and clear errors.
#include "model/config.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
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

// ---- DeepSeek-V2/V3 (config_deepseek.cpp; transformers configuration_deepseek_v2.py / _v3.py) --

// YaRN's get_mscale, written out here (0.1 * mscale * ln(scale) + 1 for scale > 1).
double getMscale(double scale, double mscale) {
    return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

// deepseek-ai/DeepSeek-V2 config.json (abridged to the keys the engine reads): q_lora_rank 1536,
// group_limited_greedy over 8 groups keeping 3, routed_scaling_factor 16.
const char* const kDeepseekV2 = R"({"architectures": ["DeepseekV2ForCausalLM"],
    "model_type": "deepseek_v2", "hidden_size": 5120, "intermediate_size": 12288,
    "moe_intermediate_size": 1536, "num_hidden_layers": 60, "num_attention_heads": 128,
    "num_key_value_heads": 128, "n_shared_experts": 2, "n_routed_experts": 160,
    "num_experts_per_tok": 6, "first_k_dense_replace": 1, "moe_layer_freq": 1,
    "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
    "v_head_dim": 128, "n_group": 8, "topk_group": 3, "topk_method": "group_limited_greedy",
    "scoring_func": "softmax", "norm_topk_prob": false, "routed_scaling_factor": 16.0,
    "attention_bias": false, "max_position_embeddings": 163840, "rms_norm_eps": 1e-06,
    "rope_theta": 10000, "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40,
    "mscale": 0.707, "mscale_all_dim": 0.707, "original_max_position_embeddings": 4096,
    "type": "yarn"}, "vocab_size": 102400, "tie_word_embeddings": false})";

// deepseek-ai/DeepSeek-V3 config.json (abridged): noaux_tc with the correction bias, sigmoid
// scores, 3 dense layers, one MTP layer.
const char* const kDeepseekV3 = R"({"architectures": ["DeepseekV3ForCausalLM"],
    "model_type": "deepseek_v3", "hidden_size": 7168, "intermediate_size": 18432,
    "moe_intermediate_size": 2048, "num_hidden_layers": 61, "num_attention_heads": 128,
    "num_key_value_heads": 128, "n_shared_experts": 1, "n_routed_experts": 256,
    "num_experts_per_tok": 8, "first_k_dense_replace": 3, "moe_layer_freq": 1,
    "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
    "v_head_dim": 128, "n_group": 8, "topk_group": 4, "topk_method": "noaux_tc",
    "scoring_func": "sigmoid", "norm_topk_prob": true, "routed_scaling_factor": 2.5,
    "num_nextn_predict_layers": 1, "max_position_embeddings": 163840, "rms_norm_eps": 1e-06,
    "rope_theta": 10000, "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40,
    "mscale": 1.0, "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096,
    "type": "yarn"}, "vocab_size": 129280, "tie_word_embeddings": false})";

// The JSON text with one key replaced (or added), for the refusal cases below.
std::string withKey(const std::string& json, const std::string& key, const std::string& value) {
    nlohmann::json j = nlohmann::json::parse(json);
    j[key] = nlohmann::json::parse(value);
    return j.dump();
}

std::string withoutKey(const std::string& json, const std::string& key) {
    nlohmann::json j = nlohmann::json::parse(json);
    j.erase(key);
    return j.dump();
}

void expectKvShape(const ModelConfig& c, int heads, int kDim, int vDim) {
    const KvShape s = kvShape(c);
    EXPECT_EQ(s.heads, heads);
    EXPECT_EQ(s.kDim, kDim);
    EXPECT_EQ(s.vDim, vDim);
}

TEST(Config, DeepseekV2RealConfig) {
    const ModelConfig c = parseOk(kDeepseekV2);
    EXPECT_EQ(c.family, Family::DeepseekV2);
    EXPECT_TRUE(c.isMla());
    EXPECT_EQ(c.mla.kvLoraRank, 512);
    EXPECT_EQ(c.mla.qLoraRank, 1536);
    EXPECT_EQ(c.mla.qkNopeHeadDim, 128);
    EXPECT_EQ(c.mla.qkRopeHeadDim, 64);
    EXPECT_EQ(c.mla.vHeadDim, 128);
    EXPECT_TRUE(c.mla.ropeInterleave); // V2 always rotates (2i, 2i+1)
    EXPECT_EQ(c.headDim, 128 + 64);    // qk_nope + qk_rope
    EXPECT_EQ(c.ropeDim(), 64);
    expectKvShape(c, 1, 512 + 64, 0); // the latent and the one shared rope key, no values
    EXPECT_EQ(c.nExperts, 160);
    EXPECT_EQ(c.topK, 6);
    EXPECT_EQ(c.expertFfn, 1536);
    EXPECT_EQ(c.denseFfn, 12288);
    EXPECT_EQ(c.sharedFfn, 2 * 1536); // n_shared_experts * moe_intermediate_size
    EXPECT_FALSE(c.sharedExpertGate);
    EXPECT_EQ(c.scoring, RouterScoring::Softmax);
    EXPECT_EQ(c.groupSelection, GroupSelection::BestScore);
    EXPECT_EQ(c.nGroup, 8);
    EXPECT_EQ(c.topkGroup, 3);
    EXPECT_FALSE(c.routerBias);
    EXPECT_FALSE(c.normTopkProb);
    EXPECT_FALSE(c.routerSoftmaxOverTopk);
    EXPECT_FLOAT_EQ(c.routedScalingFactor, 16.0f);
    EXPECT_EQ(c.mtpLayers, 0);
    // first_k_dense_replace 1: layer 0 dense, every later layer MoE.
    ASSERT_EQ(c.sparseLayer.size(), 60u);
    EXPECT_FALSE(c.sparseLayer[0]);
    for (size_t l = 1; l < 60; ++l)
        EXPECT_TRUE(c.sparseLayer[l]) << l;
    EXPECT_EQ(c.ropeScaling.type, "yarn");
    EXPECT_FLOAT_EQ(c.ropeScaling.factor, 40.0f);
    EXPECT_EQ(c.ropeScaling.originalMaxPositionEmbeddings, 4096);
    // mscale == mscale_all_dim: get_mscale(40, 0.707) / get_mscale(40, 0.707) = 1.
    EXPECT_FLOAT_EQ(c.ropeScaling.attentionFactor, 1.0f);
}

// deepseek-ai/DeepSeek-V2-Lite: q_lora_rank null (q_proj), greedy top-k over all experts.
TEST(Config, DeepseekV2LiteNullQLoraRankAndGreedy) {
    std::string j = withKey(kDeepseekV2, "q_lora_rank", "null");
    j = withKey(j, "topk_method", R"("greedy")");
    j = withKey(j, "n_group", "1");
    j = withKey(j, "topk_group", "1");
    j = withKey(j, "num_attention_heads", "16");
    j = withKey(j, "num_key_value_heads", "16");
    j = withKey(j, "n_routed_experts", "64");
    j = withKey(j, "routed_scaling_factor", "1.0");
    const ModelConfig c = parseOk(j);
    EXPECT_EQ(c.mla.qLoraRank, 0); // null -> q_proj
    EXPECT_EQ(c.groupSelection, GroupSelection::None);
    EXPECT_EQ(c.scoring, RouterScoring::Softmax);
    EXPECT_FALSE(c.routerBias);
    EXPECT_FLOAT_EQ(c.routedScalingFactor, 1.0f);
    EXPECT_EQ(c.nHeads, 16);
    EXPECT_EQ(c.nKvHeads, 16);
    expectKvShape(c, 1, 576, 0);
    // What the cache saves: 16 heads x (128 + 64 + 128) floats of full K/V vs 576 per layer.
    EXPECT_EQ(c.nHeads * (c.mla.qkHeadDim() + c.mla.vHeadDim), 5120);
}

TEST(Config, DeepseekV3RealConfig) {
    const ModelConfig c = parseOk(kDeepseekV3);
    EXPECT_EQ(c.family, Family::DeepseekV3);
    EXPECT_TRUE(c.isMla());
    EXPECT_EQ(c.mla.qLoraRank, 1536);
    EXPECT_EQ(c.mla.kvLoraRank, 512);
    EXPECT_TRUE(c.mla.ropeInterleave); // rope_interleave absent: default true
    EXPECT_EQ(c.headDim, 192);
    expectKvShape(c, 1, 576, 0);
    EXPECT_EQ(c.nExperts, 256);
    EXPECT_EQ(c.topK, 8);
    EXPECT_EQ(c.sharedFfn, 1 * 2048);
    EXPECT_EQ(c.denseFfn, 18432);
    EXPECT_EQ(c.scoring, RouterScoring::Sigmoid);
    EXPECT_EQ(c.groupSelection, GroupSelection::TopTwoSum);
    EXPECT_TRUE(c.routerBias);
    EXPECT_TRUE(c.normTopkProb);
    EXPECT_EQ(c.nGroup, 8);
    EXPECT_EQ(c.topkGroup, 4);
    EXPECT_FLOAT_EQ(c.routedScalingFactor, 2.5f);
    EXPECT_EQ(c.mtpLayers, 1);
    ASSERT_EQ(c.sparseLayer.size(), 61u); // the MTP layer is not one of them
    for (size_t l = 0; l < 61; ++l)
        EXPECT_EQ(c.sparseLayer[l], l >= 3) << l; // first_k_dense_replace 3
    EXPECT_FLOAT_EQ(c.ropeScaling.attentionFactor, 1.0f);
    const ModelConfig halves = parseOk(withKey(kDeepseekV3, "rope_interleave", "false"));
    EXPECT_FALSE(halves.mla.ropeInterleave);
}

// The YaRN attention factor (transformers _compute_yarn_parameters): get_mscale(f, mscale) /
// get_mscale(f, mscale_all_dim) when both are set, get_mscale(f) (mscale 1) otherwise; computed
// here by hand from the formula.
TEST(Config, DeepseekYarnAttentionFactor) {
    auto factorOf = [](const std::string& scaling) {
        return parseOk(withKey(kDeepseekV2, "rope_scaling", scaling)).ropeScaling.attentionFactor;
    };
    // The deepseekv2 fixture's values: (1 + 0.1 ln 4) / (1 + 0.05 ln 4) = 1.0648216.
    const double want = (0.1 * 1.0 * std::log(4.0) + 1) / (0.1 * 0.5 * std::log(4.0) + 1);
    EXPECT_NEAR(want, 1.0648216, 1e-7);
    EXPECT_FLOAT_EQ(
        factorOf(R"({"type": "yarn", "factor": 4.0, "mscale": 1.0, "mscale_all_dim": 0.5,
                     "original_max_position_embeddings": 32})"),
        float(want));
    EXPECT_FLOAT_EQ(factorOf(R"({"type": "yarn", "factor": 40, "mscale": 0.707,
                                 "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096})"),
                    float(getMscale(40, 0.707) / getMscale(40, 1.0)));
    // Only mscale: get_mscale(factor) = 1 + 0.1 ln(factor).
    EXPECT_FLOAT_EQ(factorOf(R"({"type": "yarn", "factor": 40, "mscale": 0.707,
                                 "original_max_position_embeddings": 4096})"),
                    float(1 + 0.1 * std::log(40.0)));
    // attention_factor given wins.
    EXPECT_FLOAT_EQ(factorOf(R"({"type": "yarn", "factor": 40, "mscale": 0.707,
                                 "mscale_all_dim": 1.0, "attention_factor": 0.75,
                                 "original_max_position_embeddings": 4096})"),
                    0.75f);
    EXPECT_DOUBLE_EQ(yarnMscale(40, 0.707), getMscale(40, 0.707));
    EXPECT_DOUBLE_EQ(yarnMscale(1, 0.707), 1.0);
}

TEST(Config, DeepseekRefusals) {
    // V2: transformers ignores norm_topk_prob, DeepSeek's code renormalises.
    expectError(withKey(kDeepseekV2, "norm_topk_prob", "true"), ErrorCode::Unsupported,
                {"config.json", "norm_topk_prob", "DeepseekV2ForCausalLM"});
    expectError(withKey(kDeepseekV3, "moe_layer_freq", "2"), ErrorCode::Unsupported,
                {"config.json", "moe_layer_freq", "2"});
    expectError(withKey(kDeepseekV2, "attention_bias", "true"), ErrorCode::Unsupported,
                {"config.json", "attention_bias"});
    expectError(withKey(kDeepseekV2, "scoring_func", R"("sigmoid")"), ErrorCode::Unsupported,
                {"config.json", "scoring_func", "sigmoid", "DeepseekV2ForCausalLM"});
    expectError(withKey(kDeepseekV3, "scoring_func", R"("softmax")"), ErrorCode::Unsupported,
                {"scoring_func", "softmax", "DeepseekV3ForCausalLM"});
    expectError(withKey(kDeepseekV3, "topk_method", R"("greedy")"), ErrorCode::Unsupported,
                {"config.json", "topk_method", "greedy", "noaux_tc"});
    expectError(withKey(kDeepseekV2, "topk_method", R"("noaux_tc")"), ErrorCode::Unsupported,
                {"topk_method", "noaux_tc", "group_limited_greedy"});
    // 160 experts in 7 groups.
    expectError(withKey(kDeepseekV2, "n_group", "7"), ErrorCode::Malformed,
                {"config.json", "n_group", "7", "n_routed_experts", "160"});
    expectError(withKey(kDeepseekV3, "topk_group", "9"), ErrorCode::Malformed,
                {"config.json", "topk_group", "9", "n_group"});
    // 256 experts in 64 groups of 4, one group kept: 4 experts for top-8.
    expectError(withKey(withKey(kDeepseekV3, "n_group", "64"), "topk_group", "1"),
                ErrorCode::Malformed, {"config.json", "num_experts_per_tok", "8", "4"});
    // V2: 160 in 8 groups of 20, one kept holds 20 < 21.
    expectError(withKey(withKey(kDeepseekV2, "topk_group", "1"), "num_experts_per_tok", "21"),
                ErrorCode::Malformed, {"num_experts_per_tok", "21", "20"});
    parseOk(withKey(withKey(kDeepseekV2, "topk_group", "1"), "num_experts_per_tok", "20"));
    // noaux_tc sums each group's two best: groups of one expert cannot.
    expectError(withKey(withKey(withKey(kDeepseekV3, "n_group", "256"), "topk_group", "8"),
                        "num_experts_per_tok", "8"),
                ErrorCode::Malformed, {"n_group", "2 experts per group"});
    // n_routed_experts missing or null: a dense model, not MoE.
    for (const std::string& j : {withoutKey(kDeepseekV2, "n_routed_experts"),
                                 withKey(kDeepseekV2, "n_routed_experts", "null")})
        expectError(j, ErrorCode::Unsupported, {"config.json", "n_routed_experts"});
    // DeepseekV3Config defaults it to 256.
    EXPECT_EQ(parseOk(withoutKey(kDeepseekV3, "n_routed_experts")).nExperts, 256);
    expectError(withKey(kDeepseekV3, "qk_rope_head_dim", "63"), ErrorCode::Malformed,
                {"config.json", "qk_rope_head_dim", "63", "even"});
    expectError(withKey(kDeepseekV3, "kv_lora_rank", "0"), ErrorCode::Malformed,
                {"kv_lora_rank", "> 0"});
    expectError(withKey(kDeepseekV3, "q_lora_rank", "-1"), ErrorCode::Malformed, {"q_lora_rank"});
    expectError(withKey(kDeepseekV3, "routed_scaling_factor", "0"), ErrorCode::Malformed,
                {"routed_scaling_factor"});
    expectError(withKey(kDeepseekV2, "first_k_dense_replace", "-1"), ErrorCode::Malformed,
                {"first_k_dense_replace"});
}

} // namespace
} // namespace coli
