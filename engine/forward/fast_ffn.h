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
// At decode (one token, k experts that each take it) a third form does better: whole experts as
// tasks (expertSteal): each thread computes gate, up and down of its own experts in one phase,
// reading whole matrices one after another instead of half of each (measured on the OLMoE shape,
// int4, two threads: the experts' phases 2.71 -> 2.64 s per 192 tokens, decode +1-3 %), and
// takes down rows of the other threads' experts once its own are done, since two threads reading
// the same bytes do not finish together (the static split left 1.0-2.4 ms per token waiting at
// the phase's barrier, docs/performance.md). Same bits: a row's value does not depend on which
// rows a call covers or which thread computes it.
#include "forward/fast_matmul.h"
#include "forward/steal_ranges.h"

#include <atomic>
#include <cstdint>
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
// Decode: the items (each taking the same tokens, one at decode) as tasks, one per item's
// gate/up (with act and its quantised groups) and one per downChunkRows rows of its down
// projection, balanced by stealing (team.steal, StealRanges). Thread t owns the items laid end to
// end by weight bytes whose start falls in its share, its tasks in the order gate/up of each,
// then the down chunks of each, so the back of its range (what another thread steals) depends on
// gate/up work the owner did first; a down chunk is stolen only once its item's act is complete
// (actDone[item] == epoch, stored with release by the thread that computed it). Each output row's
// bits are those of gateUpShare then downShare. Call on every thread of the team, then sync;
// actDone holds items.size() entries and epoch differs from every value they hold (a new one per
// call). Without team.steal each thread computes its own tasks only.
struct ExpertTasks {
    std::atomic<uint32_t>* actDone = nullptr; // [items]
    uint32_t epoch = 0;
    int downRows = 0; // rows per down task, a multiple of Team::kRowBlock; 0: downChunkRows
};
void expertSteal(const Team& team, std::span<const FfnItem> items, int dModel,
                 const ExpertTasks& tasks);
// Rows of one down task: a multiple of Team::kRowBlock, about 64 KiB of w.down's weights (what a
// thief takes at a time: short next to an expert's 1-3 MB), at most dModel.
int downChunkRows(const SwiGluView& w, int dModel);
// The input of item's down projection (act, f32 and quantised).
ActInput downInput(const FfnItem& item);

} // namespace coli
