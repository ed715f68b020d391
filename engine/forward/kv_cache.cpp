// The KV cache's storage (model.h KVCache, forward/kv_access.h).
#include "forward/kv_access.h"
#include "forward/model.h"

#include <algorithm>
#include <cstring>

namespace coli {

void KVCache::truncate(int nTokens) {
    m_nTokens = std::clamp(nTokens, 0, m_nTokens);
}

bool KVCacheAccess::reserve(KVCache& kv, int nLayers, KvShape shape, int tokens, int maxTokens) {
    const KvShape& have = kv.m_shape;
    if (have.heads != shape.heads || have.kDim != shape.kDim || have.vDim != shape.vDim ||
        int(kv.m_k.size()) != nLayers) {
        if (kv.m_nTokens > 0) return false;
        kv.m_k.clear();
        kv.m_v.clear();
        kv.m_k.resize(size_t(nLayers));
        kv.m_v.resize(size_t(nLayers));
        kv.m_shape = shape;
        kv.m_capacity = 0;
    }
    if (tokens <= kv.m_capacity) return true;
    const int64_t want =
        std::max<int64_t>({2 * int64_t(tokens), int64_t(tokens) + 256, 2 * int64_t(kv.m_capacity)});
    const int cap = int(std::min<int64_t>(maxTokens, want));
    // Each head's block grows from old capacity to cap rows: move the cached rows over.
    auto grow = [&](std::unique_ptr<float[]>& buf, int dim) {
        if (dim == 0) return;
        const size_t oldStride = size_t(kv.m_capacity) * dim, stride = size_t(cap) * dim;
        const size_t used = size_t(kv.m_nTokens) * dim;
        auto next = std::make_unique_for_overwrite<float[]>(size_t(shape.heads) * stride);
        for (int h = 0; h < shape.heads && used > 0; ++h)
            std::copy_n(buf.get() + h * oldStride, used, next.get() + h * stride);
        buf = std::move(next);
    };
    for (int l = 0; l < nLayers; ++l) {
        grow(kv.m_k[l], shape.kDim);
        grow(kv.m_v[l], shape.vDim);
    }
    kv.m_capacity = cap;
    return true;
}

size_t KVCache::positionFloats() const {
    return m_k.size() * size_t(m_shape.heads) * size_t(m_shape.kDim + m_shape.vDim);
}

void KVCache::copyPosition(int pos, float* out) const {
    const size_t ks = size_t(m_capacity) * m_shape.kDim, vs = size_t(m_capacity) * m_shape.vDim;
    for (size_t l = 0; l < m_k.size(); ++l) {
        for (int h = 0; h < m_shape.heads; ++h, out += m_shape.kDim)
            std::memcpy(out, m_k[l].get() + h * ks + size_t(pos) * m_shape.kDim,
                        sizeof(float) * m_shape.kDim);
        for (int h = 0; h < m_shape.heads && m_shape.vDim > 0; ++h, out += m_shape.vDim)
            std::memcpy(out, m_v[l].get() + h * vs + size_t(pos) * m_shape.vDim,
                        sizeof(float) * m_shape.vDim);
    }
}

Status KVCache::assign(int nLayers, KvShape shape, int maxTokens, std::span<const float> rows,
                       int n) {
    *this = KVCache();
    if (nLayers <= 0 || shape.heads <= 0 || shape.kDim <= 0 || shape.vDim < 0 || n < 0)
        return {ErrorCode::InvalidArgument, "KV cache: dimensions must be positive"};
    if (n > maxTokens)
        return {ErrorCode::InvalidArgument, "KV cache: " + std::to_string(n) +
                                                " positions exceed the context length " +
                                                std::to_string(maxTokens)};
    const size_t per = size_t(nLayers) * shape.heads * size_t(shape.kDim + shape.vDim);
    if (rows.size() != per * size_t(n))
        return {ErrorCode::InvalidArgument, "KV cache: " + std::to_string(rows.size()) +
                                                " floats given for " + std::to_string(n) +
                                                " positions of " + std::to_string(per)};
    KVCacheAccess::reserve(*this, nLayers, shape, std::max(n, 1), maxTokens);
    const size_t ks = size_t(m_capacity) * shape.kDim, vs = size_t(m_capacity) * shape.vDim;
    for (int pos = 0; pos < n; ++pos) {
        const float* in = rows.data() + per * size_t(pos);
        for (int l = 0; l < nLayers; ++l) {
            for (int h = 0; h < shape.heads; ++h, in += shape.kDim)
                std::memcpy(m_k[l].get() + h * ks + size_t(pos) * shape.kDim, in,
                            sizeof(float) * shape.kDim);
            for (int h = 0; h < shape.heads && shape.vDim > 0; ++h, in += shape.vDim)
                std::memcpy(m_v[l].get() + h * vs + size_t(pos) * shape.vDim, in,
                            sizeof(float) * shape.vDim);
        }
    }
    m_nTokens = n;
    return {};
}

} // namespace coli
