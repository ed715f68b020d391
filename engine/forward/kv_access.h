#pragma once
// Internal: the forward pass's view of a KVCache's buffers. Not for use outside engine/forward/.
#include "forward/model.h"

namespace coli {

struct KVCacheAccess {
    // Makes `kv` fit a model of nLayers layers of `shape` and holds at least `tokens` positions,
    // never past maxTokens: room for twice `tokens` (at least 256 more) when it grows, so that a
    // long prompt's answer does not move the cache at its first token (growing copies each head's
    // cached positions; the room ahead costs address space only, see KVCache).
    // Returns false when kv was filled by a model with other dimensions.
    static bool reserve(KVCache& kv, int nLayers, KvShape shape, int tokens, int maxTokens);
    // Layer `layer`'s keys [heads, capacity, kDim] / values [heads, capacity, vDim] (null when
    // vDim is 0): head h's key row of position j is at + h * headStride(kv) + j * kDim, its value
    // row at + h * valueHeadStride(kv) + j * vDim.
    static float* keys(KVCache& kv, int layer) { return kv.m_k[layer].get(); }
    static float* values(KVCache& kv, int layer) { return kv.m_v[layer].get(); }
    static size_t headStride(const KVCache& kv) { return size_t(kv.m_capacity) * kv.m_shape.kDim; }
    static size_t valueHeadStride(const KVCache& kv) {
        return size_t(kv.m_capacity) * kv.m_shape.vDim;
    }
    static void setSize(KVCache& kv, int n) { kv.m_nTokens = n; }
};

} // namespace coli
