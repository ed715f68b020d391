#pragma once
// config.json -> one ModelConfig for every supported MoE family. Families are data: the routing
// rule, multipliers and norms are fields here, not branches scattered through the forward pass.
// Key names per family: ../docs/families.md and Hugging Face transformers' configuration_*.py.
// Thread-safety: plain data.
#include "core/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace coli {

enum class Family { Olmoe, Qwen2Moe, Qwen3Moe, Mixtral, GraniteMoe, DeepseekV2, DeepseekV3 };

const char* familyName(Family f);      // the HF architecture string, e.g. "OlmoeForCausalLM"
const char* familyModelType(Family f); // config.json "model_type", e.g. "qwen2_moe"

enum class QkNorm {
    None,
    PerHead,         // Qwen3-MoE: RMSNorm over head_dim, weight [head_dim]
    WholeProjection, // OLMoE: RMSNorm over the full q (n_heads*head_dim) / k (n_kv*head_dim)
};

struct RopeScaling {
    std::string type; // "" (none), "linear", "llama3", "yarn"
    float factor = 1.0f;
    // llama3 / yarn extras (HF config "rope_scaling" keys)
    float lowFreqFactor = 1.0f;
    float highFreqFactor = 4.0f;
    int originalMaxPositionEmbeddings = 0;
    float betaFast = 32.0f;
    float betaSlow = 1.0f;
    // yarn (transformers modeling_rope_utils.py _compute_yarn_parameters): mscale and
    // mscale_all_dim (0 = absent), and the factor cos/sin are multiplied by ("attention_factor"
    // when given, else get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim) when both
    // are set, else get_mscale(factor)); 1 for the other types.
    float mscale = 0.0f;
    float mscaleAllDim = 0.0f;
    float attentionFactor = 1.0f;
    bool truncate = true; // yarn "truncate": correction range rounded outwards to integers
};

// YaRN's get_mscale(scale, mscale) = 0.1 * mscale * ln(scale) + 1 for scale > 1, else 1
// (DeepSeek-V2/V3 modelling code, transformers modeling_rope_utils.py). In double.
double yarnMscale(double scale, double mscale);

// Multi-head latent attention (DeepSeek-V2 paper, arXiv:2405.04434, section 2.1; transformers
// modeling_deepseek_v3.py DeepseekV3Attention). Per token the cache holds only the latent
// c_kv = kv_a_layernorm(kv_a_proj_with_mqa(x)[:kv_lora_rank]) and one RoPE'd key
// k_rope = rope(kv_a_proj_with_mqa(x)[kv_lora_rank:]) shared by every head; kv_b_proj expands the
// latent to each head's k_nope and v. All zero for the other families (GQA).
struct MlaConfig {
    int qLoraRank = 0;  // q_lora_rank (0 = null: q_proj, else q_a_proj + q_a_layernorm + q_b_proj)
    int kvLoraRank = 0; // kv_lora_rank
    int qkNopeHeadDim = 0; // qk_nope_head_dim
    int qkRopeHeadDim = 0; // qk_rope_head_dim
    int vHeadDim = 0;      // v_head_dim
    // RoPE pairs: true rotates (2i, 2i+1) (V2 always; V3 rope_interleave, default true), false
    // rotates (i, i + d/2) like the other families.
    bool ropeInterleave = true;
    int qkHeadDim() const { return qkNopeHeadDim + qkRopeHeadDim; }
};

// How the router's top-k is chosen (config "scoring_func", "topk_method").
enum class RouterScoring {
    Softmax, // p = softmax(logits) over all experts
    Sigmoid, // DeepSeek-V3: p = sigmoid(logits)
};
enum class GroupSelection {
    None,      // top-k over all experts ("greedy", and every other family)
    BestScore, // DeepSeek-V2 "group_limited_greedy": a group's score is its best p
    TopTwoSum, // DeepSeek-V3 "noaux_tc": a group's score is the sum of its two best corrected p
};

struct ModelConfig {
    std::string architecture; // as written in config.json "architectures"[0]
    Family family = Family::Olmoe;
    int nLayers = 0;           // num_hidden_layers
    int dModel = 0;            // hidden_size
    int nHeads = 0;            // num_attention_heads
    int nKvHeads = 0;          // num_key_value_heads (defaults to nHeads)
    int headDim = 0;           // head_dim, or hidden_size / num_attention_heads
    int vocabSize = 0;         // vocab_size
    int maxPositions = 0;      // max_position_embeddings (context length, tokens)
    float rmsNormEps = 1e-6f;  // rms_norm_eps
    float ropeTheta = 10000.f; // rope_theta
    RopeScaling ropeScaling;
    bool tieWordEmbeddings = false; // tie_word_embeddings
    bool attentionBias = false; // q/k/v biases (Qwen2-MoE qkv_bias; OLMoE/Granite attention_bias)
    bool attentionOutBias = false; // o_proj bias (OLMoE/Granite attention_bias; never Qwen2-MoE)
    QkNorm qkNorm = QkNorm::None;
    float clipQkv = 0.0f;           // OLMoE clip_qkv (0 = off)
    int slidingWindow = 0;          // Mixtral sliding_window (0 = off): key j is visible from
                                    // query i when i - window < j <= i (HF masking_utils)
    std::string hiddenAct = "silu"; // hidden_act; only "silu" is supported
    MlaConfig mla;                  // DeepSeek-V2/V3; kvLoraRank == 0 for the other families
    bool isMla() const { return mla.kvLoraRank > 0; }
    // The dimensions RoPE rotates: head_dim, or qk_rope_head_dim with MLA.
    int ropeDim() const { return isMla() ? mla.qkRopeHeadDim : headDim; }

