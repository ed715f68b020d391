// The Fast forward pass: the same function as forward_reference.cpp, computed for a chunk of
// tokens by one OpenMP team inside ONE parallel region. Every thread runs the same sequence of
// phases (SPMD), each on its share of the work: tokens (norms, quantising activations, RoPE),
// output rows (matrix products), (token, head) pairs (attention), expert rows (the MoE); a
// SpinBarrier (bounded spin, then sleep) separates phases that read what another thread wrote.
// One region per chunk instead of one per matrix: with passive OpenMP waiting each region cost a
// sleep and a wake-up (docs/performance.md, "Decode at the memory roofline").
// No allocation in the loops: every buffer lives in the FastWorkspace sized at load.
// Determinism: every output element is computed by one thread with a fixed summation order
// (dotFast, the quantised kernels' order), and experts are summed in the router's top-k order, so
// the thread count never changes a bit of the result.
// Streamed experts: the expert cache belongs to one thread (tiers/expert_cache.h), the master;
// it publishes each expert's view in the workspace and the team computes it between syncs.
#include "forward/attend.h"
#include "forward/fast_ffn.h"
#include "forward/fast_gpu_experts.h"
#include "forward/fast_matmul.h"
#include "forward/fast_mla.h"
#include "forward/fast_rows.h"
#include "forward/fast_team.h"
#include "forward/kernels.h"
#include "forward/kv_access.h"
#include "forward/model_impl.h"
#include "forward/routing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace coli {

namespace {

const float* ptr(const std::vector<float>& b) {
    return b.empty() ? nullptr : b.data();
}

class ChunkRunner {
public:
    ChunkRunner(const ModelImpl& m, KVCache& kv, ForwardTimes& times, const Team& team)
        : m(m), c(m.cfg), ws(m.ws), kv(kv), times(times), team(team) {}

    // Runs n <= kChunk tokens at positions pos0.. and, when `logits` is set, writes the logits
    // of rows [firstLogitRow, n) to logits (one [vocab] row each). When `routing` is set, the
    // chunk's routing goes to its rows [row0, row0 + n). Called by every thread of the team; an
    // error is left in ws.status by the master.
    void run(const int32_t* tokens, int n, int pos0, int firstLogitRow, float* logits,
             RoutingTrace* routing, int row0) {
        const int d = c.dModel;
        {
            const auto [t0, t1] = team.share(n);
            for (int64_t t = t0; t < t1; ++t) {
                float* x = ws.x.data() + size_t(t) * d;
                m.w.embed.rowF32(tokens[t], x); // dequantised when the table is quantised
                for (int i = 0; i < d; ++i)
                    x[i] *= c.embeddingMultiplier;
            }
        }
        team.sync(Phase::Embedding);
        int moeIndex = 0; // index of the next MoE layer in routing->moeLayers
        for (int l = 0; l < c.nLayers; ++l) {
            const LayerWeights& L = m.w.layers[l];
            const auto tAttention = std::chrono::steady_clock::now();
            if (c.isMla())
                mlaAttentionShare(m, kv, team, L, l, n, pos0);
            else
                attention(L, l, n, pos0);
            if (team.master()) times.attention += regionSeconds(tAttention);
            if (L.sparse) {
                const auto tMoe = std::chrono::steady_clock::now();
                const bool ok = moe(L, l, m.w.experts[l], n, routing, row0, moeIndex);
                if (team.master()) times.moe += regionSeconds(tMoe);
                if (!ok) return;
                ++moeIndex;
            } else {
                dense(L, n);
            }
        }
        if (team.master()) {
            KVCacheAccess::setSize(kv, pos0 + n);
            if (m.cache) m.cache->endTokens(n);
            if (m.vram) m.vram->endTokens(n);
        }
        if (logits) logitRows(n, firstLogitRow, logits);
    }

private:
    // The chunk's norm and residual phases (forward/fast_rows.h), on this runner's team.
    void normShare(const float* w, int n, int mask) { coli::normShare(team, ws, c, w, n, mask); }
    void addResidualRows(const float* y, int n, int64_t r0, int64_t r1) {
        coli::addResidualRows(ws, c, y, n, r0, r1);
    }

