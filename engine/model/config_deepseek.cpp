// The DeepSeek-V2/V3 keys of config.json. Sources: transformers configuration_deepseek_v2.py /
// configuration_deepseek_v3.py (defaults) and modeling_deepseek_v2.py / modeling_deepseek_v3.py
// (what they mean). Where transformers and DeepSeek's own code disagree the case is refused.
#include "model/config_reader.h"

namespace coli::config_detail {

namespace {

Status unsupported(const std::string& source, const std::string& what) {
    return {ErrorCode::Unsupported, source + ": " + what};
}

// The MLA sizes (DeepseekV2Attention / DeepseekV3Attention). q_lora_rank null = q_proj.
Status parseMla(const Reader& r, const std::string& source, bool v3, ModelConfig& c) {
    MlaConfig& m = c.mla;
    COLI_RETURN_IF_ERROR(r.getInt("kv_lora_rank", 512, &m.kvLoraRank));
    COLI_RETURN_IF_ERROR(r.getInt("q_lora_rank", 1536, &m.qLoraRank));
    if (r.json().contains("q_lora_rank") && r.json().at("q_lora_rank").is_null()) m.qLoraRank = 0;
    COLI_RETURN_IF_ERROR(r.getInt("qk_nope_head_dim", 128, &m.qkNopeHeadDim));
    COLI_RETURN_IF_ERROR(r.getInt("qk_rope_head_dim", 64, &m.qkRopeHeadDim));
    COLI_RETURN_IF_ERROR(r.getInt("v_head_dim", 128, &m.vHeadDim));
    for (auto [key, v] : {std::pair{"kv_lora_rank", m.kvLoraRank},
                          {"qk_nope_head_dim", m.qkNopeHeadDim},
                          {"qk_rope_head_dim", m.qkRopeHeadDim},
                          {"v_head_dim", m.vHeadDim}}) {
        COLI_RETURN_IF_ERROR(positive(r, key, v));
        COLI_RETURN_IF_ERROR(atMost(r, key, v, kMaxWidth));
    }
    if (m.qLoraRank < 0) return r.bad("q_lora_rank", "must be > 0 or null");
    COLI_RETURN_IF_ERROR(atMost(r, "q_lora_rank", m.qLoraRank, kMaxWidth));
    if (m.qkRopeHeadDim % 2 != 0)
        return r.bad("qk_rope_head_dim",
                     "(" + std::to_string(m.qkRopeHeadDim) + ") must be even for RoPE");
    // V2 always rotates interleaved pairs (apply_rotary_emb's complex form); V3 de-interleaves
    // first when rope_interleave (default true), which pairs the same elements.
    m.ropeInterleave = true;
    if (v3) COLI_RETURN_IF_ERROR(r.getBool("rope_interleave", true, &m.ropeInterleave));
    // Everything that sizes a query or key head is the MLA head: nope + rope.
    c.headDim = m.qkHeadDim();
    c.nKvHeads = c.nHeads; // MLA has no KV heads of its own; the cache is one latent row
    bool bias = false;
    COLI_RETURN_IF_ERROR(r.getBool("attention_bias", false, &bias));
    if (bias)
        return unsupported(source, "attention_bias=true is not supported for DeepSeek models (no "
                                   "published checkpoint has it)");
    return {};
}

// Routing (DeepseekV2Moe / DeepseekV3MoE route_tokens_to_experts).
Status parseRouting(const Reader& r, const std::string& source, bool v3, ModelConfig& c) {
    std::string scoring, method;
    COLI_RETURN_IF_ERROR(r.getString("scoring_func", v3 ? "sigmoid" : "softmax", &scoring));
    COLI_RETURN_IF_ERROR(r.getString("topk_method", v3 ? "noaux_tc" : "greedy", &method));
    if (!v3 && scoring != "softmax")
        return unsupported(source, "scoring_func '" + scoring +
                                       "' is not supported for DeepseekV2ForCausalLM (softmax)");
    if (v3 && scoring != "sigmoid")
        return unsupported(source, "scoring_func '" + scoring +
                                       "' is not supported for DeepseekV3ForCausalLM (sigmoid)");
    c.scoring = v3 ? RouterScoring::Sigmoid : RouterScoring::Softmax;
    if (!v3 && method == "greedy") {
        c.groupSelection = GroupSelection::None;
    } else if (!v3 && method == "group_limited_greedy") {
        c.groupSelection = GroupSelection::BestScore;
    } else if (v3 && method == "noaux_tc") {
        c.groupSelection = GroupSelection::TopTwoSum;
        c.routerBias = true;
    } else {
        return unsupported(source, std::string("topk_method '") + method +
                                       "' is not supported for " +
                                       (v3 ? "DeepseekV3ForCausalLM (noaux_tc)"
                                           : "DeepseekV2ForCausalLM (greedy, "
                                             "group_limited_greedy)"));
    }
    COLI_RETURN_IF_ERROR(r.getBool("norm_topk_prob", v3, &c.normTopkProb));
    // transformers' V2 ignores norm_topk_prob while DeepSeek's code renormalises: refused.
    if (!v3 && c.normTopkProb)
        return unsupported(source, "norm_topk_prob=true is not supported for "
                                   "DeepseekV2ForCausalLM (transformers and DeepSeek's own code "
                                   "disagree on it)");
    COLI_RETURN_IF_ERROR(
        r.getFloat("routed_scaling_factor", v3 ? 2.5f : 1.0f, &c.routedScalingFactor));
    if (!(c.routedScalingFactor > 0)) return r.bad("routed_scaling_factor", "must be > 0");
    if (c.groupSelection == GroupSelection::None) return {};
    COLI_RETURN_IF_ERROR(r.getInt("n_group", v3 ? 8 : 1, &c.nGroup));
    COLI_RETURN_IF_ERROR(r.getInt("topk_group", v3 ? 4 : 1, &c.topkGroup));
    COLI_RETURN_IF_ERROR(positive(r, "n_group", c.nGroup));
    COLI_RETURN_IF_ERROR(positive(r, "topk_group", c.topkGroup));
    if (c.nExperts % c.nGroup != 0)
        return r.bad("n_group", "(" + std::to_string(c.nGroup) +
                                    ") must divide n_routed_experts (" +
                                    std::to_string(c.nExperts) + ")");
    if (c.topkGroup > c.nGroup)
        return r.bad("topk_group", "(" + std::to_string(c.topkGroup) + ") exceeds n_group (" +
                                       std::to_string(c.nGroup) + ")");
    const int perGroup = c.nExperts / c.nGroup;
    if (c.groupSelection == GroupSelection::TopTwoSum && perGroup < 2)
        return r.bad("n_group", "leaves fewer than 2 experts per group (noaux_tc sums each "
                                "group's best two)");
    // More than the kept groups hold would pick masked (0.0) experts, in an order torch.topk
    // leaves unspecified.
    if (c.topK > c.topkGroup * perGroup)
        return r.bad("num_experts_per_tok", "(" + std::to_string(c.topK) + ") exceeds the " +
                                                std::to_string(c.topkGroup * perGroup) +
                                                " experts of the topk_group kept groups");
    return {};
}

} // namespace

Status parseDeepseek(const Reader& r, const std::string& source, ModelConfig& c) {
    const bool v3 = c.family == Family::DeepseekV3;
    COLI_RETURN_IF_ERROR(parseMla(r, source, v3, c));
    if (!v3 && !r.has("n_routed_experts"))
        return unsupported(source, "n_routed_experts is missing or null: a DeepSeek-V2 model "
                                   "without routed experts is dense, not a Mixture of Experts");
    COLI_RETURN_IF_ERROR(r.getInt("n_routed_experts", v3 ? 256 : 0, &c.nExperts));
    COLI_RETURN_IF_ERROR(r.getInt("num_experts_per_tok", v3 ? 8 : 0, &c.topK));
    COLI_RETURN_IF_ERROR(positive(r, "n_routed_experts", c.nExperts));
    COLI_RETURN_IF_ERROR(positive(r, "num_experts_per_tok", c.topK));
    COLI_RETURN_IF_ERROR(atMost(r, "n_routed_experts", c.nExperts, kMaxExperts));
    if (c.topK > c.nExperts)
        return r.bad("num_experts_per_tok", "(" + std::to_string(c.topK) +
                                                ") exceeds n_routed_experts (" +
                                                std::to_string(c.nExperts) + ")");
    COLI_RETURN_IF_ERROR(r.getInt("intermediate_size", v3 ? 18432 : 11008, &c.denseFfn));
    COLI_RETURN_IF_ERROR(r.getInt("moe_intermediate_size", v3 ? 2048 : 1407, &c.expertFfn));
    int shared = 0;
    COLI_RETURN_IF_ERROR(r.getInt("n_shared_experts", v3 ? 1 : 0, &shared));
    for (auto [key, v] :
         {std::pair{"intermediate_size", c.denseFfn}, {"moe_intermediate_size", c.expertFfn}}) {
        COLI_RETURN_IF_ERROR(positive(r, key, v));
        COLI_RETURN_IF_ERROR(atMost(r, key, v, kMaxWidth));
    }
    if (shared < 0) return r.bad("n_shared_experts", "must be >= 0");
    COLI_RETURN_IF_ERROR(atMost(r, "n_shared_experts", shared, kMaxExperts));
    if (int64_t(shared) * c.expertFfn > kMaxWidth)
        return r.bad("n_shared_experts", "times moe_intermediate_size is too large");
    c.sharedFfn = shared * c.expertFfn; // DeepseekV2MoE: one MLP of that width, no gate
    c.sharedExpertGate = false;
    COLI_RETURN_IF_ERROR(parseRouting(r, source, v3, c));

    int firstDense = 0, freq = 1;
    COLI_RETURN_IF_ERROR(r.getInt("first_k_dense_replace", v3 ? 3 : 0, &firstDense));
    COLI_RETURN_IF_ERROR(r.getInt("moe_layer_freq", 1, &freq));
    if (firstDense < 0) return r.bad("first_k_dense_replace", "must be >= 0");
    if (freq != 1)
        return unsupported(source, "moe_layer_freq " + std::to_string(freq) +
                                       " is not supported (only 1: every layer from "
                                       "first_k_dense_replace on is MoE)");
    c.sparseLayer.assign(size_t(c.nLayers), false);
    for (int l = firstDense; l < c.nLayers; ++l)
        c.sparseLayer[size_t(l)] = true;
    COLI_RETURN_IF_ERROR(r.getInt("num_nextn_predict_layers", 0, &c.mtpLayers));
    if (c.mtpLayers < 0) return r.bad("num_nextn_predict_layers", "must be >= 0");
    COLI_RETURN_IF_ERROR(atMost(r, "num_nextn_predict_layers", c.mtpLayers, kMaxLayers));
    return {};
}

} // namespace coli::config_detail