    // Routed experts
    int nExperts = 0;          // num_experts | num_local_experts
    int topK = 0;              // num_experts_per_tok
    int expertFfn = 0;         // moe_intermediate_size | intermediate_size (per expert)
    bool normTopkProb = false; // norm_topk_prob (Mixtral, Granite: implicitly true)
    // Routing rule (all families: router logits = W_router x, no bias):
    //   routerSoftmaxOverTopk == false: p = softmax(all logits); pick top-k of p (ties -> lower
    //       expert index); if normTopkProb, divide the k picked p by their sum.
    //   routerSoftmaxOverTopk == true (GraniteMoE, JetMoeTopKGating): pick top-k logits, weights =
    //       softmax over the k picked logits (mathematically the same as normTopkProb).
    bool routerSoftmaxOverTopk = false;
    // DeepSeek (routing/selectExperts in forward/routing.h has the whole rule): the scoring
    // function, group-limited selection over nGroup groups keeping topkGroup of them, the
    // selection-only bias e_score_correction_bias (V3), and routed_scaling_factor, which every
    // weight is multiplied by last.
    RouterScoring scoring = RouterScoring::Softmax;
    GroupSelection groupSelection = GroupSelection::None;
    int nGroup = 1;                   // n_group
    int topkGroup = 1;                // topk_group
    bool routerBias = false;          // mlp.gate.e_score_correction_bias [n_experts] (V3)
    float routedScalingFactor = 1.0f; // routed_scaling_factor
    int mtpLayers = 0;                // num_nextn_predict_layers: kept by the converter, never run
    std::vector<bool> sparseLayer;    // [nLayers]: true where the layer's MLP is MoE
    int denseFfn = 0;                 // intermediate_size for dense (mlp_only) layers

    // Shared expert (Qwen2-MoE): SwiGLU of sharedFfn, scaled by sigmoid(shared_expert_gate . x);
    // DeepSeek: n_shared_experts experts as one SwiGLU of n_shared_experts * moe_intermediate_size,
    // ungated.
    int sharedFfn = 0; // shared_expert_intermediate_size (0 = none)
    bool sharedExpertGate = false;

    // GraniteMoE muP multipliers (1.0 = off)
    float embeddingMultiplier = 1.0f; // embedding_multiplier
    float attentionMultiplier = 0.0f; // attention_multiplier (0 = use 1/sqrt(head_dim))
    float residualMultiplier = 1.0f;  // residual_multiplier
    float logitsScaling = 1.0f;       // logits_scaling (logits are divided by it)

    std::string torchDtype; // torch_dtype, informational
};

// The KV cache of one layer and position: `heads` rows of kDim key floats and vDim value floats.
// GQA: n_kv_heads x (head_dim + head_dim). MLA: one row of kv_lora_rank + qk_rope_head_dim (the
// latent c_kv then k_rope; values are computed from the latent), vDim 0. Pure.
struct KvShape {
    int heads = 0;
    int kDim = 0;
    int vDim = 0;
};
KvShape kvShape(const ModelConfig& c);

// True when `name` (config.json "architectures"[0]) is one of the supported families; sets *out.
bool familyFromArchitecture(const std::string& name, Family* out);
// "OlmoeForCausalLM, Qwen2MoeForCausalLM, ..." for error messages.
std::string supportedArchitectures();

// Parses `<dir>/config.json`. Errors: NotFound (also when dir is a file: "not a directory"), Io,
// Malformed (bad JSON, missing or absurd key, naming the key: e.g. num_hidden_layers > 1024,
// experts > 65536, widths > 2^20, vocab_size > 2^24), Unsupported (architecture not in the list
// above; the message lists the supported ones).
Result<ModelConfig> loadConfig(const std::string& dir);
Result<ModelConfig> parseConfig(const std::string& jsonText, const std::string& sourceName);

// What `coli info` prints. Counts in parameters (elements), sizes in bytes as stored on disk.
struct ModelSummary {
    int64_t totalParams = 0;
    int64_t activeParams = 0;   // dense + shared + top_k experts per token
    int64_t bytesPerExpert = 0; // gate+up+down of one routed expert, on disk
    int64_t denseBytes = 0;     // everything that is not a routed expert, on disk
    int64_t expertBytes = 0;    // all routed experts, on disk
    int expertsPerLayer = 0;
    int moeLayers = 0;
    std::string storage; // "safetensors (BF16)" etc.
};

} // namespace coli