    // x [n, d_model] += o(attention(rmsnorm(x))); appends K/V of the n tokens to the cache.
    void attention(const LayerWeights& L, int layer, int n, int pos0) {
        const int d = c.dModel, hd = c.headDim;
        const int qDim = c.nHeads * hd;
        normShare(L.attnNorm.data(), n, groupMask(L.q) | groupMask(L.k) | groupMask(L.v));
        team.sync(Phase::AttentionNorm);
        const MatJob qkv[] = {{L.q, ws.q.data(), ptr(L.qBias)},
                              {L.k, ws.k.data(), ptr(L.kBias)},
                              {L.v, ws.v.data(), ptr(L.vBias)}};
        matmulShare(team, qkv, ws.qin.input(ws.h.data(), 0, n, d));
        team.sync(Phase::Projections);

        float* K = KVCacheAccess::keys(kv, layer);
        float* V = KVCacheAccess::values(kv, layer);
        const size_t hs = KVCacheAccess::headStride(kv); // [n_kv_heads, capacity, head_dim]
        if (n == 1 && team.size > 1) {
            // One token (decode): its queries on one thread, its keys on another, each with its
            // own cos/sin row, and its values on a third (with two, the queries' thread, whose
            // part is lighter: no cache rows to write).
            float* cs = ws.cosSin.data() + size_t(team.id) * hd;
            if (team.id < 2) m.rope.cosSin(pos0, cs, cs + hd / 2);
            if (team.id == 0) prepareQ(L, 0, cs);
            if (team.id == 1) prepareK(L, 0, pos0, cs, K);
            if (team.id == (team.size > 2 ? 2 : 0)) appendV(0, pos0, V);
        } else {
            const auto [t0, t1] = team.share(n);
            for (int64_t t = t0; t < t1; ++t) {
                float* cs = ws.cosSin.data() + size_t(t) * hd;
                m.rope.cosSin(pos0 + int(t), cs, cs + hd / 2);
                prepareQ(L, int(t), cs);
                prepareK(L, int(t), pos0, cs, K);
                appendV(int(t), pos0, V);
            }
        }
        team.sync(Phase::RopeKvAppend);

        const float scale = m.attentionScale();
        const int group = c.nHeads / c.nKvHeads;
        float* scores = ws.scores.data() + size_t(team.id) * ws.scoreTokens;
        // Units of heads that cover whole quantisation groups of the o projection's input (one
        // head when head_dim is a multiple of the group): the thread that writes a unit also
        // quantises it, with no phase of its own (the same bytes as whole rows: groups are
        // independent).
        const int oMask = groupMask(L.o);
        const int oGroup = (oMask & kGroup64) ? 64 : oMask ? 32 : 0;
        const int unitHeads = oGroup ? std::lcm(hd, oGroup) / hd : 1;
        const bool quantiseUnits = oGroup && c.nHeads % unitHeads == 0;
        const int unit = quantiseUnits ? unitHeads : 1;
        const int unitsPerToken = c.nHeads / unit;
        // Prefill: whole tokens interleaved between the threads; decode: the units split.
        const Team::CausalShare cs = team.shareCausal(n, unitsPerToken);
        for (int64_t t = cs.first; t < cs.end; t += cs.step) {
            const int pos = pos0 + int(t);
            const int first = c.slidingWindow > 0 ? std::max(0, pos - c.slidingWindow + 1) : 0;
            float* att = ws.att.data() + size_t(t) * qDim;
            for (int64_t v = cs.unit0; v < cs.unit1; ++v) {
                const int h0 = int(v) * unit;
                for (int h = h0; h < h0 + unit; ++h) {
                    const int kvh = h / group;
                    attendHead(ws.q.data() + size_t(t) * qDim + h * hd, K + kvh * hs, V + kvh * hs,
                               size_t(hd), first, pos, hd, hd, scale, scores, att + h * hd, n == 1);
                }
                if (quantiseUnits)
                    ws.qin.quantiseRowPart(oMask, att, qDim, int(t), h0 * hd, (h0 + unit) * hd);
            }
        }
        team.sync(Phase::Attention);
        if (oMask && !quantiseUnits) {
            quantiseShare(team, oMask, ws.att.data(), n, qDim, ws.qin);
            team.sync(Phase::OQuantise);
        }
        const ActInput oIn = ws.qin.input(ws.att.data(), 0, n, qDim);
        forRowTasks(team, d, matrixRowBytes(L.o), n, [&](int64_t r0, int64_t r1) {
            matmulRows(L.o, oIn, ws.o.data(), ptr(L.oBias), r0, r1);
            addResidualRows(ws.o.data(), n, r0, r1);
        });
        team.sync(Phase::OProjection);
    }

