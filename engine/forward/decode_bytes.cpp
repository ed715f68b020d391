// Model::decodeBytes: the weight bytes one decode step reads (model.h, DecodeBytes).
#include "forward/model_impl.h"

namespace coli {

namespace {

uint64_t bytesOf(const Matrix& m) {
    return m.quantised() ? m.q.size() : m.data.size() * sizeof(float);
}

uint64_t bytesOf(const std::vector<float>& v) {
    return v.size() * sizeof(float);
}

uint64_t bytesOf(const SwiGluWeights& w) {
    return bytesOf(w.gate) + bytesOf(w.up) + bytesOf(w.down);
}

} // namespace

DecodeBytes decodeBytesOf(const ModelImpl& m) {
    const ModelConfig& c = m.cfg;
    DecodeBytes out;
    uint64_t& b = out.weights;
    for (int l = 0; l < c.nLayers; ++l) {
        const LayerWeights& L = m.w.layers[l];
        b += bytesOf(L.attnNorm) + bytesOf(L.ffnNorm) + bytesOf(L.qNorm) + bytesOf(L.kNorm);
        b += bytesOf(L.q) + bytesOf(L.k) + bytesOf(L.v) + bytesOf(L.o);
        b += bytesOf(L.qBias) + bytesOf(L.kBias) + bytesOf(L.vBias) + bytesOf(L.oBias);
        b += bytesOf(L.qA) + bytesOf(L.qB) + bytesOf(L.kvA) + bytesOf(L.kvB);
        b += bytesOf(L.qANorm) + bytesOf(L.kvANorm);
        if (!L.sparse) {
            b += bytesOf(L.dense);
            continue;
        }
        b += bytesOf(L.router) + bytesOf(L.routerBias) + bytesOf(L.shared) +
             bytesOf(L.sharedExpertGate);
        const std::vector<SwiGluWeights>& experts = m.w.experts[size_t(l)];
        const uint64_t expert = !experts.empty() ? bytesOf(experts.front())
                                : m.cache        ? m.cache->slotBytes()
                                                 : 0;
        b += uint64_t(c.topK) * expert;
    }
    const Matrix& embed = m.w.embed;
    b += bytesOf(m.w.finalNorm) + bytesOf(m.w.outputMatrix());
    b += embed.rows > 0 ? bytesOf(embed) / uint64_t(embed.rows) : 0;
    const KvShape kv = kvShape(c);
    out.kvPerPosition =
        uint64_t(c.nLayers) * uint64_t(kv.heads) * uint64_t(kv.kDim + kv.vDim) * sizeof(float);
    return out;
}

} // namespace coli
