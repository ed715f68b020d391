// The family tensor-name table against the module paths of Hugging Face's modelling code.
#include "model/tensor_names.h"

#include <gtest/gtest.h>

namespace coli {
namespace {

TEST(TensorNames, CommonNames) {
    for (Family f :
         {Family::Olmoe, Family::Qwen2Moe, Family::Qwen3Moe, Family::Mixtral, Family::GraniteMoe}) {
        EXPECT_EQ(tensorName(f, TensorKind::Embed), "model.embed_tokens.weight");
        EXPECT_EQ(tensorName(f, TensorKind::FinalNorm), "model.norm.weight");
        EXPECT_EQ(tensorName(f, TensorKind::LmHead), "lm_head.weight");
        EXPECT_EQ(tensorName(f, TensorKind::Q, 7), "model.layers.7.self_attn.q_proj.weight");
        EXPECT_EQ(tensorName(f, TensorKind::O, 0), "model.layers.0.self_attn.o_proj.weight");
        EXPECT_EQ(tensorName(f, TensorKind::AttnNorm, 2), "model.layers.2.input_layernorm.weight");
        EXPECT_EQ(tensorName(f, TensorKind::FfnNorm, 2),
                  "model.layers.2.post_attention_layernorm.weight");
    }
}

TEST(TensorNames, Routers) {
    EXPECT_EQ(tensorName(Family::Olmoe, TensorKind::Router, 1), "model.layers.1.mlp.gate.weight");
    EXPECT_EQ(tensorName(Family::Qwen3Moe, TensorKind::Router, 1),
              "model.layers.1.mlp.gate.weight");
    EXPECT_EQ(tensorName(Family::Mixtral, TensorKind::Router, 1),
              "model.layers.1.block_sparse_moe.gate.weight");
    EXPECT_EQ(tensorName(Family::GraniteMoe, TensorKind::Router, 1),
              "model.layers.1.block_sparse_moe.router.layer.weight");
}

TEST(TensorNames, ExpertsPerExpertAndStacked) {
    EXPECT_EQ(expertLayout(Family::Mixtral), ExpertLayout::PerExpert);
    EXPECT_EQ(tensorName(Family::Mixtral, TensorKind::ExpertGate, 3, 5),
              "model.layers.3.block_sparse_moe.experts.5.w1.weight");
    EXPECT_EQ(tensorName(Family::Mixtral, TensorKind::ExpertUp, 3, 5),
              "model.layers.3.block_sparse_moe.experts.5.w3.weight");
    EXPECT_EQ(tensorName(Family::Mixtral, TensorKind::ExpertDown, 3, 5),
              "model.layers.3.block_sparse_moe.experts.5.w2.weight");
    EXPECT_EQ(tensorName(Family::Qwen2Moe, TensorKind::ExpertDown, 0, 59),
              "model.layers.0.mlp.experts.59.down_proj.weight");
    EXPECT_EQ(expertLayout(Family::GraniteMoe), ExpertLayout::Stacked);
    EXPECT_EQ(tensorName(Family::GraniteMoe, TensorKind::ExpertsGateUp, 4),
              "model.layers.4.block_sparse_moe.input_linear.weight");
    EXPECT_EQ(tensorName(Family::GraniteMoe, TensorKind::ExpertsDown, 4),
              "model.layers.4.block_sparse_moe.output_linear.weight");
    EXPECT_EQ(tensorName(Family::GraniteMoe, TensorKind::ExpertGate, 4, 0), "");
    // transformers 5 packed experts (Qwen3MoeExperts.gate_up_proj / down_proj parameters)
    EXPECT_EQ(tensorName(Family::Qwen3Moe, TensorKind::ExpertsGateUp, 4),
              "model.layers.4.mlp.experts.gate_up_proj");
    EXPECT_EQ(tensorName(Family::Olmoe, TensorKind::ExpertsDown, 4),
              "model.layers.4.mlp.experts.down_proj");
    EXPECT_EQ(tensorName(Family::Mixtral, TensorKind::ExpertsGateUp, 4), "");
}

TEST(TensorNames, FamilySpecificKinds) {
    EXPECT_EQ(tensorName(Family::Qwen2Moe, TensorKind::SharedGate, 1),
              "model.layers.1.mlp.shared_expert.gate_proj.weight");
    EXPECT_EQ(tensorName(Family::Qwen2Moe, TensorKind::SharedExpertGate, 1),
              "model.layers.1.mlp.shared_expert_gate.weight");
    EXPECT_EQ(tensorName(Family::Qwen2Moe, TensorKind::QBias, 1),
              "model.layers.1.self_attn.q_proj.bias");
    EXPECT_EQ(tensorName(Family::Qwen3Moe, TensorKind::DenseDown, 1),
              "model.layers.1.mlp.down_proj.weight");
    EXPECT_EQ(tensorName(Family::Olmoe, TensorKind::QNorm, 1),
              "model.layers.1.self_attn.q_norm.weight");
    EXPECT_EQ(tensorName(Family::Qwen3Moe, TensorKind::KNorm, 1),
              "model.layers.1.self_attn.k_norm.weight");
    EXPECT_EQ(tensorName(Family::Mixtral, TensorKind::SharedGate, 1), "");
    EXPECT_EQ(tensorName(Family::Mixtral, TensorKind::QNorm, 1), "");
}

} // namespace
} // namespace coli
