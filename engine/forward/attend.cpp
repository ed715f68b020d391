#include "forward/attend.h"

#include "forward/kernels.h"

#include <algorithm>

namespace coli {

namespace {

// The head's key rows, then its value rows, read as one sequence of bytes, with each 64-byte line
// prefetched 1 KiB ahead of the reads into L1 and 3 KiB ahead into L2: the two distances of the
// quantised kernels' LinePrefetch (quant/avx2_helpers.h). The hardware's L2 streamer stops at
// each 4 KiB page and a head's rows are a few pages; the far cursor keeps misses in flight across
// those boundaries and from the keys into the values. perf put 84 % of this loop's samples on its
// prefetches (a full fill-buffer queue: it waits for memory). Measured on the OLMoE shape at ~55
// positions (docs/performance.md, 2026-12-05 07:00 UTC): 0.85-0.87 ms per token with the rows 8
// positions ahead into L1 (before), 0.74-0.78 with the two cursors, 0.74-0.76 with 2 and 4 KiB.
class KvPrefetch {
public:
    KvPrefetch(const float* keys, const float* values, size_t bytes)
        : m_k(reinterpret_cast<const char*>(keys)), m_v(reinterpret_cast<const char*>(values)),
          m_bytes(bytes) {}
    // Prefetches every line below readEnd + each cursor's distance not yet fetched; readEnd is
    // a byte offset into keys (< bytes) then values (bytes + offset).
    void upTo(size_t readEnd) {
        const size_t total = 2 * m_bytes;
        for (; m_near < std::min(total, readEnd + kNear); m_near += 64)
            __builtin_prefetch(at(m_near), 0, 3);
        for (; m_far < std::min(total, readEnd + kFar); m_far += 64)
            __builtin_prefetch(at(m_far), 0, 2);
    }

private:
    static constexpr size_t kNear = 1024, kFar = 3072;
    const char* at(size_t offset) const {
        return offset < m_bytes ? m_k + offset : m_v + (offset - m_bytes);
    }
    const char *m_k, *m_v;
    size_t m_bytes;
    size_t m_near = 0, m_far = 0;
};

template <bool kPrefetch>
void attendRows(const float* q, const float* K, const float* V, size_t stride, int first, int last,
                int kDim, int vDim, float scale, float* scores, float* out) {
    const int n = last - first + 1;
    const size_t rowBytes = sizeof(float) * stride;
    KvPrefetch ahead(K + size_t(first) * stride, V + size_t(first) * stride, rowBytes * size_t(n));
    for (int j = first; j <= last; ++j) {
        if constexpr (kPrefetch) ahead.upTo(rowBytes * size_t(j - first + 1));
        scores[j - first] = dotFast(q, K + size_t(j) * stride, kDim) * scale;
    }
    softmax(scores, n);
    std::fill(out, out + vDim, 0.0f);
    for (int j = first; j <= last; ++j) {
        if constexpr (kPrefetch) ahead.upTo(rowBytes * size_t(n + j - first + 1));
        const float pj = scores[j - first];
        const float* vv = V + size_t(j) * stride;
        for (int i = 0; i < vDim; ++i)
            out[i] += pj * vv[i];
    }
}

} // namespace

void attendHead(const float* q, const float* K, const float* V, size_t stride, int first, int last,
                int kDim, int vDim, float scale, float* scores, float* out, bool prefetch) {
    if (prefetch)
        attendRows<true>(q, K, V, stride, first, last, kDim, vDim, scale, scores, out);
    else
        attendRows<false>(q, K, V, stride, first, last, kDim, vDim, scale, scores, out);
}

} // namespace coli
