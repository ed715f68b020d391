#include "model/tensor_names.h"

#include "core/strings.h"

#include <array>

namespace coli {

namespace {

// Columns follow the Family enum: Olmoe, Qwen2Moe, Qwen3Moe, Mixtral, GraniteMoe, DeepseekV2,
// DeepseekV3.
// {L} is the layer index, {E} the expert index; nullptr = the family has no such tensor.
struct Row {
    TensorKind kind;
    std::array<const char*, 7> pattern;
};

#define ALL7(p)                                                                                    \
    { p, p, p, p, p, p, p }
#define GQA5(p)                                                                                    \
    { p, p, p, p, p, nullptr, nullptr }
#define DEEPSEEK(p)                                                                                \
    { nullptr, nullptr, nullptr, nullptr, nullptr, p, p }

const Row kTable[] = {
    {TensorKind::Embed, ALL7("model.embed_tokens.weight")},
    {TensorKind::FinalNorm, ALL7("model.norm.weight")},
    {TensorKind::LmHead, ALL7("lm_head.weight")},
    {TensorKind::AttnNorm, ALL7("model.layers.{L}.input_layernorm.weight")},
    {TensorKind::FfnNorm, ALL7("model.layers.{L}.post_attention_layernorm.weight")},
    {TensorKind::Q, ALL7("model.layers.{L}.self_attn.q_proj.weight")},
    {TensorKind::K, GQA5("model.layers.{L}.self_attn.k_proj.weight")},
    {TensorKind::V, GQA5("model.layers.{L}.self_attn.v_proj.weight")},
    {TensorKind::O, ALL7("model.layers.{L}.self_attn.o_proj.weight")},
    {TensorKind::QBias, GQA5("model.layers.{L}.self_attn.q_proj.bias")},
    {TensorKind::KBias, GQA5("model.layers.{L}.self_attn.k_proj.bias")},
    {TensorKind::VBias, GQA5("model.layers.{L}.self_attn.v_proj.bias")},
    {TensorKind::OBias, GQA5("model.layers.{L}.self_attn.o_proj.bias")},
    {TensorKind::QNorm,
     {"model.layers.{L}.self_attn.q_norm.weight", nullptr,
      "model.layers.{L}.self_attn.q_norm.weight", nullptr, nullptr, nullptr, nullptr}},
    {TensorKind::KNorm,
     {"model.layers.{L}.self_attn.k_norm.weight", nullptr,
      "model.layers.{L}.self_attn.k_norm.weight", nullptr, nullptr, nullptr, nullptr}},
    {TensorKind::Router,
     {"model.layers.{L}.mlp.gate.weight", "model.layers.{L}.mlp.gate.weight",
      "model.layers.{L}.mlp.gate.weight", "model.layers.{L}.block_sparse_moe.gate.weight",
      "model.layers.{L}.block_sparse_moe.router.layer.weight", "model.layers.{L}.mlp.gate.weight",
      "model.layers.{L}.mlp.gate.weight"}},
    {TensorKind::ExpertGate,
     {"model.layers.{L}.mlp.experts.{E}.gate_proj.weight",
      "model.layers.{L}.mlp.experts.{E}.gate_proj.weight",
      "model.layers.{L}.mlp.experts.{E}.gate_proj.weight",
      "model.layers.{L}.block_sparse_moe.experts.{E}.w1.weight", nullptr,
      "model.layers.{L}.mlp.experts.{E}.gate_proj.weight",
      "model.layers.{L}.mlp.experts.{E}.gate_proj.weight"}},
    {TensorKind::ExpertUp,
     {"model.layers.{L}.mlp.experts.{E}.up_proj.weight",
      "model.layers.{L}.mlp.experts.{E}.up_proj.weight",
      "model.layers.{L}.mlp.experts.{E}.up_proj.weight",
      "model.layers.{L}.block_sparse_moe.experts.{E}.w3.weight", nullptr,
      "model.layers.{L}.mlp.experts.{E}.up_proj.weight",
      "model.layers.{L}.mlp.experts.{E}.up_proj.weight"}},
    {TensorKind::ExpertDown,
     {"model.layers.{L}.mlp.experts.{E}.down_proj.weight",
      "model.layers.{L}.mlp.experts.{E}.down_proj.weight",
      "model.layers.{L}.mlp.experts.{E}.down_proj.weight",
      "model.layers.{L}.block_sparse_moe.experts.{E}.w2.weight", nullptr,
      "model.layers.{L}.mlp.experts.{E}.down_proj.weight",
      "model.layers.{L}.mlp.experts.{E}.down_proj.weight"}},
    // Stacked: GraniteMoE always; OLMoE / Qwen as saved by transformers 5 (OlmoeExperts,
    // Qwen3MoeExperts: nn.Parameter gate_up_proj [E, 2*ffn, d], down_proj [E, d, ffn]).
    {TensorKind::ExpertsGateUp,
     {"model.layers.{L}.mlp.experts.gate_up_proj", "model.layers.{L}.mlp.experts.gate_up_proj",
      "model.layers.{L}.mlp.experts.gate_up_proj", nullptr,
      "model.layers.{L}.block_sparse_moe.input_linear.weight", nullptr, nullptr}},
    {TensorKind::ExpertsDown,
     {"model.layers.{L}.mlp.experts.down_proj", "model.layers.{L}.mlp.experts.down_proj",
      "model.layers.{L}.mlp.experts.down_proj", nullptr,
      "model.layers.{L}.block_sparse_moe.output_linear.weight", nullptr, nullptr}},
    {TensorKind::SharedGate,
     {nullptr, "model.layers.{L}.mlp.shared_expert.gate_proj.weight", nullptr, nullptr, nullptr,
      "model.layers.{L}.mlp.shared_experts.gate_proj.weight",
      "model.layers.{L}.mlp.shared_experts.gate_proj.weight"}},
    {TensorKind::SharedUp,
     {nullptr, "model.layers.{L}.mlp.shared_expert.up_proj.weight", nullptr, nullptr, nullptr,
      "model.layers.{L}.mlp.shared_experts.up_proj.weight",
      "model.layers.{L}.mlp.shared_experts.up_proj.weight"}},
    {TensorKind::SharedDown,
     {nullptr, "model.layers.{L}.mlp.shared_expert.down_proj.weight", nullptr, nullptr, nullptr,
      "model.layers.{L}.mlp.shared_experts.down_proj.weight",
      "model.layers.{L}.mlp.shared_experts.down_proj.weight"}},
    {TensorKind::SharedExpertGate,
     {nullptr, "model.layers.{L}.mlp.shared_expert_gate.weight", nullptr, nullptr, nullptr, nullptr,
      nullptr}},
    {TensorKind::DenseGate,
     {nullptr, "model.layers.{L}.mlp.gate_proj.weight", "model.layers.{L}.mlp.gate_proj.weight",
      nullptr, nullptr, "model.layers.{L}.mlp.gate_proj.weight",
      "model.layers.{L}.mlp.gate_proj.weight"}},
    {TensorKind::DenseUp,
     {nullptr, "model.layers.{L}.mlp.up_proj.weight", "model.layers.{L}.mlp.up_proj.weight",
      nullptr, nullptr, "model.layers.{L}.mlp.up_proj.weight",
      "model.layers.{L}.mlp.up_proj.weight"}},
    {TensorKind::DenseDown,
     {nullptr, "model.layers.{L}.mlp.down_proj.weight", "model.layers.{L}.mlp.down_proj.weight",
      nullptr, nullptr, "model.layers.{L}.mlp.down_proj.weight",
      "model.layers.{L}.mlp.down_proj.weight"}},
    // DeepSeek-V2/V3 multi-head latent attention (DeepseekV3Attention) and the V3 router bias.
    {TensorKind::QA, DEEPSEEK("model.layers.{L}.self_attn.q_a_proj.weight")},
    {TensorKind::QANorm, DEEPSEEK("model.layers.{L}.self_attn.q_a_layernorm.weight")},
    {TensorKind::QB, DEEPSEEK("model.layers.{L}.self_attn.q_b_proj.weight")},
    {TensorKind::KvA, DEEPSEEK("model.layers.{L}.self_attn.kv_a_proj_with_mqa.weight")},
    {TensorKind::KvANorm, DEEPSEEK("model.layers.{L}.self_attn.kv_a_layernorm.weight")},
    {TensorKind::KvB, DEEPSEEK("model.layers.{L}.self_attn.kv_b_proj.weight")},
    {TensorKind::RouterBias,
     {nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
      "model.layers.{L}.mlp.gate.e_score_correction_bias"}},
};
#undef ALL7
#undef GQA5
#undef DEEPSEEK

} // namespace

ExpertLayout expertLayout(Family f) {
    return f == Family::GraniteMoe ? ExpertLayout::Stacked : ExpertLayout::PerExpert;
}

std::string tensorName(Family f, TensorKind kind, int layer, int expert) {
    for (const Row& row : kTable) {
        if (row.kind != kind) continue;
        const char* p = row.pattern[static_cast<size_t>(f)];
        if (!p) return {};
        std::string s = p;
        replaceAll(s, "{L}", std::to_string(layer));
        replaceAll(s, "{E}", std::to_string(expert));
        return s;
    }
    return {};
}

} // namespace coli
