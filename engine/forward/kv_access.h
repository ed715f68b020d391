#pragma once
// Internal: the forward pass's view of a KVCache's buffers. Not for use outside engine/forward/.
#include "forward/model.h"

namespace coli {

struct KVCacheAccess {
    // Makes `kv` fit a model of nLayers x nKvHeads x headDim and holds at least `tokens` positions,
    // never past maxTokens: room for twice `tokens` (at least 256 more) when it grows, so that a
    // long prompt's answer does not move the cache at its first token (growing copies each head's
    // cached positions; the room ahead costs address space only, see KVCache).
    // Returns false when kv was filled by a model with other dimensions.
    static bool reserve(KVCache& kv, int nLayers, int nKvHeads, int headDim, int tokens,
                        int maxTokens);
    // Layer `layer`'s keys / values, [n_kv_heads, capacity, head_dim]: head h's row of position j
    // is at + h * headStride(kv) + j * head_dim.
    static float* keys(KVCache& kv, int layer) { return kv.m_k[layer].get(); }
    static float* values(KVCache& kv, int layer) { return kv.m_v[layer].get(); }
    static size_t headStride(const KVCache& kv) { return size_t(kv.m_capacity) * kv.m_headDim; }
    static void setSize(KVCache& kv, int n) { kv.m_nTokens = n; }
};

} // namespace coli