    // Token t's query: norm, clipping, RoPE with the cos/sin row `cs` ([head_dim]).
    void prepareQ(const LayerWeights& L, int t, const float* cs) {
        const int hd = c.headDim, half = hd / 2, qDim = c.nHeads * hd;
        float* q = ws.q.data() + size_t(t) * qDim;
        if (c.qkNorm == QkNorm::WholeProjection) rmsNorm(q, L.qNorm.data(), qDim, c.rmsNormEps, q);
        if (c.clipQkv > 0)
            for (int i = 0; i < qDim; ++i)
                q[i] = std::clamp(q[i], -c.clipQkv, c.clipQkv);
        if (c.qkNorm == QkNorm::PerHead)
            for (int h = 0; h < c.nHeads; ++h)
                rmsNorm(q + h * hd, L.qNorm.data(), hd, c.rmsNormEps, q + h * hd);
        for (int h = 0; h < c.nHeads; ++h)
            Rope::apply(q + h * hd, hd, cs, cs + half);
    }

    // Token t's key: norm, clipping, RoPE with `cs`; appended to the cache at position pos0 + t.
    void prepareK(const LayerWeights& L, int t, int pos0, const float* cs, float* K) {
        const int hd = c.headDim, half = hd / 2, kvDim = c.nKvHeads * hd;
        float* k = ws.k.data() + size_t(t) * kvDim;
        if (c.qkNorm == QkNorm::WholeProjection) rmsNorm(k, L.kNorm.data(), kvDim, c.rmsNormEps, k);
        if (c.clipQkv > 0)
            for (int i = 0; i < kvDim; ++i)
                k[i] = std::clamp(k[i], -c.clipQkv, c.clipQkv);
        if (c.qkNorm == QkNorm::PerHead)
            for (int h = 0; h < c.nKvHeads; ++h)
                rmsNorm(k + h * hd, L.kNorm.data(), hd, c.rmsNormEps, k + h * hd);
        for (int h = 0; h < c.nKvHeads; ++h)
            Rope::apply(k + h * hd, hd, cs, cs + half);
        const size_t hs = KVCacheAccess::headStride(kv);
        for (int h = 0; h < c.nKvHeads; ++h)
            std::memcpy(K + h * hs + size_t(pos0 + t) * hd, k + h * hd, sizeof(float) * hd);
    }

    // Token t's value: clipping; appended to the cache at position pos0 + t.
    void appendV(int t, int pos0, float* V) {
        const int hd = c.headDim, kvDim = c.nKvHeads * hd;
        float* v = ws.v.data() + size_t(t) * kvDim;
        if (c.clipQkv > 0)
            for (int i = 0; i < kvDim; ++i)
                v[i] = std::clamp(v[i], -c.clipQkv, c.clipQkv);
        const size_t hs = KVCacheAccess::valueHeadStride(kv);
        for (int h = 0; h < c.nKvHeads; ++h)
            std::memcpy(V + h * hs + size_t(pos0 + t) * hd, v + h * hd, sizeof(float) * hd);
    }

    // An MLP over all n tokens of the chunk (shared expert, dense layer): input h, act in
    // qactShared, output y.
    FfnItem wholeChunkItem(const SwiGluView& w, int n, size_t gOffset) const {
        FfnItem it;
        it.w = w;
        it.in = ws.qin.input(ws.h.data(), 0, n, c.dModel);
        it.cnt = n;
        it.g = ws.g.data() + gOffset;
        it.u = ws.u.data() + gOffset;
        it.act = &ws.qactShared;
        it.actRow = 0;
        it.y = ws.y.data();
        return it;
    }

    static int mlpMask(const SwiGluView& w) { return groupMask(w.gate) | groupMask(w.up); }

