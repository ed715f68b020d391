#pragma once
// The one table that maps (family, tensor kind, layer, expert) to the tensor name in a Hugging Face
// checkpoint. Families are rows of data in tensor_names.cpp, not branches in the forward pass.
// Sources: the modelling code of each family in huggingface/transformers (module names of
// OlmoeDecoderLayer, Qwen2MoeDecoderLayer, Qwen3MoeDecoderLayer, MixtralDecoderLayer,
// GraniteMoeDecoderLayer, DeepseekV2DecoderLayer, DeepseekV3DecoderLayer) and llama.cpp
// gguf-py/gguf/tensor_mapping.py. Thread-safety: pure functions over constant data.
#include "model/config.h"

#include <string>

namespace coli {

enum class TensorKind {
    Embed,            // [vocab, d_model]
    FinalNorm,        // [d_model]
    LmHead,           // [vocab, d_model] (absent when tie_word_embeddings)
    AttnNorm,         // [d_model]                     per layer
    FfnNorm,          // [d_model]                     per layer
    Q,                // [n_heads*head_dim, d_model]
    K,                // [n_kv*head_dim, d_model]
    V,                // [n_kv*head_dim, d_model]
    O,                // [d_model, n_heads*head_dim]; MLA: [d_model, n_heads*v_head_dim]
    QBias,            // [n_heads*head_dim]
    KBias,            // [n_kv*head_dim]
    VBias,            // [n_kv*head_dim]
    OBias,            // [d_model]
    QNorm,            // [head_dim] (PerHead) or [n_heads*head_dim] (WholeProjection)
    KNorm,            // [head_dim] or [n_kv*head_dim]
    Router,           // [n_experts, d_model]
    ExpertGate,       // [expert_ffn, d_model]         per layer and expert (per-expert layout)
    ExpertUp,         // [expert_ffn, d_model]
    ExpertDown,       // [d_model, expert_ffn]
    ExpertsGateUp,    // [n_experts, 2*expert_ffn, d_model] stacked: per expert gate rows then up
                      // rows (GraniteMoeMoE: input_linear output .chunk(2, dim=-1), act on chunk 0)
    ExpertsDown,      // [n_experts, d_model, expert_ffn]   stacked
    SharedGate,       // [shared_ffn, d_model]          Qwen2-MoE shared expert
    SharedUp,         // [shared_ffn, d_model]
    SharedDown,       // [d_model, shared_ffn]
    SharedExpertGate, // [1, d_model]                 sigmoid gate of the shared expert
    DenseGate,        // [dense_ffn, d_model]           dense (mlp_only) layers
    DenseUp,          // [dense_ffn, d_model]
    DenseDown,        // [d_model, dense_ffn]
    // Multi-head latent attention (DeepSeek-V2/V3; config.h MlaConfig), H = n_heads:
    QA,         // [q_lora_rank, d_model]                  when q_lora_rank (else Q:
                //                                          [H*(nope+rope), d_model])
    QANorm,     // [q_lora_rank]                           RMSNorm, eps 1e-6
    QB,         // [H*(nope+rope), q_lora_rank]
    KvA,        // [kv_lora_rank + rope, d_model]          kv_a_proj_with_mqa
    KvANorm,    // [kv_lora_rank]                          RMSNorm, eps 1e-6
    KvB,        // [H*(nope+v), kv_lora_rank]              per head: nope k rows, then v rows
    RouterBias, // [n_experts] f32                         V3 e_score_correction_bias
};

enum class ExpertLayout {
    PerExpert, // one 2-D tensor per expert and projection (ExpertGate/ExpertUp/ExpertDown)
    Stacked,   // one 3-D tensor per layer for all experts (ExpertsGateUp/ExpertsDown)
};

// The layout a family's published checkpoints use (GraniteMoE: Stacked; others: PerExpert).
// OLMoE and Qwen checkpoints saved by transformers 5 may instead hold the Stacked tensors
// (mlp.experts.gate_up_proj / down_proj); the loader accepts either (see weights.h).
ExpertLayout expertLayout(Family f);

// The tensor name, e.g. tensorName(Family::Mixtral, TensorKind::ExpertGate, 3, 5) ==
// "model.layers.3.block_sparse_moe.experts.5.w1.weight". Empty when the family has no tensor
// of that kind (e.g. Mixtral has no SharedGate). `layer` / `expert` are ignored by kinds that do
// not take them.
std::string tensorName(Family f, TensorKind kind, int layer = 0, int expert = 0);

} // namespace coli
