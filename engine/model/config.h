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

enum class Family { Olmoe, Qwen2Moe, Qwen3Moe, Mixtral, GraniteMoe };

const char* familyName(Family f); // the HF architecture string, e.g. "OlmoeForCausalLM"

enum class QkNorm {
    None,
    PerHead,         // Qwen3-MoE: RMSNorm over head_dim, weight [head_dim]
    WholeProjection, // OLMoE: RMSNorm over the full q (n_heads*head_dim) / k (n_kv*head_dim)
};

struct RopeScaling {
    std::string type; // "" (none), "linear", "dynamic", "yarn", "llama3"
    float factor = 1.0f;
    // llama3 / yarn extras (HF config "rope_scaling" keys)
    float lowFreqFactor = 1.0f;
    float highFreqFactor = 4.0f;
    int originalMaxPositionEmbeddings = 0;
    float betaFast = 32.0f;
    float betaSlow = 1.0f;
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
    std::vector<bool> sparseLayer; // [nLayers]: true where the layer's MLP is MoE
    int denseFfn = 0;              // intermediate_size for dense (mlp_only) layers

    // Shared expert (Qwen2-MoE): SwiGLU of sharedFfn, scaled by sigmoid(shared_expert_gate . x)
    int sharedFfn = 0; // shared_expert_intermediate_size (0 = none)
    bool sharedExpertGate = false;

    // GraniteMoE muP multipliers (1.0 = off)
    float embeddingMultiplier = 1.0f; // embedding_multiplier
    float attentionMultiplier = 0.0f; // attention_multiplier (0 = use 1/sqrt(head_dim))
    float residualMultiplier = 1.0f;  // residual_multiplier
    float logitsScaling = 1.0f;       // logits_scaling (logits are divided by it)

    std::string torchDtype; // torch_dtype, informational
};

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
