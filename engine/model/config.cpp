// config.json -> ModelConfig. Defaults are those of the Hugging Face config classes (transformers
// configuration_olmoe.py OlmoeConfig, configuration_qwen2_moe.py Qwen2MoeConfig,
// configuration_qwen3_moe.py Qwen3MoeConfig, configuration_mixtral.py MixtralConfig,
// configuration_granitemoe.py GraniteMoeConfig, configuration_deepseek_v2.py / _v3.py), used
// when a key is absent. The DeepSeek-only keys are read in config_deepseek.cpp.
#include "model/config.h"

#include "core/file_text.h"
#include "model/config_reader.h"

#include <cmath>
#include <filesystem>

namespace coli {

namespace config_detail {

namespace {

struct FamilyEntry {
    Family family;
    const char* architecture;
    const char* modelType;
};

constexpr FamilyEntry kFamilies[] = {
    {Family::Olmoe, "OlmoeForCausalLM", "olmoe"},
    {Family::Qwen2Moe, "Qwen2MoeForCausalLM", "qwen2_moe"},
    {Family::Qwen3Moe, "Qwen3MoeForCausalLM", "qwen3_moe"},
    {Family::Mixtral, "MixtralForCausalLM", "mixtral"},
    {Family::GraniteMoe, "GraniteMoeForCausalLM", "granitemoe"},
    {Family::DeepseekV2, "DeepseekV2ForCausalLM", "deepseek_v2"},
    {Family::DeepseekV3, "DeepseekV3ForCausalLM", "deepseek_v3"},
};

// Defaults per family (HF config class __init__ / dataclass defaults).
struct Defaults {
    int vocab, hidden, intermediate, layers, heads, kvHeads /*0 = heads*/, maxPos;
    float eps, theta;
    int experts, topK;
};

Defaults defaultsFor(Family f) {
    switch (f) {
    case Family::Olmoe:
        return {50304, 2048, 2048, 16, 16, 0, 4096, 1e-5f, 10000.f, 64, 8};
    case Family::Qwen2Moe:
        return {151936, 2048, 5632, 24, 16, 16, 32768, 1e-6f, 10000.f, 60, 4};
    case Family::Qwen3Moe:
        return {151936, 2048, 6144, 24, 32, 4, 32768, 1e-6f, 10000.f, 128, 8};
    case Family::Mixtral:
        return {32000, 4096, 14336, 32, 32, 8, 4096 * 32, 1e-5f, 1e6f, 8, 2};
    case Family::GraniteMoe:
        return {32000, 4096, 11008, 32, 32, 0, 2048, 1e-6f, 10000.f, 8, 2};
    case Family::DeepseekV2: // n_routed_experts / num_experts_per_tok default to None: required
        return {102400, 4096, 11008, 30, 32, 0, 2048, 1e-6f, 10000.f, 0, 0};
    case Family::DeepseekV3:
        return {129280, 7168, 18432, 61, 128, 0, 4096, 1e-6f, 10000.f, 256, 8};
    }
    return {};
}

// transformers modeling_rope_utils.py _compute_yarn_parameters: the keys, their defaults
// (beta_fast 32, beta_slow 1, original_max_position_embeddings = max_position_embeddings,
// truncate true) and the attention factor cos/sin are scaled by.
Status parseYarn(const Reader& s, ModelConfig& c) {
    RopeScaling& y = c.ropeScaling;
    COLI_RETURN_IF_ERROR(s.getFloat("beta_fast", 32.0f, &y.betaFast));
    COLI_RETURN_IF_ERROR(s.getFloat("beta_slow", 1.0f, &y.betaSlow));
    COLI_RETURN_IF_ERROR(s.getFloat("mscale", 0.0f, &y.mscale));
    COLI_RETURN_IF_ERROR(s.getFloat("mscale_all_dim", 0.0f, &y.mscaleAllDim));
    COLI_RETURN_IF_ERROR(s.getBool("truncate", true, &y.truncate));
    COLI_RETURN_IF_ERROR(s.getInt("original_max_position_embeddings", c.maxPositions,
                                  &y.originalMaxPositionEmbeddings));
    if (!(y.factor > 0)) return s.bad("factor", "must be > 0");
    if (y.originalMaxPositionEmbeddings <= 0)
        return s.bad("original_max_position_embeddings", "must be > 0");
    if (!(y.betaFast > 0) || !(y.betaSlow > 0))
        return s.bad("beta_fast", "and beta_slow must be > 0");
    if (s.has("attention_factor")) {
        COLI_RETURN_IF_ERROR(s.getFloat("attention_factor", 1.0f, &y.attentionFactor));
    } else if (y.mscale != 0.0f && y.mscaleAllDim != 0.0f) {
        y.attentionFactor =
            float(yarnMscale(y.factor, y.mscale) / yarnMscale(y.factor, y.mscaleAllDim));
    } else {
        y.attentionFactor = float(yarnMscale(y.factor, 1.0));
    }
    return {};
}

} // namespace

// rope_scaling (transformers < 5) or rope_parameters (transformers 5: also holds rope_theta).
Status parseRope(const Reader& r, float defaultTheta, ModelConfig& c) {
    COLI_RETURN_IF_ERROR(r.getFloat("rope_theta", defaultTheta, &c.ropeTheta));
    const Json* scaling = nullptr;
    std::string scalingKey;
    if (r.has("rope_parameters")) {
        scalingKey = "rope_parameters";
        scaling = &r.json().at("rope_parameters");
    } else if (r.has("rope_scaling")) {
        scalingKey = "rope_scaling";
        scaling = &r.json().at("rope_scaling");
    }
    if (scaling) {
        if (!scaling->is_object()) return r.bad(scalingKey, "must be an object or null");
        Reader s(*scaling, scalingKey == "rope_parameters" ? "config.json rope_parameters"
                                                           : "config.json rope_scaling");
        if (scalingKey == "rope_parameters")
            COLI_RETURN_IF_ERROR(s.getFloat("rope_theta", c.ropeTheta, &c.ropeTheta));
        std::string type;
        COLI_RETURN_IF_ERROR(s.getString("type", "", &type));
        COLI_RETURN_IF_ERROR(s.getString("rope_type", type, &type));
        if (type == "default") type.clear();
        c.ropeScaling.type = type;
        COLI_RETURN_IF_ERROR(s.getFloat("factor", 1.0f, &c.ropeScaling.factor));
        if (type == "linear") {
            if (c.ropeScaling.factor <= 0) return s.bad("factor", "must be > 0");
        } else if (type == "llama3") {
            COLI_RETURN_IF_ERROR(s.getFloat("low_freq_factor", 1.0f, &c.ropeScaling.lowFreqFactor));
            COLI_RETURN_IF_ERROR(
                s.getFloat("high_freq_factor", 4.0f, &c.ropeScaling.highFreqFactor));
            COLI_RETURN_IF_ERROR(s.getInt("original_max_position_embeddings", 0,
                                          &c.ropeScaling.originalMaxPositionEmbeddings));
            if (c.ropeScaling.factor <= 0) return s.bad("factor", "must be > 0");
            if (c.ropeScaling.originalMaxPositionEmbeddings <= 0)
                return s.bad("original_max_position_embeddings", "must be > 0");
            if (c.ropeScaling.highFreqFactor <= c.ropeScaling.lowFreqFactor)
                return s.bad("high_freq_factor", "must exceed low_freq_factor");
        } else if (type == "yarn") {
            COLI_RETURN_IF_ERROR(parseYarn(s, c));
        } else if (!type.empty()) {
            return {ErrorCode::Unsupported, "config.json: " + scalingKey + " type '" + type +
                                                "' is not supported (supported: none, default, "
                                                "linear, llama3, yarn)"};
        }
    }
    if (!(c.ropeTheta > 0)) return r.bad("rope_theta", "must be > 0");
    return {};
}

namespace {

// Which layers are MoE: Qwen rule (modeling_qwen2_moe.py / modeling_qwen3_moe.py decoder layer):
// sparse iff layer not in mlp_only_layers and num_experts > 0 and (layer + 1) % step == 0.
Status parseSparseLayers(const Reader& r, ModelConfig& c) {
    c.sparseLayer.assign(c.nLayers, true);
    if (c.family != Family::Qwen2Moe && c.family != Family::Qwen3Moe) return {};
    int step = 1;
    COLI_RETURN_IF_ERROR(r.getInt("decoder_sparse_step", 1, &step));
    COLI_RETURN_IF_ERROR(positive(r, "decoder_sparse_step", step));
    std::vector<bool> mlpOnly(c.nLayers, false);
    if (r.has("mlp_only_layers")) {
        const Json& v = r.json().at("mlp_only_layers");
        if (!v.is_array()) return r.bad("mlp_only_layers", "must be a list of layer indices");
        for (const Json& e : v) {
            if (!e.is_number_integer())
                return r.bad("mlp_only_layers", "must be a list of layer indices");
            int64_t l = e.get<int64_t>();
            if (l < 0 || l >= c.nLayers)
                return r.bad("mlp_only_layers", "holds layer " + std::to_string(l) +
                                                    " outside [0, " + std::to_string(c.nLayers) +
                                                    ")");
            mlpOnly[l] = true;
        }
    }
    for (int l = 0; l < c.nLayers; ++l)
        c.sparseLayer[l] = !mlpOnly[l] && c.nExperts > 0 && (l + 1) % step == 0;
    return {};
}

} // namespace

} // namespace config_detail

using namespace config_detail;

double yarnMscale(double scale, double mscale) {
    return scale <= 1.0 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

KvShape kvShape(const ModelConfig& c) {
    if (c.isMla()) return {1, c.mla.kvLoraRank + c.mla.qkRopeHeadDim, 0};
    return {c.nKvHeads, c.headDim, c.headDim};
}

const char* familyModelType(Family f) {
    for (const auto& e : kFamilies)
        if (e.family == f) return e.modelType;
    return "unknown";
}

const char* familyName(Family f) {
    for (const auto& e : kFamilies)
        if (e.family == f) return e.architecture;
    return "?";
}

bool familyFromArchitecture(const std::string& name, Family* out) {
    for (const auto& e : kFamilies) {
        if (name == e.architecture) {
            *out = e.family;
            return true;
        }
    }
    return false;
}

std::string supportedArchitectures() {
    std::string s;
    for (const auto& e : kFamilies) {
        if (!s.empty()) s += ", ";
        s += e.architecture;
    }
    return s;
}

Result<ModelConfig> parseConfig(const std::string& jsonText, const std::string& sourceName) {
    Json j = Json::parse(jsonText, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return Status(ErrorCode::Malformed, sourceName + ": not valid JSON");
    if (!j.is_object()) return Status(ErrorCode::Malformed, sourceName + ": not a JSON object");
    Reader r(j, sourceName);
    ModelConfig c;

    // Family: "architectures"[0], else "model_type".
    if (r.has("architectures")) {
        const Json& a = j.at("architectures");
        if (!a.is_array() || a.empty() || !a[0].is_string())
            return r.bad("architectures", "must be a non-empty list of strings");
        c.architecture = a[0].get<std::string>();
    } else if (r.has("model_type")) {
        std::string mt;
        COLI_RETURN_IF_ERROR(r.getString("model_type", "", &mt));
        for (const auto& e : kFamilies)
            if (mt == e.modelType) c.architecture = e.architecture;
        if (c.architecture.empty())
            return Status(ErrorCode::Unsupported,
                          sourceName + ": model_type '" + mt +
                              "' is not supported; supported: " + supportedArchitectures());
    } else {
        return Status(ErrorCode::Malformed,
                      sourceName + ": key 'architectures' is missing (and no 'model_type')");
    }
    if (!familyFromArchitecture(c.architecture, &c.family))
        return Status(ErrorCode::Unsupported,
                      sourceName + ": architecture '" + c.architecture +
                          "' is not supported; supported: " + supportedArchitectures());
    const Family f = c.family;
    const Defaults d = defaultsFor(f);

    COLI_RETURN_IF_ERROR(r.getInt("vocab_size", d.vocab, &c.vocabSize));
    COLI_RETURN_IF_ERROR(r.getInt("hidden_size", d.hidden, &c.dModel));
    COLI_RETURN_IF_ERROR(r.getInt("num_hidden_layers", d.layers, &c.nLayers));
    COLI_RETURN_IF_ERROR(r.getInt("num_attention_heads", d.heads, &c.nHeads));
    COLI_RETURN_IF_ERROR(
        r.getInt("num_key_value_heads", d.kvHeads > 0 ? d.kvHeads : c.nHeads, &c.nKvHeads));
    COLI_RETURN_IF_ERROR(r.getInt("max_position_embeddings", d.maxPos, &c.maxPositions));
    COLI_RETURN_IF_ERROR(r.getFloat("rms_norm_eps", d.eps, &c.rmsNormEps));
    COLI_RETURN_IF_ERROR(r.getBool("tie_word_embeddings", false, &c.tieWordEmbeddings));
    COLI_RETURN_IF_ERROR(r.getString("hidden_act", "silu", &c.hiddenAct));
    COLI_RETURN_IF_ERROR(r.getString("torch_dtype", "", &c.torchDtype));
    COLI_RETURN_IF_ERROR(r.getString("dtype", c.torchDtype, &c.torchDtype));
    for (auto [key, v] : {std::pair{"vocab_size", c.vocabSize},
                          {"hidden_size", c.dModel},
                          {"num_hidden_layers", c.nLayers},
                          {"num_attention_heads", c.nHeads},
                          {"num_key_value_heads", c.nKvHeads},
                          {"max_position_embeddings", c.maxPositions}})
        COLI_RETURN_IF_ERROR(positive(r, key, v));
    COLI_RETURN_IF_ERROR(atMost(r, "num_hidden_layers", c.nLayers, kMaxLayers));
    COLI_RETURN_IF_ERROR(atMost(r, "vocab_size", c.vocabSize, kMaxVocab));
    COLI_RETURN_IF_ERROR(atMost(r, "hidden_size", c.dModel, kMaxWidth));
    COLI_RETURN_IF_ERROR(atMost(r, "num_attention_heads", c.nHeads, kMaxWidth));
    if (!(c.rmsNormEps > 0)) return r.bad("rms_norm_eps", "must be > 0");
    if (c.hiddenAct != "silu")
        return Status(ErrorCode::Unsupported, sourceName + ": hidden_act '" + c.hiddenAct +
                                                  "' is not supported (only silu)");
    if (c.nHeads % c.nKvHeads != 0)
        return r.bad("num_key_value_heads", "(" + std::to_string(c.nKvHeads) +
                                                ") must divide num_attention_heads (" +
                                                std::to_string(c.nHeads) + ")");

    if (f == Family::DeepseekV2 || f == Family::DeepseekV3) {
        COLI_RETURN_IF_ERROR(parseRope(r, d.theta, c));
        COLI_RETURN_IF_ERROR(parseDeepseek(r, sourceName, c));
        return c;
    }

    // Head size: OLMoE and GraniteMoE always use hidden_size / num_attention_heads; Qwen and
    // Mixtral take config "head_dim" when present (getattr(config, "head_dim", ...)).
    const bool headDimKey = f == Family::Qwen2Moe || f == Family::Qwen3Moe || f == Family::Mixtral;
    if (!headDimKey || !r.has("head_dim")) {
        if (c.dModel % c.nHeads != 0)
            return r.bad("num_attention_heads", "(" + std::to_string(c.nHeads) +
                                                    ") must divide hidden_size (" +
                                                    std::to_string(c.dModel) + ")");
        c.headDim = c.dModel / c.nHeads;
        if (r.has("head_dim")) {
            int hd = 0;
            COLI_RETURN_IF_ERROR(r.getInt("head_dim", 0, &hd));
            if (hd != c.headDim)
                return r.bad("head_dim", "(" + std::to_string(hd) + ") does not match " +
                                             "hidden_size / num_attention_heads (" +
                                             std::to_string(c.headDim) + ")");
        }
    } else {
        COLI_RETURN_IF_ERROR(r.getInt("head_dim", 0, &c.headDim));
        COLI_RETURN_IF_ERROR(positive(r, "head_dim", c.headDim));
        COLI_RETURN_IF_ERROR(atMost(r, "head_dim", c.headDim, kMaxWidth));
    }
    if (c.headDim % 2 != 0)
        return r.bad("head_dim", "(" + std::to_string(c.headDim) + ") must be even for RoPE");

    COLI_RETURN_IF_ERROR(parseRope(r, d.theta, c));

    // Attention extras.
    switch (f) {
    case Family::Olmoe:
        c.qkNorm = QkNorm::WholeProjection;
        COLI_RETURN_IF_ERROR(r.getBool("attention_bias", false, &c.attentionBias));
        c.attentionOutBias = c.attentionBias;
        COLI_RETURN_IF_ERROR(r.getFloat("clip_qkv", 0.0f, &c.clipQkv));
        if (r.has("clip_qkv") && !(c.clipQkv > 0)) return r.bad("clip_qkv", "must be > 0 or null");
        break;
    case Family::Qwen2Moe:
        // Qwen2MoeAttention: q/k/v Linear(bias=config.qkv_bias, default True), o_proj no bias.
        COLI_RETURN_IF_ERROR(r.getBool("qkv_bias", true, &c.attentionBias));
        break;
    case Family::Qwen3Moe:
        c.qkNorm = QkNorm::PerHead;
        COLI_RETURN_IF_ERROR(r.getBool("attention_bias", false, &c.attentionBias));
        c.attentionOutBias = c.attentionBias;
        break;
    case Family::Mixtral:
        break;
    case Family::GraniteMoe:
        COLI_RETURN_IF_ERROR(r.getBool("attention_bias", false, &c.attentionBias));
        c.attentionOutBias = c.attentionBias;
        break;
    case Family::DeepseekV2:
    case Family::DeepseekV3:
        break; // parseDeepseek
    }
    if (f == Family::Qwen2Moe || f == Family::Qwen3Moe) {
        bool sliding = false;
        COLI_RETURN_IF_ERROR(r.getBool("use_sliding_window", false, &sliding));
        if (sliding)
            return Status(ErrorCode::Unsupported,
                          sourceName + ": use_sliding_window=true is not supported yet");
    }
    if (f == Family::Mixtral) {
        COLI_RETURN_IF_ERROR(r.getInt("sliding_window", 0, &c.slidingWindow));
        if (r.has("sliding_window"))
            COLI_RETURN_IF_ERROR(positive(r, "sliding_window", c.slidingWindow));
    }

    // Experts and routing.
    const char* expertsKey =
        (f == Family::Mixtral || f == Family::GraniteMoe) ? "num_local_experts" : "num_experts";
    const char* altExpertsKey =
        (f == Family::Mixtral || f == Family::GraniteMoe) ? "num_experts" : "num_local_experts";
    if (!r.has(expertsKey) && r.has(altExpertsKey)) std::swap(expertsKey, altExpertsKey);
    COLI_RETURN_IF_ERROR(r.getInt(expertsKey, d.experts, &c.nExperts));
    COLI_RETURN_IF_ERROR(r.getInt("num_experts_per_tok", d.topK, &c.topK));
    COLI_RETURN_IF_ERROR(positive(r, expertsKey, c.nExperts));
    COLI_RETURN_IF_ERROR(positive(r, "num_experts_per_tok", c.topK));
    COLI_RETURN_IF_ERROR(atMost(r, expertsKey, c.nExperts, kMaxExperts));
    if (c.topK > c.nExperts)
        return r.bad("num_experts_per_tok", "(" + std::to_string(c.topK) + ") exceeds " +
                                                expertsKey + " (" + std::to_string(c.nExperts) +
                                                ")");
    int intermediate = 0;
    COLI_RETURN_IF_ERROR(r.getInt("intermediate_size", d.intermediate, &intermediate));
    COLI_RETURN_IF_ERROR(positive(r, "intermediate_size", intermediate));
    COLI_RETURN_IF_ERROR(atMost(r, "intermediate_size", intermediate, kMaxWidth));
    switch (f) {
    case Family::Olmoe:
        c.expertFfn = intermediate;
        COLI_RETURN_IF_ERROR(r.getBool("norm_topk_prob", false, &c.normTopkProb));
        break;
    case Family::Qwen2Moe:
    case Family::Qwen3Moe:
        c.denseFfn = intermediate;
        COLI_RETURN_IF_ERROR(
            r.getInt("moe_intermediate_size", f == Family::Qwen2Moe ? 1408 : 768, &c.expertFfn));
        COLI_RETURN_IF_ERROR(positive(r, "moe_intermediate_size", c.expertFfn));
        COLI_RETURN_IF_ERROR(atMost(r, "moe_intermediate_size", c.expertFfn, kMaxWidth));
        COLI_RETURN_IF_ERROR(r.getBool("norm_topk_prob", false, &c.normTopkProb));
        if (f == Family::Qwen2Moe) {
            COLI_RETURN_IF_ERROR(r.getInt("shared_expert_intermediate_size", 5632, &c.sharedFfn));
            if (c.sharedFfn < 0) return r.bad("shared_expert_intermediate_size", "must be >= 0");
            COLI_RETURN_IF_ERROR(
                atMost(r, "shared_expert_intermediate_size", c.sharedFfn, kMaxWidth));
            c.sharedExpertGate = c.sharedFfn > 0;
        }
        break;
    case Family::Mixtral:
        // MixtralSparseMoeBlock: softmax over all, top-k, always divided by their sum.
        c.expertFfn = intermediate;
        c.normTopkProb = true;
        break;
    case Family::GraniteMoe:
        c.expertFfn = intermediate;
        c.routerSoftmaxOverTopk = true;
        c.normTopkProb = true;
        break;
    case Family::DeepseekV2:
    case Family::DeepseekV3:
        break; // parseDeepseek
    }
    COLI_RETURN_IF_ERROR(parseSparseLayers(r, c));

    // GraniteMoE muP multipliers (GraniteMoeConfig defaults 1.0; attention_multiplier is the
    // softmax scale itself, replacing 1/sqrt(head_dim)).
    if (f == Family::GraniteMoe) {
        COLI_RETURN_IF_ERROR(r.getFloat("embedding_multiplier", 1.0f, &c.embeddingMultiplier));
        COLI_RETURN_IF_ERROR(r.getFloat("attention_multiplier", 1.0f, &c.attentionMultiplier));
        COLI_RETURN_IF_ERROR(r.getFloat("residual_multiplier", 1.0f, &c.residualMultiplier));
        COLI_RETURN_IF_ERROR(r.getFloat("logits_scaling", 1.0f, &c.logitsScaling));
        if (c.logitsScaling == 0.0f) return r.bad("logits_scaling", "must not be 0");
        std::string pet;
        COLI_RETURN_IF_ERROR(r.getString("position_embedding_type", "rope", &pet));
        if (pet != "rope")
            return Status(ErrorCode::Unsupported, sourceName + ": position_embedding_type '" + pet +
                                                      "' is not supported (only rope)");
    }
    return c;
}

Result<ModelConfig> loadConfig(const std::string& dir) {
    // A file given as the model directory would otherwise read as ".../config.json/config.json:
    // file not found".
    std::error_code ec;
    if (std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir, ec))
        return Status(ErrorCode::NotFound,
                      dir + ": not a directory (give the checkpoint directory, which holds "
                            "config.json)");
    const std::string path = dir + "/config.json";
    // A folder without config.json is most likely not a model at all (the user picked the
    // folder above it, or another one): say what a model folder is rather than "file not found".
    if (std::filesystem::is_directory(dir, ec) && !std::filesystem::exists(path, ec) &&
        !std::filesystem::is_symlink(path, ec))
        return Status(ErrorCode::NotFound,
                      dir + " is not a model folder: a model folder holds config.json, "
                            "*.safetensors and tokenizer.json (config.json is missing)");
    auto text = readTextFile(path);
    if (!text) return text.status();
    return parseConfig(text.value(), path);
}

} // namespace coli
