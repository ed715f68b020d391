#pragma once
// Internal: one query head's attention over the cached positions, the Fast path's inner loop
// (forward_fast.cpp). The float operations and their order are those of
//   scores[j] = dotFast(q, K[j], hd) * scale;  softmax(scores);  out = sum_j scores[j] * V[j]
// with the sum over j in position order, element by element (no FMA): the loop the Fast path had
// inline before, plus prefetches of the rows ahead, which change no arithmetic.
#include <cstddef>

namespace coli {

// q [kDim]; K, V: position j's key / value row of this head at K + j * stride, V + j * stride
// (floats); positions [first, last] inclusive; scores: scratch of last - first + 1 floats;
// out [vDim] = softmax over j of (q . K[j]) * scale, times V[j], summed in position order.
// GQA: kDim = vDim = head_dim. MLA: K = V = the cached rows [latent, rope key], kDim = the whole
// row, vDim = the latent (its first kv_lora_rank floats).
// prefetch: fetch the rows ahead of the reads (into L1 and L2). For a decode step, whose one
// query per head reads each row once from memory; not in prefill, where a chunk's tokens read
// the same rows again from the caches and the prefetches only add instructions (the 512-token
// prompt's attention phase took ~6 % longer with them, docs/performance.md, 2026-12-05 21:12 UTC).
// Thread-safety: pure (writes only scores and out).
void attendHead(const float* q, const float* K, const float* V, size_t stride, int first, int last,
                int kDim, int vDim, float scale, float* scores, float* out, bool prefetch);

} // namespace coli