    // x += dense MLP(rmsnorm(x)) for layers without experts.
    void dense(const LayerWeights& L, int n) {
        const SwiGluView w(L.dense);
        normShare(L.ffnNorm.data(), n, mlpMask(w));
        team.sync(Phase::FfnNorm);
        const FfnItem item = wholeChunkItem(w, n, 0);
        gateUpShare(team, std::span<const FfnItem>(&item, 1));
        team.sync(Phase::GateUp);
        downShare(team, std::span<const FfnItem>(&item, 1), c.dModel);
        const auto [r0, r1] = team.shareRows(c.dModel);
        addResidualRows(ws.y.data(), n, r0, r1);
        team.sync(Phase::DownCombine);
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

    // Master: top-k per token, the union of routed experts as FfnItems (ascending expert id),
    // each (token, slot)'s output row, and the rows to gather.
    void route(int n, const float* routerBias) {
        const int E = c.nExperts, K = c.topK, d = c.dModel, cap = FastWorkspace::kChunk;
        for (int t = 0; t < n; ++t)
            selectExperts(c, ws.routerLogits.data() + size_t(t) * E, routerBias,
                          ws.routeScratch.data(), ws.sel.data() + size_t(t) * K,
                          ws.gateW.data() + size_t(t) * K);
        std::fill(ws.expertCount.begin(), ws.expertCount.end(), 0);
        for (int s = 0; s < n * K; ++s) {
            const int e = ws.sel[s];
            ws.expertTokens[size_t(e) * cap + ws.expertCount[e]++] = s;
        }
        int nUnion = 0, row = 0;
        size_t gOffset = 0;
        ws.needGather = false;
        for (int e = 0; e < E; ++e) {
            const int cnt = ws.expertCount[e];
            if (cnt == 0) continue;
            ws.unionExperts[nUnion] = e;
            ws.unionCounts[nUnion] = cnt;
            FfnItem& it = ws.items[nUnion++];
            // Every token routed here: the layer's input rows as they are (always at decode).
            const bool direct = cnt == n;
            it.in = direct ? ws.qin.input(ws.h.data(), 0, n, d)
                           : ws.qgather.input(ws.gather.data() + size_t(row) * d, row, cnt, d);
            it.cnt = cnt;
            it.g = ws.g.data() + gOffset;
            it.u = ws.u.data() + gOffset;
            gOffset += size_t(cnt) * c.expertFfn;
            it.act = &ws.qact;
            it.actRow = row;
            it.y = ws.slotOut.data() + size_t(row) * d;
            for (int i = 0; i < cnt; ++i) {
                const int s = ws.expertTokens[size_t(e) * cap + i];
                ws.slotRow[s] = row + i;
                ws.gatherToken[row + i] = direct ? -1 : s / K;
            }
            ws.needGather = ws.needGather || !direct;
            row += cnt;
        }
        ws.nItems = nUnion;
    }

    // Rows of ws.gather / ws.qgather for the routed items that take a subset of the tokens (the
    // f32 rows always: cheap next to the experts' reads, and streamed experts may be f32).
    void gatherShare(int n, int mask) {
        const int d = c.dModel;
        const auto [g0, g1] = team.share(int64_t(n) * c.topK);
        for (int64_t r = g0; r < g1; ++r) {
            const int t = ws.gatherToken[r];
            if (t < 0) continue;
            std::memcpy(ws.gather.data() + size_t(r) * d, ws.h.data() + size_t(t) * d,
                        sizeof(float) * d);
            ws.qgather.copyRow(mask, ws.qin, t, d, int(r));
        }
    }

    // x += MoE(rmsnorm(x)): router, top-k experts, shared expert. False (on every thread) when
    // the expert cache failed; the master left the error in ws.status.
    bool moe(const LayerWeights& L, int layer, const std::vector<SwiGluWeights>& experts, int n,
             RoutingTrace* routing, int row0, int moeIndex) {
        const int d = c.dModel, K = c.topK;
        const bool shared = c.sharedFfn > 0;
        // Streamed experts are seen only as they arrive: prepare every kind of input.
        const int expertMask = m.cache ? (kGroup32 | kGroup64) : mlpMask(experts.front());
        const int mask = groupMask(L.router) | expertMask | (shared ? mlpMask(L.shared) : 0) |
                         (c.sharedExpertGate ? groupMask(L.sharedExpertGate) : 0);
        normShare(L.ffnNorm.data(), n, mask);
        // Streamed: the next MoE layer's router on this layer's residual stream (lookahead),
        // computed by the team beside this layer's router.
        const int lookLayer = m.cache ? lookaheadLayer(layer) : -1;
        const LayerWeights* look = lookLayer >= 0 ? &m.w.layers[size_t(lookLayer)] : nullptr;
        if (look)
            normShareInto(team, ws, c, look->ffnNorm.data(), n, groupMask(look->router),
                          ws.lookH.data(), ws.qlook);
        team.sync(Phase::FfnNorm);
        MatJob router[2] = {{L.router, ws.routerLogits.data(), nullptr}, {}};
        if (c.sharedExpertGate) router[1] = {L.sharedExpertGate, ws.sharedGate.data(), nullptr};
        matmulShare(team, std::span<const MatJob>(router, c.sharedExpertGate ? 2 : 1),
                    ws.qin.input(ws.h.data(), 0, n, d));
        if (look) {
            // A static split: a second stolen phase would need a barrier between the two.
            const auto [e0, e1] = team.shareRows(c.nExperts);
            if (e0 < e1)
                matmulRows(look->router, ws.qlook.input(ws.lookH.data(), 0, n, d),
                           ws.lookLogits.data(), nullptr, e0, e1);
        }
        team.sync(Phase::Router);
        if (team.master()) {
            route(n, L.routerBias.empty() ? nullptr : L.routerBias.data());
            if (routing) recordRouting(*routing, row0, moeIndex, n);
            if (!m.cache) {
                for (int i = 0; i < ws.nItems; ++i)
                    ws.items[i].w = experts[ws.unionExperts[i]];
            } else {
                // Streamed: whichever wanted expert is resident first computes first, while the
                // others are read; each writes only its own slotOut rows, so the order is free.
                // Experts in VRAM are the device's (fast_gpu_experts.h); the cache counts them.
                if (m.vram) gpuSubmit(m, layer, n, nullptr, true);
                const Status begun = m.cache->beginLayer(
                    layer, std::span<const int>(ws.unionExperts.data(), size_t(ws.nItems)),
                    std::span<const int>(ws.unionCounts.data(), size_t(ws.nItems)),
                    m.vram ? std::span<const uint8_t>(ws.onGpu.data(), size_t(ws.nItems))
                           : std::span<const uint8_t>());
                if (!begun.isOk()) {
                    ws.status = begun;
                    ws.routeFailed = true;
                } else if (look) {
                    lookahead(lookLayer, *look, n);
                }
            }
            if (shared)
                ws.items[ws.nItems] =
                    wholeChunkItem(L.shared, n, size_t(n) * K * size_t(c.expertFfn));
            ++ws.expertEpoch;
            if (m.vram && !m.cache)
                gpuSubmit(m, layer, n, shared ? &ws.items[ws.nItems] : nullptr, false);
        }
        team.sync(Phase::Routing);
        if (ws.routeFailed) return false;
        if (ws.needGather) {
            gatherShare(n, expertMask);
            team.sync(Phase::Gather);
        }
        const std::span<const FfnItem> all(ws.items.data(), size_t(ws.nItems + (shared ? 1 : 0)));
        const auto [r0, r1] = team.shareRows(d);
        if (m.vram && !m.cache) {
            // The device computes its jobs while the team computes the rest (fast_gpu_experts.h).
            const std::span<const FfnItem> cpu(ws.cpuItems.data(), size_t(ws.nCpuItems));
            gateUpShare(team, cpu);
            team.sync(Phase::GateUp);
            downShare(team, cpu, d);
            if (team.master()) gpuCollect(m);
            team.sync(Phase::Down);
            if (ws.nRedoItems > 0) {
                const std::span<const FfnItem> redo(ws.redoItems.data(), size_t(ws.nRedoItems));
                gateUpShare(team, redo);
                team.sync(Phase::GateUp);
                downShare(team, redo, d);
            }
        } else if (!m.cache && n == 1) {
            // Decode: routed and shared experts as tasks, balanced by stealing (fast_ffn.h).
            expertSteal(team, all, d, {ws.actDone.get(), ws.expertEpoch});
            team.sync(Phase::WholeExperts);
        } else if (!m.cache) {
            gateUpShare(team, all);
            team.sync(Phase::GateUp);
            downShare(team, all, d);
        } else {
            if (shared) {
                gateUpShare(team, all.subspan(size_t(ws.nItems)));
                team.sync(Phase::GateUp);
                downShare(team, all.subspan(size_t(ws.nItems)), d);
                team.sync(Phase::Down);
            }
            if (!streamExperts(layer, n)) return false;
        }
        combineRows(n, r0, r1);
        team.sync(Phase::DownCombine);
        return true;
    }

    // Streamed routed experts as the cache hands them out (master), computed by the whole team:
    // at decode every expert that is ready when the team is free, as one batch balanced by
    // stealing (expertSteal, as resident experts are), at prefill one at a time (each expert
    // split by rows). False (on every thread) when the cache failed.
    // Why batches: one expert at a time cost three barriers per expert and left the team
    // computing 3.5 MB between them; at a 100 % budget (99.5 % hits) the streamed decode ran
    // 15-25 % below the resident one (docs/performance.md).
    // The master rewrites ws.streamBatch / ws.streamFailed only after the sync that ends the
    // previous batch, so every thread has read them by then; a flag shared with an earlier
    // phase (one thread still reading it while the master sets it) would let the threads part.
    bool streamExperts(int layer, int n) {
        for (;;) {
            if (team.master()) handOut(n == 1);
            team.sync(Phase::ExpertHandout);
            if (ws.streamFailed) return false;
            if (ws.streamBatch == 0) return true;
            const std::span<const FfnItem> batch(ws.batchItems.data(), size_t(ws.streamBatch));
            if (batch.size() > 1) {
                expertSteal(team, batch, c.dModel, {ws.actDone.get(), ws.expertEpoch});
                team.sync(Phase::WholeExperts);
            } else {
                gateUpShare(team, batch);
                team.sync(Phase::GateUp);
                downShare(team, batch, c.dModel);
                team.sync(Phase::Down);
            }
            if (team.master()) {
                for (int k = 0; k < ws.streamBatch; ++k) {
                    // Admission as routed: a computed expert goes to VRAM from its RAM slot (a
                    // free VRAM slot or a colder expert's: VramPlacement), before the cache may
                    // reuse it.
                    const int pos = ws.batchPos[size_t(k)];
                    const int e = ws.unionExperts[size_t(pos)];
                    tiers::ExpertId evicted{-1, -1};
                    if (m.vram && m.vram->admit(layer, e, ws.items[size_t(pos)].w, &evicted))
                        m.cache->markVram({layer, e}, evicted);
                    m.cache->finished(pos);
                }
            }
        }
    }

    // Master: the next batch of streamed experts into ws.batchItems / ws.batchPos / streamBatch
    // (0: the layer is done), or ws.streamFailed with ws.status. Waits for one expert (next());
    // when `many` and nothing the layer wants is still being read, adds every other one
    // (tryNext()). While reads are pending, one at a time as before: a batch releases its slots
    // only when it ends, which at a small budget would hold back the next reads.
    void handOut(bool many) {
        ws.streamBatch = 0;
        // Every CPU expert handed out: the device's results are due, and an expert with a flagged
        // token goes back to the cache to be computed here after all.
        if (m.vram && ws.gpuToCollect && ws.handedCpu == ws.nItems - ws.nGpuItems) {
            gpuCollect(m);
            for (int k = 0; k < ws.nRedoItems; ++k)
                m.cache->wantOnCpu(ws.redoPositions[size_t(k)]);
        }
        SwiGluView view;
        Result<int> pos = m.cache->next(&view);
        if (!pos) {
            ws.status = pos.status();
            ws.streamFailed = true;
            return;
        }
        const bool batch = many && *pos >= 0 && m.cache->openLayerReady();
        for (int p = *pos; p >= 0; p = batch ? m.cache->tryNext(&view) : -1) {
            ws.items[size_t(p)].w = view;
            ++ws.handedCpu;
            ws.batchItems[size_t(ws.streamBatch)] = ws.items[size_t(p)];
            ws.batchPos[size_t(ws.streamBatch++)] = p;
        }
        ++ws.expertEpoch;
    }

    // This thread's rows of the MoE output: sum over the router's top-k in order of gate *
    // expert output, plus the (gated) shared expert, added to the residual stream.
    void combineRows(int n, int64_t r0, int64_t r1) {
        const int d = c.dModel, K = c.topK;
        for (int t = 0; t < n; ++t) {
            float* out = ws.mlpOut.data() + size_t(t) * d;
            std::fill(out + r0, out + r1, 0.0f);
            for (int j = 0; j < K; ++j) { // the router's top-k order
                const int s = t * K + j;
                const float w = ws.gateW[s];
                const float* y = ws.slotOut.data() + size_t(ws.slotRow[s]) * d;
                for (int64_t i = r0; i < r1; ++i) {
                    const float weighted = y[i] * w;
                    out[i] += weighted;
                }
            }
            if (c.sharedFfn > 0) {
                const float g = c.sharedExpertGate ? sigmoid(ws.sharedGate[t]) : 1.0f;
                for (int64_t i = r0; i < r1; ++i)
                    out[i] += ws.y[size_t(t) * d + i] * g;
            }
        }
        addResidualRows(ws.mlpOut.data(), n, r0, r1);
    }

    // The MoE layer after `layer` whose experts the router lookahead predicts, or -1 (none, or
    // the cache's prefetch is off).
    int lookaheadLayer(int layer) const {
        if (!m.cache->prefetchEnabled()) return -1;
        int next = layer + 1;
        while (next < c.nLayers && !m.w.layers[size_t(next)].sparse)
            ++next;
        return next < c.nLayers ? next : -1;
    }

    // Master, streamed only. Router lookahead: the next MoE layer's router applied to this
    // layer's residual stream (after attention, normed with that layer's ffn norm: ws.lookLogits,
    // computed by the team in the router phase) predicts its experts; they are requested now so
    // their reads overlap this layer's expert compute. Only the cache's reads change: nothing
    // computed here reaches the outputs. (Computed by the master alone after the routing, it
    // cost ~100 us a layer while the team waited: docs/performance.md.)
    void lookahead(int next, const LayerWeights& N, int n) {
        const int E = c.nExperts, K = c.topK;
        std::fill(ws.lookUnion.begin(), ws.lookUnion.end(), 0);
        const float* bias = N.routerBias.empty() ? nullptr : N.routerBias.data();
        for (int t = 0; t < n; ++t) {
            int* sel = ws.lookSel.data() + size_t(t) * K;
            // The next layer's own rule (groups, bias) on a prediction; only the weights are not
            // needed (gateW's row is overwritten before its layer uses it).
            selectExperts(c, ws.lookLogits.data() + size_t(t) * E, bias, ws.routeScratch.data(),
                          sel, ws.lookWeights.data());
            for (int j = 0; j < K; ++j)
                ws.lookUnion[sel[j]] = 1;
        }
        int nPred = 0;
        for (int e = 0; e < E; ++e)
            if (ws.lookUnion[e]) ws.lookSel[nPred++] = e; // reuse as the list (nPred <= E)
        m.cache->prefetch(next, std::span<const int>(ws.lookSel.data(), size_t(nPred)));
    }

    // logits [n - firstLogitRow, vocab] of rows firstLogitRow.. (final norm, LM head, scaling).
    void logitRows(int n, int firstLogitRow, float* logits) {
        const int d = c.dModel, rows = n - firstLogitRow;
        const MatrixView out = m.w.outputMatrix();
        const int mask = groupMask(out);
        {
            const auto [t0, t1] = team.share(rows);
            for (int64_t t = t0; t < t1; ++t) {
                float* h = ws.h.data() + size_t(firstLogitRow + t) * d;
                rmsNorm(ws.x.data() + size_t(firstLogitRow + t) * d, m.w.finalNorm.data(), d,
                        c.rmsNormEps, h);
                if (mask) ws.qin.quantiseRow(mask, h, d, int(t));
            }
        }
        team.sync(Phase::FinalNorm);
        const ActInput in = ws.qin.input(ws.h.data() + size_t(firstLogitRow) * d, 0, rows, d);
        const float inv = c.logitsScaling;
        forRowTasks(team, c.vocabSize, matrixRowBytes(out), rows, [&](int64_t r0, int64_t r1) {
            matmulRows(out, in, logits, nullptr, r0, r1);
            for (int t = 0; t < rows; ++t)
                for (int64_t i = r0; i < r1; ++i)
                    logits[size_t(t) * c.vocabSize + i] /= inv;
        });
        team.endPhase(Phase::LmHead);
    }

    const ModelImpl& m;
    const ModelConfig& c;
    FastWorkspace& ws;
    KVCache& kv;
    ForwardTimes& times; // the region clocks (ForwardTimes), kept by the master
    const Team& team;
};

} // namespace

void FastWorkspace::allocate(const ModelConfig& c, int threads) {
    const size_t C = kChunk, d = c.dModel, K = c.topK, E = c.nExperts;
    const MlaConfig& mla = c.mla;
    const size_t qDim = size_t(c.nHeads) * c.headDim;
    // MLA: k holds kv_a_proj's rows [latent, rope key]; att the heads' values before o_proj.
    const size_t kvDim =
        std::max(size_t(c.nKvHeads) * c.headDim, size_t(mla.kvLoraRank + mla.qkRopeHeadDim));
    const size_t attDim = std::max(qDim, size_t(c.nHeads) * mla.vHeadDim);
    const size_t wholeFfn = std::max({c.sharedFfn, c.denseFfn, 1});
    const size_t expertFfn = std::max(c.expertFfn, 1);
    x.assign(C * d, 0);
    h.assign(C * d, 0);
    q.assign(C * qDim, 0);
    k.assign(C * kvDim, 0);
    v.assign(C * kvDim, 0);
    att.assign(C * attDim, 0);
    qa.assign(C * size_t(mla.qLoraRank), 0);
    qAbs.assign(C * c.nHeads * size_t(mla.kvLoraRank + mla.qkRopeHeadDim), 0);
    latent.assign(C * c.nHeads * size_t(mla.kvLoraRank), 0);
    routeScratch.assign(size_t(routingScratchFloats(c)), 0);
    lookWeights.assign(K, 0);
    o.assign(C * d, 0);
    routerLogits.assign(C * E, 0);
    gateW.assign(C * K, 0);
    sel.assign(C * K, 0);
    slotOut.assign(C * K * d, 0);
    expertTokens.assign(E * C, 0);
    expertCount.assign(E, 0);
    slotRow.assign(C * K, 0);
    gatherToken.assign(C * K, -1);
    gather.assign(C * K * d, 0);
    g.assign(C * K * expertFfn + C * wholeFfn, 0);
    u.assign(C * K * expertFfn + C * wholeFfn, 0);
    y.assign(C * d, 0);
    mlpOut.assign(C * d, 0);
    sharedGate.assign(C, 0);
    cosSin.assign(C * c.headDim, 0);
    qin.allocate(int(C), int(std::max({d, qDim, attDim, size_t(mla.qLoraRank)})));
    qgather.allocate(int(C * K), int(d));
    qact.allocate(int(C * K), int(expertFfn));
    qactShared.allocate(int(C), int(wholeFfn));
    qlook.allocate(int(C), int(d));
    unionExperts.assign(E, 0);
    unionCounts.assign(E, 0);
    items.assign(E + 1, FfnItem{});
    batchItems.assign(E, FfnItem{});
    batchPos.assign(E, 0);
    lookH.assign(C * d, 0);
    lookLogits.assign(C * E, 0);
    lookSel.assign(std::max(C * K, E), 0);
    lookUnion.assign(E, 0);
    gpuJobs.assign(C * K, gpu::GpuJob{});
    gpuJobRow.assign(C * K, 0);
    gpuJobItem.assign(C * K, 0);
    gpuY.assign(C * K * d, 0);
    gpuFlags.assign(C * K, 0);
    cpuItems.assign(E + 1, FfnItem{});
    redoItems.assign(E, FfnItem{});
    onGpu.assign(E, 0);
    redoPositions.assign(E, 0);
    scoreThreads = std::max(threads, 1);
    stealRanges.resize(scoreThreads);
    actDone = std::make_unique<std::atomic<uint32_t>[]>(E + 1);
    expertEpoch = 0;
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
    FastWorkspace& ws = m.ws;
    for (int c0 = 0; c0 < n; c0 += FastWorkspace::kChunk) {
        const int cn = std::min(FastWorkspace::kChunk, n - c0);
        const bool last = c0 + cn == n;
        const int firstLogitRow = allLogits ? 0 : cn - 1;
        float* out = allLogits ? logits.data() + size_t(c0) * V : (last ? logits.data() : nullptr);
        const int pos0 = kv.size();
        ws.routeFailed = ws.streamFailed = false;
        ws.status = Status::ok();
        ws.barrier.reset(m.threads);
        PhaseTimes* phases =
            times.phases && (cn > 1) == times.phases->prefill ? times.phases : nullptr;
        if (phases) {
            if (phases->threads.size() < size_t(m.threads)) phases->threads.resize(m.threads);
            ++phases->chunks;
        }
#pragma omp parallel num_threads(m.threads)
        {
            Team team;
            team.barrier = &ws.barrier;
            team.steal = &ws.stealRanges;
#ifdef _OPENMP
            team.id = omp_get_thread_num();
            team.size = omp_get_num_threads();
            if (team.size != m.threads) { // fewer threads than asked (nested, thread limit)
#pragma omp barrier
                if (team.id == 0) ws.barrier.reset(team.size);
#pragma omp barrier
            }
#endif
            if (phases) {
                team.phaseCells = phases->threads[size_t(team.id)].data();
                team.phaseStart = std::chrono::steady_clock::now();
            }
            ChunkRunner(m, kv, times, team)
                .run(tokens.data() + c0, cn, pos0, firstLogitRow, out, routing, c0);
        }
        if (ws.routeFailed || ws.streamFailed) return ws.status;
    }
    return {};
}

} // namespace coli
