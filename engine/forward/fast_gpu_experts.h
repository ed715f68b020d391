#pragma once
// Internal: the Fast forward pass's MoE layer with a VRAM tier (docs/gpu.md "In the forward
// pass"). Master only, between the team's syncs:
//   gpuSubmit  after routing: the items whose expert is in VRAM (resident experts: or admitted
//              now) become GPU jobs, one per (expert, token), submitted at once (ws.onGpu marks
//              them). Resident experts: the rest (and the shared expert) are ws.cpuItems, which
//              the team computes while the device works. Streamed: the cache hands out the rest
//              (ExpertCache::beginLayer's onGpu);
//   gpuCollect when the CPU's share is done: waits, copies each job's output into its slotOut
//              row, and lists as ws.redoItems / ws.redoPositions the items with a flagged job (or
//              all of them when the device failed), which the CPU then computes (resident: the
//              team at once; streamed: through the cache, ExpertCache::wantOnCpu).
// Outputs land in the same slotOut rows the CPU would write, and the top-k sum reads them in the
// router's order, so the tokens and logits are those of the CPU alone.
#include "forward/model_impl.h"

namespace coli {

// n: the chunk's tokens; shared: the shared-expert item (ws.items[ws.nItems]) or null;
// streamed: the experts stream through the cache (no cpuItems, no admission here).
void gpuSubmit(const ModelImpl& m, int layer, int n, const FfnItem* shared, bool streamed);
void gpuCollect(const ModelImpl& m);

} // namespace coli
