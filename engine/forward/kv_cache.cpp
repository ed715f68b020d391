// The KV cache's storage (model.h KVCache, forward/kv_access.h).
#include "forward/kv_access.h"
#include "forward/model.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>

namespace coli {

namespace {

// Commits the pages under rows [from, to) of each of `heads` blocks of `stride` floats at base
// (rows of `dim` floats). MADV_POPULATE_WRITE (Linux 5.14) faults them in without writing; on
// a kernel without it the rows are zeroed instead (they are past the cached positions, never
// read before written). Any other refusal (ENOMEM) leaves them to be faulted in when written.
void commitRows(float* base, int heads, size_t stride, int dim, int from, int to) {
    if (!base || dim == 0 || from >= to) return;
#ifdef MADV_POPULATE_WRITE
    static const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
    static std::atomic<bool> supported{true}; // false once the kernel said EINVAL
    bool populate = supported.load(std::memory_order_relaxed);
    for (int h = 0; h < heads && populate; ++h) {
        const auto a = reinterpret_cast<uintptr_t>(base + h * stride + size_t(from) * dim);
        const auto b = reinterpret_cast<uintptr_t>(base + h * stride + size_t(to) * dim);
        const uintptr_t a0 = a & ~(page - 1), b1 = (b + page - 1) & ~(page - 1);
        if (::madvise(reinterpret_cast<void*>(a0), b1 - a0, MADV_POPULATE_WRITE) == 0) continue;
        if (errno != EINVAL) return;
        populate = false;
        supported.store(false, std::memory_order_relaxed);
    }
    if (populate) return;
#endif
    for (int h = 0; h < heads; ++h)
        std::fill_n(base + h * stride + size_t(from) * dim, size_t(to - from) * dim, 0.f);
}

} // namespace

void KVCache::truncate(int nTokens) {
    m_nTokens = std::clamp(nTokens, 0, m_nTokens);
}

bool KVCacheAccess::reserve(KVCache& kv, int nLayers, KvShape shape, int tokens, int maxTokens,
                            int commitAhead) {
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
        kv.m_committed = 0;
    }
    auto commit = [&] {
        if (tokens <= kv.m_committed) return;
        if (commitAhead <= 0) {
            // The caller writes these rows now (a prompt: every thread of the team faults in the
            // pages of the heads it writes, in parallel); committing them here would be serial.
            kv.m_committed = tokens;
            return;
        }
        const int to = std::min<int64_t>(kv.m_capacity, int64_t(tokens) + commitAhead);
        for (int l = 0; l < nLayers; ++l) {
            commitRows(kv.m_k[l].get(), shape.heads, size_t(kv.m_capacity) * shape.kDim, shape.kDim,
                       kv.m_committed, to);
            commitRows(kv.m_v[l].get(), shape.heads, size_t(kv.m_capacity) * shape.vDim, shape.vDim,
                       kv.m_committed, to);
        }
        kv.m_committed = to;
    };
    if (tokens <= kv.m_capacity) {
        commit();
        return true;
    }
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
    kv.m_committed = kv.m_nTokens; // the copies wrote those rows' pages
    commit();
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
    KVCacheAccess::reserve(*this, nLayers, shape, std::max(n, 1), maxTokens, 0);
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
