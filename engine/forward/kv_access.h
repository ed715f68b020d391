#pragma once
// Internal: the forward pass's view of a KVCache's buffers. Not for use outside engine/forward/.
#include "forward/model.h"

namespace coli {

struct KVCacheAccess {
    // Makes `kv` fit a model of nLayers layers of `shape` and holds at least `tokens` positions,
    // never past maxTokens: room for twice `tokens` (at least 256 more) when it grows, so that a
    // long prompt's answer does not move the cache at its first token (growing copies each head's
    // cached positions; the room ahead costs address space only, see KVCache).
    // commitAhead > 0: the pages of the positions up to tokens + commitAhead (never past the
    // capacity) that are not yet committed are committed here, one madvise per head block, so
    // that the forward pass writing them takes no page fault per 4 KiB. commitAhead = 0: the
    // caller writes positions [size, tokens) now and faults their pages in itself (a prompt, whose
    // rows the team's threads write in parallel; a serial commit here cost 2-5 % of a 30-token
    // prefill on the OLMoE shape, docs/performance.md, 2026-12-05 21:12 UTC).
    // Returns false when kv was filled by a model with other dimensions.
    static bool reserve(KVCache& kv, int nLayers, KvShape shape, int tokens, int maxTokens,
                        int commitAhead);
    // The commitAhead of a decode step (one token): the next 64 positions' pages committed at once
    // instead of one page fault per 4 KiB appended (64 faults a token on the OLMoE shape, 0.5-1.0
    // ms of a 25 ms step on a 2-core VM; committing 64 positions takes about 4 ms once per 64
    // tokens, docs/performance.md, 2026-12-05 06:57 UTC). 64 bounds what is committed and never
    // written to 64 positions.
    static constexpr int kDecodeCommitAhead = 64;
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
