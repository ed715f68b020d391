// The Fast forward pass: the same function as forward_reference.cpp, computed as matrix-matrix
// products over a chunk of tokens with OpenMP across output rows (matmuls), across
// (token, head) pairs (attention) and across tokens (norms, RoPE, routing). No allocation in the
// loops: every buffer lives in the FastWorkspace sized at load.
// Determinism: every output element is computed by one thread with a fixed summation order
// (dotFast), and experts are summed in the router's top-k order, so the thread count never
// changes a bit of the result.
#include "forward/kernels.h"
#include "forward/kv_access.h"
#include "forward/model_impl.h"
#include "quant/matmul.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace coli {

namespace {

// Work (multiply-adds or element updates) below which a loop runs on one thread: an OpenMP team
// costs microseconds to wake, more than a tiny loop's work. Changing the thread count of a loop
// never changes its results (each element is computed by one thread in a fixed order).
constexpr long kMinParallelWork = 1L << 15;

int threadId() {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

// Y[t, r] = W.row(r) . X[t] (+ bias[r]) for t < n. X: [n, ldx], Y: [n, ldy].
// Parallel over output rows r: each thread streams its rows of W once for all n tokens.
void matmulF32(const MatrixView& W, const float* X, int ldx, int n, float* Y, int ldy,
               const float* bias, int threads) {
    const bool par = long(W.rows) * W.cols * n >= kMinParallelWork;
#pragma omp parallel for num_threads(threads) schedule(static) if (par)
    for (int r = 0; r < W.rows; ++r) {
        const float* w = W.row(r);
        for (int t = 0; t < n; ++t) {
            float y = dotFast(w, X + size_t(t) * ldx, W.cols);
            if (bias) y += bias[r];
            Y[size_t(t) * ldy + r] = y;
        }
    }
}

// The same product on quantised weights (quant/matmul.h): the n activation rows are quantised
// in the weights' groups, then each thread computes a range of output rows (multiples of 4, the
// kernels' row block). Every y element is computed by one thread in the kernels' fixed order, so
// the thread count never changes a bit. Activations with NaN/Inf cannot be quantised: Y becomes
// NaN, which forward() reports as a Numeric error on the logits.
void matmulQuantised(const MatrixView& W, const float* X, int ldx, int n, float* Y, int ldy,
                     const float* bias, int threads, FastWorkspace& ws) {
    const int G = quant::formatInfo(W.qfmt).groupSize;
    // One pass per token when the rows are not packed as the kernels expect (never in the
    // current callers, which all pass ldx == cols and ldy == rows).
    const bool packed = ldx == W.cols && ldy == W.rows;
    const int passes = packed ? 1 : n;
    const int perPass = packed ? n : 1;
    for (int p = 0; p < passes; ++p) {
        const float* x = X + size_t(p) * ldx;
        float* y = Y + size_t(p) * ldy;
        quant::QuantisedActivations xa;
        if (!quant::quantiseActivations(x, perPass, W.cols, G, ws.xq.data(), ws.xq.size(), &xa)
                 .isOk()) {
            for (int t = 0; t < perPass; ++t)
                std::fill_n(y + size_t(t) * ldy, W.rows, std::numeric_limits<float>::quiet_NaN());
            continue;
        }
        const bool par = long(W.rows) * W.cols * perPass >= kMinParallelWork;
        const int64_t blocks = (int64_t(W.rows) + 3) / 4;
#pragma omp parallel num_threads(threads) if (par)
        {
#ifdef _OPENMP
            const int64_t nt = omp_get_num_threads(), id = omp_get_thread_num();
#else
            const int64_t nt = 1, id = 0;
#endif
            const int64_t r0 = std::min<int64_t>(W.rows, blocks * id / nt * 4);
            const int64_t r1 = std::min<int64_t>(W.rows, blocks * (id + 1) / nt * 4);
            // Arguments were checked by quantiseActivations and at load (formats, sizes).
            (void)quant::quantMatmulRows(W.qfmt, W.q, W.rows, W.cols, xa, y, r0, r1);
        }
    }
    if (bias)
        for (int t = 0; t < n; ++t)
            for (int r = 0; r < W.rows; ++r)
                Y[size_t(t) * ldy + r] += bias[r];
}

void matmul(const MatrixView& W, const float* X, int ldx, int n, float* Y, int ldy,
            const float* bias, int threads, FastWorkspace& ws) {
    if (W.quantised())
        matmulQuantised(W, X, ldx, n, Y, ldy, bias, threads, ws);
    else
        matmulF32(W, X, ldx, n, Y, ldy, bias, threads);
}

// g <- silu(g) * u, both [n, ffn] with leading dimension ld.
void swigluAct(float* g, const float* u, int n, int ffn, int ld, int threads) {
#pragma omp parallel for num_threads(threads)                                                      \
    schedule(static) if (long(n) * ffn >= kMinParallelWork)
    for (int t = 0; t < n; ++t)
        for (int i = 0; i < ffn; ++i)
            g[size_t(t) * ld + i] = silu(g[size_t(t) * ld + i]) * u[size_t(t) * ld + i];
}

// Y [n, d_model] = down(silu(gate X) * up X) for X [n, d_model]; uses ws.g / ws.u.
void swiglu(const SwiGluView& e, const float* X, int n, int d, float* Y, FastWorkspace& ws,
            int threads) {
    const int ffn = e.gate.rows;
    matmul(e.gate, X, d, n, ws.g.data(), ffn, nullptr, threads, ws);
    matmul(e.up, X, d, n, ws.u.data(), ffn, nullptr, threads, ws);
    swigluAct(ws.g.data(), ws.u.data(), n, ffn, ffn, threads);
    matmul(e.down, ws.g.data(), ffn, n, Y, d, nullptr, threads, ws);
}

class ChunkRunner {
public:
    ChunkRunner(const ModelImpl& m, KVCache& kv, ForwardTimes& times)
        : m(m), c(m.cfg), ws(m.ws), kv(kv), times(times), T(m.threads) {}

    // Runs n <= kChunk tokens at positions pos0.. and, when `logits` is set, writes the logits
    // of rows [firstLogitRow, n) to logits (one [vocab] row each). When `routing` is set, the
    // chunk's routing goes to its rows [row0, row0 + n).
    Status run(const int32_t* tokens, int n, int pos0, int firstLogitRow, float* logits,
               RoutingTrace* routing, int row0) {
        const int d = c.dModel;
#pragma omp parallel for num_threads(T) schedule(static) if (long(n) * c.dModel >= kMinParallelWork)
        for (int t = 0; t < n; ++t) {
            float* x = ws.x.data() + size_t(t) * d;
            m.w.embed.rowF32(tokens[t], x); // dequantised when the table is quantised
            for (int i = 0; i < d; ++i)
                x[i] *= c.embeddingMultiplier;
        }
        int moeIndex = 0; // index of the next MoE layer in routing->moeLayers
        for (int l = 0; l < c.nLayers; ++l) {
            const LayerWeights& L = m.w.layers[l];
            normRows(L.attnNorm.data(), n);
            const auto tAttention = std::chrono::steady_clock::now();
            attention(L, l, n, pos0);
            times.attention += regionSeconds(tAttention);
            addResidual(ws.o.data(), n);
            normRows(L.ffnNorm.data(), n);
            if (L.sparse) {
                const auto tMoe = std::chrono::steady_clock::now();
                const Status moeStatus = moe(L, l, m.w.experts[l], n);
                times.moe += regionSeconds(tMoe);
                COLI_RETURN_IF_ERROR(moeStatus);
                if (routing) recordRouting(*routing, row0, moeIndex, n);
                ++moeIndex;
            } else {
                swiglu(L.dense, ws.h.data(), n, d, ws.mlpOut.data(), ws, T);
            }
            addResidual(ws.mlpOut.data(), n);
        }
        KVCacheAccess::setSize(kv, pos0 + n);
        if (m.cache) m.cache->endTokens(n);
        if (!logits) return {};
        const int rows = n - firstLogitRow;
        normRows(m.w.finalNorm.data(), n);
        matmul(m.w.outputMatrix(), ws.h.data() + size_t(firstLogitRow) * d, d, rows, logits,
               c.vocabSize, nullptr, T, ws);
        const float inv = c.logitsScaling;
#pragma omp parallel for num_threads(T) schedule(static) if (long(n) * c.dModel >= kMinParallelWork)
        for (int t = 0; t < rows; ++t)
            for (int i = 0; i < c.vocabSize; ++i)
                logits[size_t(t) * c.vocabSize + i] /= inv;
        return {};
    }

private:
    // h[t] = rmsnorm(x[t]) * w
    void normRows(const float* w, int n) {
        const int d = c.dModel;
#pragma omp parallel for num_threads(T) schedule(static) if (long(n) * c.dModel >= kMinParallelWork)
        for (int t = 0; t < n; ++t)
            rmsNorm(ws.x.data() + size_t(t) * d, w, d, c.rmsNormEps, ws.h.data() + size_t(t) * d);
    }

    // x[t] += y[t] * residual_multiplier
    void addResidual(const float* y, int n) {
        const int d = c.dModel;
#pragma omp parallel for num_threads(T) schedule(static) if (long(n) * c.dModel >= kMinParallelWork)
        for (int t = 0; t < n; ++t)
            for (int i = 0; i < d; ++i)
                ws.x[size_t(t) * d + i] += y[size_t(t) * d + i] * c.residualMultiplier;
    }

    // h [n, d_model] -> o [n, d_model]; appends K/V of the n tokens to the cache.
    void attention(const LayerWeights& L, int layer, int n, int pos0) {
        const int d = c.dModel, hd = c.headDim, half = hd / 2;
        const int qDim = c.nHeads * hd, kvDim = c.nKvHeads * hd;
        auto ptr = [](const std::vector<float>& b) { return b.empty() ? nullptr : b.data(); };
        matmul(L.q, ws.h.data(), d, n, ws.q.data(), qDim, ptr(L.qBias), T, ws);
        matmul(L.k, ws.h.data(), d, n, ws.k.data(), kvDim, ptr(L.kBias), T, ws);
        matmul(L.v, ws.h.data(), d, n, ws.v.data(), kvDim, ptr(L.vBias), T, ws);

        float* K = KVCacheAccess::keys(kv, layer);
        float* V = KVCacheAccess::values(kv, layer);
#pragma omp parallel for num_threads(T) schedule(static) if (long(n) * c.dModel >= kMinParallelWork)
        for (int t = 0; t < n; ++t) {
            float* q = ws.q.data() + size_t(t) * qDim;
            float* k = ws.k.data() + size_t(t) * kvDim;
            float* v = ws.v.data() + size_t(t) * kvDim;
            if (c.qkNorm == QkNorm::WholeProjection) {
                rmsNorm(q, L.qNorm.data(), qDim, c.rmsNormEps, q);
                rmsNorm(k, L.kNorm.data(), kvDim, c.rmsNormEps, k);
            }
            if (c.clipQkv > 0) {
                for (int i = 0; i < qDim; ++i)
                    q[i] = std::clamp(q[i], -c.clipQkv, c.clipQkv);
                for (int i = 0; i < kvDim; ++i)
                    k[i] = std::clamp(k[i], -c.clipQkv, c.clipQkv);
                for (int i = 0; i < kvDim; ++i)
                    v[i] = std::clamp(v[i], -c.clipQkv, c.clipQkv);
            }
            if (c.qkNorm == QkNorm::PerHead) {
                for (int h = 0; h < c.nHeads; ++h)
                    rmsNorm(q + h * hd, L.qNorm.data(), hd, c.rmsNormEps, q + h * hd);
                for (int h = 0; h < c.nKvHeads; ++h)
                    rmsNorm(k + h * hd, L.kNorm.data(), hd, c.rmsNormEps, k + h * hd);
            }
            float* cs = ws.cosSin.data() + size_t(t) * hd;
            m.rope.cosSin(pos0 + t, cs, cs + half);
            for (int h = 0; h < c.nHeads; ++h)
                Rope::apply(q + h * hd, hd, cs, cs + half);
            for (int h = 0; h < c.nKvHeads; ++h)
                Rope::apply(k + h * hd, hd, cs, cs + half);
            std::memcpy(K + size_t(pos0 + t) * kvDim, k, sizeof(float) * kvDim);
            std::memcpy(V + size_t(pos0 + t) * kvDim, v, sizeof(float) * kvDim);
        }

        const float scale = m.attentionScale();
        const int group = c.nHeads / c.nKvHeads;
#pragma omp parallel for collapse(2) num_threads(T)                                                \
    schedule(static) if (long(n) * c.nHeads * (pos0 + n) * hd >= kMinParallelWork)
        for (int t = 0; t < n; ++t) {
            for (int h = 0; h < c.nHeads; ++h) {
                const int pos = pos0 + t, kvh = h / group;
                const int first = c.slidingWindow > 0 ? std::max(0, pos - c.slidingWindow + 1) : 0;
                float* scores = ws.scores.data() + size_t(threadId()) * ws.scoreTokens;
                const float* q = ws.q.data() + size_t(t) * qDim + h * hd;
                for (int j = first; j <= pos; ++j)
                    scores[j - first] = dotFast(q, K + size_t(j) * kvDim + kvh * hd, hd) * scale;
                softmax(scores, pos - first + 1);
                float* out = ws.att.data() + size_t(t) * qDim + h * hd;
                std::fill(out, out + hd, 0.0f);
                for (int j = first; j <= pos; ++j) {
                    const float p = scores[j - first];
                    const float* vv = V + size_t(j) * kvDim + kvh * hd;
                    for (int i = 0; i < hd; ++i)
                        out[i] += p * vv[i];
                }
            }
        }
        matmul(L.o, ws.att.data(), qDim, n, ws.o.data(), d, ptr(L.oBias), T, ws);
    }

    // Copies the chunk's top-k (ws.sel, ws.gateW) into rows [row0, row0 + n) of MoE layer i.
    void recordRouting(RoutingTrace& r, int row0, int i, int n) const {
        const int K = c.topK;
        for (int t = 0; t < n; ++t) {
            const size_t at = r.offset(row0 + t, i);
            std::copy_n(ws.sel.data() + size_t(t) * K, K, r.experts.data() + at);
            std::copy_n(ws.gateW.data() + size_t(t) * K, K, r.weights.data() + at);
        }
    }

    // h [n, d_model] -> mlpOut [n, d_model]: router, top-k experts, shared expert.
    Status moe(const LayerWeights& L, int layer, const std::vector<SwiGluWeights>& experts, int n) {
        const int d = c.dModel, E = c.nExperts, K = c.topK;
        matmul(L.router, ws.h.data(), d, n, ws.routerLogits.data(), E, nullptr, T, ws);
#pragma omp parallel for num_threads(T) schedule(static) if (long(n) * c.dModel >= kMinParallelWork)
        for (int t = 0; t < n; ++t) {
            float* lg = ws.routerLogits.data() + size_t(t) * E;
            int* sel = ws.sel.data() + size_t(t) * K;
            float* w = ws.gateW.data() + size_t(t) * K;
            if (c.routerSoftmaxOverTopk) {
                topK(lg, E, K, sel);
                for (int j = 0; j < K; ++j)
                    w[j] = lg[sel[j]];
                softmax(w, K);
            } else {
                softmax(lg, E);
                topK(lg, E, K, sel);
                float sum = 0.0f;
                for (int j = 0; j < K; ++j) {
                    w[j] = lg[sel[j]];
                    sum += w[j];
                }
                if (c.normTopkProb)
                    for (int j = 0; j < K; ++j)
                        w[j] /= sum;
            }
        }
        // Union of the chunk's routed experts: each distinct expert runs once over its tokens,
        // writing each (token, slot) result into its own row of slotOut.
        const int cap = FastWorkspace::kChunk;
        std::fill(ws.expertCount.begin(), ws.expertCount.end(), 0);
        for (int s = 0; s < n * K; ++s) {
            const int e = ws.sel[s];
            ws.expertTokens[size_t(e) * cap + ws.expertCount[e]++] = s;
        }
        int nUnion = 0;
        for (int e = 0; e < E; ++e)
            if (ws.expertCount[e] > 0) ws.unionExperts[nUnion++] = e;
        if (!m.cache) {
            for (int i = 0; i < nUnion; ++i)
                runExpert(experts[ws.unionExperts[i]], ws.unionExperts[i], K);
        } else {
            // Streamed: whichever wanted expert is resident first computes first, while the
            // others are read; each writes only its own slotOut rows, so the order is free.
            const std::span<const int> wanted(ws.unionExperts.data(), size_t(nUnion));
            for (int i = 0; i < nUnion; ++i)
                ws.unionCounts[i] = ws.expertCount[ws.unionExperts[i]];
            COLI_RETURN_IF_ERROR(m.cache->beginLayer(
                layer, wanted, std::span<const int>(ws.unionCounts.data(), size_t(nUnion))));
            lookahead(layer, n);
            for (;;) {
                SwiGluView view;
                Result<int> pos = m.cache->next(&view);
                if (!pos) return pos.status();
                if (*pos < 0) break;
                runExpert(view, wanted[size_t(*pos)], K);
                m.cache->finished(*pos);
            }
        }
#pragma omp parallel for num_threads(T) schedule(static) if (long(n) * c.dModel >= kMinParallelWork)
        for (int t = 0; t < n; ++t) {
            float* out = ws.mlpOut.data() + size_t(t) * d;
            std::fill(out, out + d, 0.0f);
            for (int j = 0; j < K; ++j) { // the router's top-k order
                const float* y = ws.slotOut.data() + (size_t(t) * K + j) * d;
                for (int i = 0; i < d; ++i)
                    out[i] += y[i];
            }
        }
        if (c.sharedFfn > 0) {
            swiglu(L.shared, ws.h.data(), n, d, ws.y.data(), ws, T);
            if (c.sharedExpertGate)
                matmul(L.sharedExpertGate, ws.h.data(), d, n, ws.sharedGate.data(), 1, nullptr, T,
                       ws);
#pragma omp parallel for num_threads(T) schedule(static) if (long(n) * c.dModel >= kMinParallelWork)
            for (int t = 0; t < n; ++t) {
                const float g = c.sharedExpertGate ? sigmoid(ws.sharedGate[t]) : 1.0f;
                for (int i = 0; i < d; ++i)
                    ws.mlpOut[size_t(t) * d + i] += ws.y[size_t(t) * d + i] * g;
            }
        }
        return {};
    }

    // Expert e over its tokens of the chunk (ws.expertTokens): slotOut rows = gate * output.
    void runExpert(const SwiGluView& ex, int e, int K) {
        const int d = c.dModel, cap = FastWorkspace::kChunk, cnt = ws.expertCount[e];
        const int* slots = ws.expertTokens.data() + size_t(e) * cap;
        for (int i = 0; i < cnt; ++i)
            std::memcpy(ws.gather.data() + size_t(i) * d, ws.h.data() + size_t(slots[i] / K) * d,
                        sizeof(float) * d);
        swiglu(ex, ws.gather.data(), cnt, d, ws.y.data(), ws, T);
        for (int i = 0; i < cnt; ++i) {
            const float w = ws.gateW[slots[i]];
            float* dst = ws.slotOut.data() + size_t(slots[i]) * d;
            const float* y = ws.y.data() + size_t(i) * d;
            for (int j = 0; j < d; ++j)
                dst[j] = y[j] * w;
        }
    }

    // Router lookahead: the next MoE layer's router applied to this layer's residual stream
    // (after attention, normed with that layer's ffn norm) predicts its experts; they are
    // requested now so their reads overlap this layer's expert compute. Only the cache's reads
    // change: nothing computed here reaches the outputs.
    void lookahead(int layer, int n) {
        if (!m.cache->prefetchEnabled()) return;
        int next = layer + 1;
        while (next < c.nLayers && !m.w.layers[next].sparse)
            ++next;
        if (next >= c.nLayers) return;
        const LayerWeights& N = m.w.layers[next];
        const int d = c.dModel, E = c.nExperts, K = c.topK;
        for (int t = 0; t < n; ++t)
            rmsNorm(ws.x.data() + size_t(t) * d, N.ffnNorm.data(), d, c.rmsNormEps,
                    ws.lookH.data() + size_t(t) * d);
        matmul(N.router, ws.lookH.data(), d, n, ws.lookLogits.data(), E, nullptr, T, ws);
        std::fill(ws.lookUnion.begin(), ws.lookUnion.end(), 0);
        for (int t = 0; t < n; ++t) {
            int* sel = ws.lookSel.data() + size_t(t) * K;
            topK(ws.lookLogits.data() + size_t(t) * E, E, K, sel);
            for (int j = 0; j < K; ++j)
                ws.lookUnion[sel[j]] = 1;
        }
        int nPred = 0;
        for (int e = 0; e < E; ++e)
            if (ws.lookUnion[e]) ws.lookSel[nPred++] = e; // reuse as the list (nPred <= E)
        m.cache->prefetch(next, std::span<const int>(ws.lookSel.data(), size_t(nPred)));
    }

    const ModelImpl& m;
    const ModelConfig& c;
    FastWorkspace& ws;
    KVCache& kv;
    ForwardTimes& times; // the region clocks (ForwardTimes), read between OpenMP regions
    const int T;         // OpenMP threads
};

} // namespace

void FastWorkspace::allocate(const ModelConfig& c, int threads) {
    const size_t C = kChunk, d = c.dModel, K = c.topK, E = c.nExperts;
    const size_t qDim = size_t(c.nHeads) * c.headDim, kvDim = size_t(c.nKvHeads) * c.headDim;
    const size_t ffn = std::max({c.expertFfn, c.sharedFfn, c.denseFfn, 1});
    x.assign(C * d, 0);
    h.assign(C * d, 0);
    q.assign(C * qDim, 0);
    k.assign(C * kvDim, 0);
    v.assign(C * kvDim, 0);
    att.assign(C * qDim, 0);
    o.assign(C * d, 0);
    routerLogits.assign(C * E, 0);
    gateW.assign(C * K, 0);
    sel.assign(C * K, 0);
    slotOut.assign(C * K * d, 0);
    expertTokens.assign(E * C, 0);
    expertCount.assign(E, 0);
    gather.assign(C * d, 0);
    g.assign(C * ffn, 0);
    u.assign(C * ffn, 0);
    y.assign(C * d, 0);
    mlpOut.assign(C * d, 0);
    sharedGate.assign(C, 0);
    cosSin.assign(C * c.headDim, 0);
    unionExperts.assign(E, 0);
    unionCounts.assign(E, 0);
    lookH.assign(C * d, 0);
    lookLogits.assign(C * E, 0);
    lookSel.assign(std::max(C * K, E), 0);
    lookUnion.assign(E, 0);
    // Quantised activations for the widest matmul input (group 32 needs the most scales).
    const size_t maxCols = std::max({d, qDim, ffn});
    xq.assign(quant::activationScratchBytes(32, int64_t(C), int64_t(maxCols)), 0);
    scoreThreads = std::max(threads, 1);
    scoreTokens = 0;
    reserveScores(std::min(c.maxPositions, 64), c.maxPositions);
}

void FastWorkspace::reserveScores(int tokens, int maxTokens) {
    if (tokens <= scoreTokens) return;
    scoreTokens = std::min(maxTokens, std::max(tokens, 2 * scoreTokens));
    scores.assign(size_t(scoreThreads) * scoreTokens, 0);
}

Status forwardFast(const ModelImpl& m, std::span<const int32_t> tokens, KVCache& kv,
                   std::vector<float>& logits, bool allLogits, RoutingTrace* routing,
                   ForwardTimes& times) {
    const int n = int(tokens.size()), V = m.cfg.vocabSize;
    logits.resize(size_t(allLogits ? n : 1) * V);
    ChunkRunner runner(m, kv, times);
    for (int c0 = 0; c0 < n; c0 += FastWorkspace::kChunk) {
        const int cn = std::min(FastWorkspace::kChunk, n - c0);
        const bool last = c0 + cn == n;
        if (allLogits) {
            COLI_RETURN_IF_ERROR(runner.run(tokens.data() + c0, cn, kv.size(), 0,
                                            logits.data() + size_t(c0) * V, routing, c0));
        } else {
            COLI_RETURN_IF_ERROR(runner.run(tokens.data() + c0, cn, kv.size(), cn - 1,
                                            last ? logits.data() : nullptr, routing, c0));
        }
    }
    return {};
}

} // namespace coli
