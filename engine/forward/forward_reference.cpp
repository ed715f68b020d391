// The Reference forward pass: scalar, single-threaded, one token at a time, written to be read
// top to bottom. It is the oracle the Fast path is tested against. It allocates freely.
// Family differences are fields of ModelConfig (see docs/families.md for their HF sources).
#include "forward/kernels.h"
#include "forward/kv_access.h"
#include "forward/model_impl.h"
#include "forward/routing.h"
#include "quant/matmul.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

namespace coli {

namespace {

using Vec = std::vector<float>;

// y = W x (+ bias). W: [rows, cols], x: [cols] -> y: [rows].
// Quantised weights: the definition of quant/matmul.h computed by the scalar kernels (the
// oracle the SIMD paths are tested against), so Reference and Fast agree bit for bit there.
Vec linear(const MatrixView& W, const Vec& x, const Vec& bias = {}) {
    Vec y(W.rows);
    if (W.quantised()) {
        const int G = quant::formatInfo(W.qfmt).groupSize;
        std::vector<uint8_t> scratch(quant::activationScratchBytes(G, 1, W.cols));
        quant::QuantisedActivations xa;
        if (!quant::quantiseActivations(x.data(), 1, W.cols, G, scratch.data(), scratch.size(), &xa)
                 .isOk() ||
            !quant::quantMatmul(W.qfmt, W.q, W.rows, W.cols, xa, y.data(),
                                quant::KernelPath::Scalar)
                 .isOk())
            std::fill(y.begin(), y.end(), std::numeric_limits<float>::quiet_NaN());
    } else {
        for (int r = 0; r < W.rows; ++r)
            y[r] = dotReference(W.row(r), x.data(), W.cols);
    }
    if (!bias.empty())
        for (int r = 0; r < W.rows; ++r)
            y[r] += bias[r];
    return y;
}

// down(silu(gate x) * up x): x [d_model] -> [d_model]
Vec swiglu(const SwiGluView& e, const Vec& x) {
    Vec g = linear(e.gate, x);
    const Vec u = linear(e.up, x);
    for (size_t i = 0; i < g.size(); ++i)
        g[i] = silu(g[i]) * u[i];
    return linear(e.down, g);
}

// Router + top-k experts (+ shared expert). x: [d_model] -> [d_model].
// selOut / weightOut ([top_k] each, may be null): the routing, for RoutingTrace.
// cache: streamed experts (null: resident in `experts`); a failed read sets *err.
Vec moe(const ModelConfig& c, const LayerWeights& L, const std::vector<SwiGluWeights>& experts,
        const Vec& x, int32_t* selOut, float* weightOut, tiers::ExpertCache* cache, int layer,
        Status* err) {
    const Vec logits = linear(L.router, x); // [n_experts]
    std::vector<int> sel(c.topK);
    Vec weight(c.topK);
    Vec scratch(size_t(routingScratchFloats(c)));
    selectExperts(c, logits.data(), L.routerBias.empty() ? nullptr : L.routerBias.data(),
                  scratch.data(), sel.data(), weight.data());
    if (selOut) std::copy(sel.begin(), sel.end(), selOut);
    if (weightOut) std::copy(weight.begin(), weight.end(), weightOut);
    // Each expert's weighted output is added in the router's top-k order.
    std::vector<Vec> ys(size_t(c.topK));
    if (!cache) {
        for (int j = 0; j < c.topK; ++j)
            ys[size_t(j)] = swiglu(experts[sel[j]], x);
    } else {
        // Streamed: the distinct experts, computed in the order they become resident.
        std::vector<int> distinct(sel.begin(), sel.end());
        std::sort(distinct.begin(), distinct.end());
        distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
        *err = cache->beginLayer(layer, distinct);
        if (!err->isOk()) return Vec(c.dModel, 0.0f);
        for (;;) {
            SwiGluView view;
            Result<int> pos = cache->next(&view);
            if (!pos) {
                *err = pos.status();
                return Vec(c.dModel, 0.0f);
            }
            if (*pos < 0) break;
            const Vec y = swiglu(view, x);
            for (int j = 0; j < c.topK; ++j)
                if (sel[j] == distinct[size_t(*pos)]) ys[size_t(j)] = y;
            cache->finished(*pos);
        }
    }
    Vec out(c.dModel, 0.0f);
    for (int j = 0; j < c.topK; ++j) {
        const Vec& y = ys[size_t(j)];
        for (int i = 0; i < c.dModel; ++i)
            out[i] += y[i] * weight[j];
    }
    if (c.sharedFfn > 0) {
        // Qwen2MoeSparseMoeBlock: shared_expert(x) * sigmoid(shared_expert_gate(x)).
        const Vec s = swiglu(L.shared, x);
        const float gate = c.sharedExpertGate ? sigmoid(linear(L.sharedExpertGate, x)[0]) : 1.0f;
        for (int i = 0; i < c.dModel; ++i)
            out[i] += s[i] * gate;
    }
    return out;
}

// Self-attention for one token at position `pos`; appends its K/V to the cache.
// h: [d_model] (normed input) -> [d_model].
Vec attention(const ModelImpl& m, const LayerWeights& L, int layer, const Vec& h, int pos,
              KVCache& kv) {
    const ModelConfig& c = m.cfg;
    const int hd = c.headDim;
    Vec q = linear(L.q, h, L.qBias); // [n_heads * head_dim]
    Vec k = linear(L.k, h, L.kBias); // [n_kv * head_dim]
    Vec v = linear(L.v, h, L.vBias); // [n_kv * head_dim]

    if (c.qkNorm == QkNorm::WholeProjection) { // OLMoE: over the whole projection
        rmsNorm(q.data(), L.qNorm.data(), int(q.size()), c.rmsNormEps, q.data());
        rmsNorm(k.data(), L.kNorm.data(), int(k.size()), c.rmsNormEps, k.data());
    }
    if (c.clipQkv > 0) { // OLMoE clip_qkv, after the norms
        for (Vec* t : {&q, &k, &v})
            for (float& x : *t)
                x = std::clamp(x, -c.clipQkv, c.clipQkv);
    }
    if (c.qkNorm == QkNorm::PerHead) { // Qwen3-MoE: per head, before RoPE
        for (int hh = 0; hh < c.nHeads; ++hh)
            rmsNorm(&q[hh * hd], L.qNorm.data(), hd, c.rmsNormEps, &q[hh * hd]);
        for (int hh = 0; hh < c.nKvHeads; ++hh)
            rmsNorm(&k[hh * hd], L.kNorm.data(), hd, c.rmsNormEps, &k[hh * hd]);
    }

    Vec cos(hd / 2), sin(hd / 2);
    m.rope.cosSin(pos, cos.data(), sin.data());
    for (int hh = 0; hh < c.nHeads; ++hh)
        Rope::apply(&q[hh * hd], hd, cos.data(), sin.data());
    for (int hh = 0; hh < c.nKvHeads; ++hh)
        Rope::apply(&k[hh * hd], hd, cos.data(), sin.data());

    float* K = KVCacheAccess::keys(kv, layer);   // [n_kv_heads, capacity, head_dim]
    float* V = KVCacheAccess::values(kv, layer); // [n_kv_heads, capacity, head_dim]
    const size_t hs = KVCacheAccess::headStride(kv);
    for (int hh = 0; hh < c.nKvHeads; ++hh) {
        std::copy_n(&k[hh * hd], hd, K + hh * hs + size_t(pos) * hd);
        std::copy_n(&v[hh * hd], hd, V + hh * hs + size_t(pos) * hd);
    }

    // Causal (and, with a sliding window w, only keys j > pos - w; HF masking_utils).
    const int first = c.slidingWindow > 0 ? std::max(0, pos - c.slidingWindow + 1) : 0;
    const float scale = m.attentionScale();
    const int group = c.nHeads / c.nKvHeads; // query heads per KV head (repeat_kv)
    Vec out(size_t(c.nHeads) * hd, 0.0f);
    for (int hh = 0; hh < c.nHeads; ++hh) {
        const int kvh = hh / group;
        Vec scores(pos - first + 1);
        for (int j = first; j <= pos; ++j)
            scores[j - first] =
                dotReference(&q[hh * hd], K + kvh * hs + size_t(j) * hd, hd) * scale;
        softmax(scores.data(), int(scores.size()));
        for (int j = first; j <= pos; ++j)
            for (int i = 0; i < hd; ++i)
                out[hh * hd + i] += scores[j - first] * V[kvh * hs + size_t(j) * hd + i];
    }
    return linear(L.o, out, L.oBias);
}

// Multi-head latent attention for one token at `pos` (DeepseekV3Attention, computed with the
// up-projections absorbed: DeepSeek-V2 paper section 2.1.3). Appends the token's latent and rope
// key to the cache. Per head h, with W_UK / W_UV the head's key / value rows of kv_b_proj:
//   q_abs = W_UK^T q_nope,  score_j = (q_abs . c_j + q_rope . k_rope_j) * scale,
//   out_h = W_UV (sum_j softmax(score)_j c_j)
// which equals HF's q . k_j with k_j = [W_UK c_j, k_rope_j] and v_j = W_UV c_j.
// h: [d_model] (normed input) -> [d_model].
Vec mlaAttention(const ModelImpl& m, const LayerWeights& L, int layer, const Vec& h, int pos,
                 KVCache& kv) {
    const ModelConfig& c = m.cfg;
    const MlaConfig& a = c.mla;
    constexpr float kLoraEps = 1e-6f; // q_a_layernorm / kv_a_layernorm: RMSNorm's default eps
    const int H = c.nHeads, qk = a.qkHeadDim(), nope = a.qkNopeHeadDim, rope = a.qkRopeHeadDim;
    const int lora = a.kvLoraRank, row = lora + rope;
    Vec q;
    if (a.qLoraRank > 0) {
        Vec qa = linear(L.qA, h);
        rmsNorm(qa.data(), L.qANorm.data(), a.qLoraRank, kLoraEps, qa.data());
        q = linear(L.qB, qa); // [H * qk]
    } else {
        q = linear(L.q, h);
    }
    Vec kva = linear(L.kvA, h); // [lora + rope]
    rmsNorm(kva.data(), L.kvANorm.data(), lora, kLoraEps, kva.data());

    Vec cos(rope / 2), sin(rope / 2);
    m.rope.cosSin(pos, cos.data(), sin.data());
    Rope::rotate(&kva[lora], rope, cos.data(), sin.data(), a.ropeInterleave);
    for (int hh = 0; hh < H; ++hh)
        Rope::rotate(&q[size_t(hh) * qk + nope], rope, cos.data(), sin.data(), a.ropeInterleave);

    float* K = KVCacheAccess::keys(kv, layer); // [1, capacity, lora + rope]
    std::copy(kva.begin(), kva.end(), K + size_t(pos) * row);

    const float scale = m.attentionScale();
    const Matrix& W = L.kvB; // [H * (nope + v), lora], f32
    Vec out(size_t(H) * a.vHeadDim, 0.0f);
    for (int hh = 0; hh < H; ++hh) {
        const float* qh = &q[size_t(hh) * qk];
        const int r0 = hh * (nope + a.vHeadDim);
        Vec qAbs(size_t(row), 0.0f); // [q_abs (lora), q_rope (rope)]
        for (int i = 0; i < lora; ++i) {
            double sum = 0; // W_UK^T q_nope, in double like dotReference
            for (int n = 0; n < nope; ++n)
                sum += double(W.row(r0 + n)[i]) * double(qh[n]);
            qAbs[i] = float(sum);
        }
        std::copy(qh + nope, qh + qk, qAbs.begin() + lora);
        Vec scores(pos + 1);
        for (int j = 0; j <= pos; ++j)
            scores[j] = dotReference(qAbs.data(), K + size_t(j) * row, row) * scale;
        softmax(scores.data(), int(scores.size()));
        Vec latent(size_t(lora), 0.0f);
        for (int j = 0; j <= pos; ++j)
            for (int i = 0; i < lora; ++i)
                latent[i] += scores[j] * K[size_t(j) * row + i];
        for (int i = 0; i < a.vHeadDim; ++i)
            out[size_t(hh) * a.vHeadDim + i] =
                dotReference(W.row(r0 + nope + i), latent.data(), lora);
    }
    return linear(L.o, out);
}

} // namespace

Status forwardReference(const ModelImpl& m, std::span<const int32_t> tokens, KVCache& kv,
                        std::vector<float>& logits, bool allLogits, RoutingTrace* routing,
                        ForwardTimes& times) {
    const ModelConfig& c = m.cfg;
    const int n = int(tokens.size()), start = kv.size();
    logits.assign(size_t(allLogits ? n : 1) * c.vocabSize, 0.0f);

    for (int t = 0; t < n; ++t) {
        const int pos = start + t;
        // Embedding (GraniteMoE: times embedding_multiplier).
        Vec x(c.dModel);
        m.w.embed.rowF32(tokens[t], x.data());
        for (float& e : x)
            e *= c.embeddingMultiplier;

        int moeIndex = 0; // index of the next MoE layer in routing->moeLayers
        for (int l = 0; l < c.nLayers; ++l) {
            const LayerWeights& L = m.w.layers[l];
            Vec h(c.dModel);
            rmsNorm(x.data(), L.attnNorm.data(), c.dModel, c.rmsNormEps, h.data());
            const auto tAttention = std::chrono::steady_clock::now();
            const Vec a =
                c.isMla() ? mlaAttention(m, L, l, h, pos, kv) : attention(m, L, l, h, pos, kv);
            times.attention += regionSeconds(tAttention);
            for (int i = 0; i < c.dModel; ++i)
                x[i] += a[i] * c.residualMultiplier;

            rmsNorm(x.data(), L.ffnNorm.data(), c.dModel, c.rmsNormEps, h.data());
            Vec f;
            if (L.sparse) {
                const size_t at = routing ? routing->offset(t, moeIndex++) : 0;
                Status err;
                const auto tMoe = std::chrono::steady_clock::now();
                f = moe(c, L, m.w.experts[l], h, routing ? &routing->experts[at] : nullptr,
                        routing ? &routing->weights[at] : nullptr, m.cache.get(), l, &err);
                times.moe += regionSeconds(tMoe);
                COLI_RETURN_IF_ERROR(err);
            } else {
                f = swiglu(L.dense, h);
            }
            for (int i = 0; i < c.dModel; ++i)
                x[i] += f[i] * c.residualMultiplier;
        }
        KVCacheAccess::setSize(kv, pos + 1);
        if (m.cache) m.cache->endTokens(1);

        if (!allLogits && t != n - 1) continue;
        Vec h(c.dModel);
        rmsNorm(x.data(), m.w.finalNorm.data(), c.dModel, c.rmsNormEps, h.data());
        const Vec out = linear(m.w.outputMatrix(), h); // [vocab]
        float* dst = logits.data() + (allLogits ? size_t(t) * c.vocabSize : 0);
        for (int i = 0; i < c.vocabSize; ++i)
            dst[i] = out[i] / c.logitsScaling;
    }
    return {};
}

} // namespace coli
