#pragma once
// Internal: SwiGLU MLPs (routed experts, the shared expert, dense layers' MLP) in the Fast
// forward pass, computed by a team in two phases for any number of MLPs at once:
//   gate/up phase: the MLPs' intermediate rows, in units of the down projection's group size, are
//     split over the team; a thread computes gate and up for its rows, then act = silu(gate) * up
//     for them, then quantises those (whole) groups of act for the down projection;
//   down phase:    the d_model output rows are split over the team; a thread computes its rows of
//     every MLP's down projection.
// So a layer's k experts cost two phases, not three parallel regions each. The float operations
// per element are those of down(silu(gate x) * up x) with the kernels' fixed order.
// At decode (one token, k experts that each take it) a third form does better: whole experts per
// thread (expertShare), gate, up and down in one phase, as every expert costs the same. One
// thread's act is its own, so down needs no barrier after gate/up, and each thread reads whole
// matrices one after another instead of half of each down projection. Measured on the OLMoE
// shape (int4, two threads): the experts' phases 2.71 -> 2.64 s per 192 tokens, decode +1-3 %
// (docs/performance.md). Same bits: a row's value does not depend on which rows a call covers.
#include "forward/fast_matmul.h"

#include <span>

namespace coli {

struct FfnItem {
    SwiGluView w;
    ActInput in;                  // [cnt, d_model]: the tokens' rows (f32 and quantised)
    int cnt = 0;                  // tokens
    float* g = nullptr;           // [cnt, ffn] gate, then act
    float* u = nullptr;           // [cnt, ffn] up
    QuantisedRows* act = nullptr; // act quantised in rows [actRow, actRow + cnt), cols ffn
    int actRow = 0;
    float* y = nullptr; // [cnt, d_model] down projection
};

// Rows of one unit of the gate/up phase: the down projection's group size (so a thread owns
// whole groups of act), 16 for f32 down.
int ffnUnitRows(const SwiGluView& w);

// Gate/up phase over all items (no sync inside): units of rows shared by cost, the item's tokens
// plus a constant for reading the unit's weights, so that at prefill an expert with many tokens
// counts for more than one with few (any split gives the same bits: rows are independent).
void gateUpShare(const Team& team, std::span<const FfnItem> items);
// Down phase: this thread's share of the d_model rows (blocks of 4) of every item (no sync).
void downShare(const Team& team, std::span<const FfnItem> items, int dModel);
// True when every item takes the same number of tokens and the team divides the items evenly:
// then expertShare gives each thread the same work.
bool evenWholeItems(const Team& team, std::span<const FfnItem> items);
// Whole items per thread: this thread's contiguous share of the items, each computed entirely
// (gate, up, act and its quantised groups, down) into its y rows [cnt, dModel] (no sync inside).
void expertShare(const Team& team, std::span<const FfnItem> items, int dModel);
// The input of item's down projection (act, f32 and quantised).
ActInput downInput(const FfnItem& item);

} // namespace coli
