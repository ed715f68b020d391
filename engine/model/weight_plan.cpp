#include "model/weight_plan.h"

namespace coli {

namespace {

class Planner {
public:
    Planner(const ModelConfig& c, ModelWeights* w) : m_c(c), m_w(w) {}

    std::vector<WeightSlot> plan() {
        const ModelConfig& c = m_c;
        const int64_t d = c.dModel, vocab = c.vocabSize;
        if (m_w) {
            m_w->layers.resize(c.nLayers);
            m_w->experts.resize(c.nLayers);
        }
        matrix(TensorKind::Embed, -1, vocab, d, m_w ? &m_w->embed : nullptr);
        vec(TensorKind::FinalNorm, -1, d, m_w ? &m_w->finalNorm : nullptr);
        // Tied: HF ties lm_head.weight to embed_tokens.weight and ignores any stored copy.
        if (!c.tieWordEmbeddings)
            matrix(TensorKind::LmHead, -1, vocab, d, m_w ? &m_w->lmHead : nullptr);

        const int64_t qDim = int64_t(c.nHeads) * c.headDim, kvDim = int64_t(c.nKvHeads) * c.headDim;
        for (int l = 0; l < c.nLayers; ++l) {
            LayerWeights* L = m_w ? &m_w->layers[l] : nullptr;
            vec(TensorKind::AttnNorm, l, d, L ? &L->attnNorm : nullptr);
            vec(TensorKind::FfnNorm, l, d, L ? &L->ffnNorm : nullptr);
            if (c.isMla()) {
                mla(l, L);
            } else {
                matrix(TensorKind::Q, l, qDim, d, L ? &L->q : nullptr);
                matrix(TensorKind::K, l, kvDim, d, L ? &L->k : nullptr);
                matrix(TensorKind::V, l, kvDim, d, L ? &L->v : nullptr);
                matrix(TensorKind::O, l, d, qDim, L ? &L->o : nullptr);
            }
            if (c.attentionBias) {
                vec(TensorKind::QBias, l, qDim, L ? &L->qBias : nullptr);
                vec(TensorKind::KBias, l, kvDim, L ? &L->kBias : nullptr);
                vec(TensorKind::VBias, l, kvDim, L ? &L->vBias : nullptr);
            }
            if (c.attentionOutBias) vec(TensorKind::OBias, l, d, L ? &L->oBias : nullptr);
            if (c.qkNorm == QkNorm::PerHead) {
                vec(TensorKind::QNorm, l, c.headDim, L ? &L->qNorm : nullptr);
                vec(TensorKind::KNorm, l, c.headDim, L ? &L->kNorm : nullptr);
            } else if (c.qkNorm == QkNorm::WholeProjection) {
                vec(TensorKind::QNorm, l, qDim, L ? &L->qNorm : nullptr);
                vec(TensorKind::KNorm, l, kvDim, L ? &L->kNorm : nullptr);
            }
            const bool sparse = l < int(c.sparseLayer.size()) && c.sparseLayer[l];
            if (L) L->sparse = sparse;
            if (!sparse) {
                swiglu(TensorKind::DenseGate, TensorKind::DenseUp, TensorKind::DenseDown, l,
                       c.denseFfn, L ? &L->dense : nullptr);
                continue;
            }
            matrix(TensorKind::Router, l, c.nExperts, d, L ? &L->router : nullptr);
            if (c.routerBias)
                vec(TensorKind::RouterBias, l, c.nExperts, L ? &L->routerBias : nullptr);
            if (c.sharedFfn > 0) {
                swiglu(TensorKind::SharedGate, TensorKind::SharedUp, TensorKind::SharedDown, l,
                       c.sharedFfn, L ? &L->shared : nullptr);
                if (c.sharedExpertGate)
                    matrix(TensorKind::SharedExpertGate, l, 1, d,
                           L ? &L->sharedExpertGate : nullptr);
            }
            if (m_w) m_w->experts[l].resize(c.nExperts);
            for (int e = 0; e < c.nExperts; ++e) {
                WeightSlot s;
                s.what = SlotKind::Expert;
                s.kind = TensorKind::ExpertGate;
                s.layer = l;
                s.expert = e;
                s.shape = {c.expertFfn, d};
                s.mlp = m_w ? &m_w->experts[l][e] : nullptr;
                m_slots.push_back(std::move(s));
            }
        }
        return std::move(m_slots);
    }

private:
    // DeepseekV3Attention's projections (tensor_names.h for the shapes).
    void mla(int l, LayerWeights* L) {
        const MlaConfig& a = m_c.mla;
        const int64_t d = m_c.dModel, H = m_c.nHeads;
        if (a.qLoraRank > 0) {
            matrix(TensorKind::QA, l, a.qLoraRank, d, L ? &L->qA : nullptr);
            vec(TensorKind::QANorm, l, a.qLoraRank, L ? &L->qANorm : nullptr);
            matrix(TensorKind::QB, l, H * a.qkHeadDim(), a.qLoraRank, L ? &L->qB : nullptr);
        } else {
            matrix(TensorKind::Q, l, H * a.qkHeadDim(), d, L ? &L->q : nullptr);
        }
        matrix(TensorKind::KvA, l, a.kvLoraRank + a.qkRopeHeadDim, d, L ? &L->kvA : nullptr);
        vec(TensorKind::KvANorm, l, a.kvLoraRank, L ? &L->kvANorm : nullptr);
        matrix(TensorKind::KvB, l, H * (a.qkNopeHeadDim + a.vHeadDim), a.kvLoraRank,
               L ? &L->kvB : nullptr);
        matrix(TensorKind::O, l, d, H * a.vHeadDim, L ? &L->o : nullptr);
    }

    WeightSlot& add(SlotKind what, TensorKind kind, int layer, std::vector<int64_t> shape) {
        WeightSlot s;
        s.what = what;
        s.kind = kind;
        s.layer = layer;
        s.name = tensorName(m_c.family, kind, layer < 0 ? 0 : layer);
        s.shape = std::move(shape);
        m_slots.push_back(std::move(s));
        return m_slots.back();
    }

    void matrix(TensorKind kind, int layer, int64_t rows, int64_t cols, Matrix* m) {
        add(SlotKind::Matrix, kind, layer, {rows, cols}).matrix = m;
    }

    void vec(TensorKind kind, int layer, int64_t n, std::vector<float>* v) {
        add(SlotKind::Vector, kind, layer, {n}).vec = v;
    }

    void swiglu(TensorKind g, TensorKind u, TensorKind dn, int layer, int64_t ffn,
                SwiGluWeights* s) {
        const int64_t d = m_c.dModel;
        matrix(g, layer, ffn, d, s ? &s->gate : nullptr);
        matrix(u, layer, ffn, d, s ? &s->up : nullptr);
        matrix(dn, layer, d, ffn, s ? &s->down : nullptr);
    }

    const ModelConfig& m_c;
    ModelWeights* m_w;
    std::vector<WeightSlot> m_slots;
};

} // namespace

std::vector<WeightSlot> planWeights(const ModelConfig& cfg, ModelWeights* w) {
    return Planner(cfg, w).plan();
}

int64_t slotParams(const WeightSlot& s) {
    int64_t n = 1;
    for (int64_t x : s.shape)
        n *= x;
    return s.what == SlotKind::Expert ? 3 * n : n;
}

std::string shapeString(const std::vector<int64_t>& s) {
    std::string r = "[";
    for (size_t i = 0; i < s.size(); ++i)
        r += (i ? ", " : "") + std::to_string(s[i]);
    return r + "]";
}

} // namespace coli
