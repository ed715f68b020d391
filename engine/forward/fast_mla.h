#pragma once
// Internal: multi-head latent attention (DeepSeek-V2/V3) on the Fast path, run by every thread
// of a chunk's team (forward_fast.cpp) in place of the GQA attention: the same function as the
// Reference path's (forward_reference.cpp mlaAttention; the up-projections absorbed into the query
// and the attended latent), each output element computed by one thread in a fixed order.
#include "forward/fast_team.h"
#include "forward/model_impl.h"

namespace coli {

// x [n, d_model] += o(MLA(rmsnorm(x))) for the chunk's n tokens at positions pos0..; appends the
// tokens' latent and rope key rows to kv (already reserved). Called by every thread of `team`;
// syncs between its phases and once at the end.
void mlaAttentionShare(const ModelImpl& m, KVCache& kv, const Team& team, const LayerWeights& L,
                       int layer, int n, int pos0);

} // namespace coli
