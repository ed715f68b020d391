// The Fast path's multi-head latent attention (DeepSeek-V2/V3): the same function as
// forward_reference.cpp's mlaAttention, as phases of the chunk's team (forward_fast.cpp).
#include "forward/fast_mla.h"

#include "forward/attend.h"
#include "forward/fast_matmul.h"
#include "forward/fast_rows.h"
#include "forward/kernels.h"
#include "forward/kv_access.h"

#include <algorithm>
#include <cstring>

namespace coli {

namespace {

constexpr float kLoraEps = 1e-6f; // q_a_layernorm / kv_a_layernorm: RMSNorm's default eps

} // namespace

void mlaAttentionShare(const ModelImpl& m, KVCache& kv, const Team& team, const LayerWeights& L,
                       int layer, int n, int pos0) {
    const ModelConfig& c = m.cfg;
    const MlaConfig& a = c.mla;
    FastWorkspace& ws = m.ws;
    const int d = c.dModel, H = c.nHeads, qk = a.qkHeadDim(), nope = a.qkNopeHeadDim;
    const int rope = a.qkRopeHeadDim, lora = a.kvLoraRank, row = lora + rope, vd = a.vHeadDim;
    const int qLora = a.qLoraRank, qDim = H * qk, outDim = H * vd;
    const Matrix& firstQ = qLora > 0 ? L.qA : L.q;
    float* qa = ws.qa.data(); // [kChunk, q_lora_rank]
    float* kva = ws.k.data(); // [kChunk, lora + rope]

    // RMSNorm of the residual stream, quantised for q (or q_a) and kv_a.
    normShare(team, ws, c, L.attnNorm.data(), n, groupMask(firstQ) | groupMask(L.kvA));
    team.sync(Phase::AttentionNorm);
    const MatJob first[] = {{firstQ, qLora > 0 ? qa : ws.q.data(), nullptr}, {L.kvA, kva, nullptr}};
    matmulShare(team, first, ws.qin.input(ws.h.data(), 0, n, d));
    team.sync(Phase::Projections);
    if (qLora > 0) {
        const int mask = groupMask(L.qB);
        const auto [t0, t1] = team.share(n);
        for (int64_t t = t0; t < t1; ++t) {
            float* r = qa + size_t(t) * qLora;
            rmsNorm(r, L.qANorm.data(), qLora, kLoraEps, r);
            if (mask) ws.qin.quantiseRow(mask, r, qLora, int(t));
        }
        team.sync(Phase::QLoraNorm);
        const MatJob second[] = {{L.qB, ws.q.data(), nullptr}};
        matmulShare(team, second, ws.qin.input(qa, 0, n, qLora));
        team.sync(Phase::QbProjection);
    }

    // Per token: the latent's norm, RoPE on the rope key and every head's rope query, the cache
    // row.
    float* K = KVCacheAccess::keys(kv, layer); // [1, capacity, lora + rope]
    {
        const auto [t0, t1] = team.share(n);
        for (int64_t t = t0; t < t1; ++t) {
            float* r = kva + size_t(t) * row;
            rmsNorm(r, L.kvANorm.data(), lora, kLoraEps, r);
            float* cs = ws.cosSin.data() + size_t(t) * rope;
            m.rope.cosSin(pos0 + int(t), cs, cs + rope / 2);
            Rope::rotate(r + lora, rope, cs, cs + rope / 2, a.ropeInterleave);
            for (int h = 0; h < H; ++h)
                Rope::rotate(ws.q.data() + size_t(t) * qDim + size_t(h) * qk + nope, rope, cs,
                             cs + rope / 2, a.ropeInterleave);
            std::memcpy(K + size_t(pos0 + t) * row, r, sizeof(float) * row);
        }
    }
    team.sync(Phase::RopeKvAppend);

    // Per (token, head): the absorbed query, attention over the cached rows, the value rows.
    const float scale = m.attentionScale();
    const Matrix& W = L.kvB; // [H * (nope + v), lora] f32 (weights.h)
    float* scores = ws.scores.data() + size_t(team.id) * ws.scoreTokens;
    const auto attendPair = [&](int t, int h) {
        const float* qh = ws.q.data() + size_t(t) * qDim + size_t(h) * qk;
        float* qAbs = ws.qAbs.data() + size_t(t * H + h) * row;
        float* latent = ws.latent.data() + size_t(t * H + h) * lora;
        const int r0 = h * (nope + vd);
        // W_UK^T q_nope, summed over the nope rows in order for every latent element.
        std::fill(qAbs, qAbs + lora, 0.0f);
        for (int k = 0; k < nope; ++k) {
            const float qk0 = qh[k];
            const float* w = W.row(r0 + k);
            for (int i = 0; i < lora; ++i) {
                const float prod = qk0 * w[i];
                qAbs[i] += prod;
            }
        }
        std::memcpy(qAbs + lora, qh + nope, sizeof(float) * rope);
        attendHead(qAbs, K, K, size_t(row), 0, pos0 + t, row, lora, scale, scores, latent, n == 1);
        float* out = ws.att.data() + size_t(t) * outDim + size_t(h) * vd;
        for (int i = 0; i < vd; ++i)
            out[i] = dotFast(W.row(r0 + nope + i), latent, lora);
    };
    // Prefill: whole tokens interleaved between the threads; decode: the heads split.
    const Team::CausalShare cs = team.shareCausal(n, H);
    for (int64_t t = cs.first; t < cs.end; t += cs.step)
        for (int64_t h = cs.unit0; h < cs.unit1; ++h)
            attendPair(int(t), int(h));
    team.sync(Phase::Attention);
    if (const int mask = groupMask(L.o)) {
        quantiseShare(team, mask, ws.att.data(), n, outDim, ws.qin);
        team.sync(Phase::OQuantise);
    }
    const ActInput oIn = ws.qin.input(ws.att.data(), 0, n, outDim);
    forRowTasks(team, d, matrixRowBytes(L.o), n, [&](int64_t r0, int64_t r1) {
        matmulRows(L.o, oIn, ws.o.data(), nullptr, r0, r1);
        addResidualRows(ws, c, ws.o.data(), n, r0, r1);
    });
    team.sync(Phase::OProjection);
}

} // namespace coli
