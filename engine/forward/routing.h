#pragma once
// The router's top-k for one token, every family's rule in one place (shared by the Reference
// and Fast paths, and the streamed-expert lookahead). Sources: the MoE blocks of transformers'
// modelling files (OlmoeSparseMoeBlock, Qwen2MoeSparseMoeBlock, MixtralSparseMoeBlock,
// GraniteMoeTopKGating, DeepseekV2Moe.route_tokens_to_experts, DeepseekV3MoE.route_tokens_to_
// experts). The rule, with p the scores and s the selection scores:
//   GraniteMoE (routerSoftmaxOverTopk): top-k of the logits, weights = softmax over those k.
//   Otherwise: p = softmax(logits) (or sigmoid(logits), DeepSeek-V3); s = p (+ the V3
//   e_score_correction_bias). With group selection the experts form n_group consecutive groups,
//   each scored by its best s (V2 group_limited_greedy) or the sum of its two best s (V3
//   noaux_tc); the topk_group best groups are kept and every other expert's s becomes 0.0.
//   The top-k of s are chosen (descending s; ties -> lower expert id); their weights are p (not s),
//   divided by their sum when norm_topk_prob (V3 adds 1e-20 to the sum), then multiplied by
//   routed_scaling_factor.
// Thread-safety: pure (writes only its outputs and scratch).
#include "model/config.h"

namespace coli {

// Floats of scratch selectExperts needs for this config.
int routingScratchFloats(const ModelConfig& c);

// logits: [n_experts] the router's output for one token; bias: [n_experts] (V3's
// e_score_correction_bias) or null; scratch: routingScratchFloats(c) floats.
// sel: [top_k] expert ids in the router's top-k order; weights: [top_k] the gates the experts'
// outputs are multiplied by.
void selectExperts(const ModelConfig& c, const float* logits, const float* bias, float* scratch,
                   int* sel, float* weights);

} // namespace coli
