#pragma once
// Internal: the forward pass's view of a KVCache's buffers. Not for use outside engine/forward/.
#include "forward/model.h"

namespace coli {

struct KVCacheAccess {
    // Makes `kv` fit a model of nLayers x kvDim and holds at least `tokens` positions (grows
    // geometrically, never past maxTokens). Returns false when kv was filled by a model with other
    // dimensions. Growing keeps the data: position is the outermost dimension.
    static bool reserve(KVCache& kv, int nLayers, int kvDim, int tokens, int maxTokens);
    static float* keys(KVCache& kv, int layer) { return kv.m_k[layer].data(); }   // [cap, kvDim]
    static float* values(KVCache& kv, int layer) { return kv.m_v[layer].data(); } // [cap, kvDim]
    static void setSize(KVCache& kv, int n) { kv.m_nTokens = n; }
};

} // namespace coli
