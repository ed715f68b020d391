#include "model/weights.h"

#include "io/safetensors.h"
#include "model/tensor_names.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <set>

namespace coli {

namespace {
Matrix f32Matrix(int64_t rows, int64_t cols) {
    Matrix m;
    m.data.resize(size_t(rows * cols));
    m.rows = int(rows);
    m.cols = int(cols);
    return m;
}
} // namespace

void Matrix::rowF32(int r, float* out) const {
    if (quantised()) {
        const size_t rb = quant::rowBytes(qfmt, cols);
        quant::dequantiseRows(qfmt, q.data() + static_cast<size_t>(r) * rb, 1, cols, out);
    } else {
        std::copy(row(r), row(r) + cols, out);
    }
}

namespace {

using Shape = std::vector<int64_t>;

std::string shapeString(const Shape& s) {
    std::string r = "[";
    for (size_t i = 0; i < s.size(); ++i)
        r += (i ? ", " : "") + std::to_string(s[i]);
    return r + "]";
}

// One tensor the model needs: its name, expected shape and how to read it into the weights.
struct Need {
    std::string name;
    Shape shape;
    bool routedExpert = false; // part of a routed expert (stacked: all experts of a layer)
    std::function<Status(const Checkpoint&)> read; // empty when only planning (summary)
};

class Planner {
public:
    Planner(const ModelConfig& c, ExpertLayout layout, ModelWeights* w)
        : m_c(c), m_layout(layout), m_w(w) {}

    std::vector<Need> plan() {
        const ModelConfig& c = m_c;
        const int64_t d = c.dModel, vocab = c.vocabSize;
        if (m_w) {
            m_w->layers.resize(c.nLayers);
            m_w->experts.resize(c.nLayers);
        }
        matrix(TensorKind::Embed, 0, vocab, d, m_w ? &m_w->embed : nullptr);
        vec(TensorKind::FinalNorm, 0, d, m_w ? &m_w->finalNorm : nullptr);
        // Tied: HF ties lm_head.weight to embed_tokens.weight and ignores any stored copy.
        if (!c.tieWordEmbeddings)
            matrix(TensorKind::LmHead, 0, vocab, d, m_w ? &m_w->lmHead : nullptr);

        const int64_t qDim = int64_t(c.nHeads) * c.headDim, kvDim = int64_t(c.nKvHeads) * c.headDim;
        for (int l = 0; l < c.nLayers; ++l) {
            LayerWeights* L = m_w ? &m_w->layers[l] : nullptr;
            vec(TensorKind::AttnNorm, l, d, L ? &L->attnNorm : nullptr);
            vec(TensorKind::FfnNorm, l, d, L ? &L->ffnNorm : nullptr);
            matrix(TensorKind::Q, l, qDim, d, L ? &L->q : nullptr);
            matrix(TensorKind::K, l, kvDim, d, L ? &L->k : nullptr);
            matrix(TensorKind::V, l, kvDim, d, L ? &L->v : nullptr);
            matrix(TensorKind::O, l, d, qDim, L ? &L->o : nullptr);
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
            const bool sparse = c.sparseLayer[l];
            if (L) L->sparse = sparse;
            if (!sparse) {
                swiglu(TensorKind::DenseGate, TensorKind::DenseUp, TensorKind::DenseDown, l, 0,
                       c.denseFfn, L ? &L->dense : nullptr, false);
                continue;
            }
            matrix(TensorKind::Router, l, c.nExperts, d, L ? &L->router : nullptr);
            if (c.sharedFfn > 0) {
                swiglu(TensorKind::SharedGate, TensorKind::SharedUp, TensorKind::SharedDown, l, 0,
                       c.sharedFfn, L ? &L->shared : nullptr, false);
                if (c.sharedExpertGate)
                    matrix(TensorKind::SharedExpertGate, l, 1, d,
                           L ? &L->sharedExpertGate : nullptr);
            }
            if (m_w) m_w->experts[l].resize(c.nExperts);
            if (m_layout == ExpertLayout::PerExpert) {
                for (int e = 0; e < c.nExperts; ++e)
                    swiglu(TensorKind::ExpertGate, TensorKind::ExpertUp, TensorKind::ExpertDown, l,
                           e, c.expertFfn, m_w ? &m_w->experts[l][e] : nullptr, true);
            } else {
                stackedExperts(l);
            }
        }
        return std::move(m_needs);
    }

private:
    void add(TensorKind kind, int layer, int expert, Shape shape, bool routed,
             std::function<Status(const Checkpoint&)> read) {
        m_needs.push_back({tensorName(m_c.family, kind, layer, expert), std::move(shape), routed,
                           std::move(read)});
    }

    void matrix(TensorKind kind, int layer, int64_t rows, int64_t cols, Matrix* m, int expert = 0,
                bool routed = false) {
        std::string name = tensorName(m_c.family, kind, layer, expert);
        std::function<Status(const Checkpoint&)> read;
        if (m) {
            read = [m, name, rows, cols](const Checkpoint& ck) {
                m->rows = static_cast<int>(rows);
                m->cols = static_cast<int>(cols);
                return ck.readF32(name, m->data);
            };
        }
        add(kind, layer, expert, {rows, cols}, routed, std::move(read));
    }

    void vec(TensorKind kind, int layer, int64_t n, std::vector<float>* v) {
        std::string name = tensorName(m_c.family, kind, layer, 0);
        std::function<Status(const Checkpoint&)> read;
        if (v) read = [v, name](const Checkpoint& ck) { return ck.readF32(name, *v); };
        add(kind, layer, 0, {n}, false, std::move(read));
    }

    void swiglu(TensorKind g, TensorKind u, TensorKind dn, int layer, int expert, int64_t ffn,
                SwiGluWeights* s, bool routed) {
        const int64_t d = m_c.dModel;
        matrix(g, layer, ffn, d, s ? &s->gate : nullptr, expert, routed);
        matrix(u, layer, ffn, d, s ? &s->up : nullptr, expert, routed);
        matrix(dn, layer, d, ffn, s ? &s->down : nullptr, expert, routed);
    }

    // GraniteMoE: input_linear.weight [E, 2*ffn, d] holds, per expert, the gate rows then the up
    // rows (GraniteMoeMoE.forward: chunk(2, dim=-1), activation on chunk 0); output_linear.weight
    // [E, d, ffn] is the down projection. transformers 5's packed gate_up_proj / down_proj
    // (Qwen3MoeExperts.forward: linear(x, gate_up_proj[e]).chunk(2, dim=-1)) use the same layout.
    // Experts are read one by one (readF32Range) so the per-(layer, expert) structure is the same
    // as for per-expert checkpoints.
    void stackedExperts(int layer) {
        const int64_t E = m_c.nExperts, F = m_c.expertFfn, d = m_c.dModel;
        const std::string gu = tensorName(m_c.family, TensorKind::ExpertsGateUp, layer);
        const std::string dn = tensorName(m_c.family, TensorKind::ExpertsDown, layer);
        std::function<Status(const Checkpoint&)> readGu, readDn;
        if (m_w) {
            auto* experts = &m_w->experts[layer];
            readGu = [experts, gu, E, F, d](const Checkpoint& ck) {
                for (int64_t e = 0; e < E; ++e) {
                    SwiGluWeights& s = (*experts)[e];
                    s.gate = f32Matrix(F, d);
                    s.up = f32Matrix(F, d);
                    COLI_RETURN_IF_ERROR(
                        ck.readF32Range(gu, e * 2 * F * d, F * d, s.gate.data.data()));
                    COLI_RETURN_IF_ERROR(
                        ck.readF32Range(gu, e * 2 * F * d + F * d, F * d, s.up.data.data()));
                }
                return Status();
            };
            readDn = [experts, dn, E, F, d](const Checkpoint& ck) {
                for (int64_t e = 0; e < E; ++e) {
                    SwiGluWeights& s = (*experts)[e];
                    s.down = f32Matrix(d, F);
                    COLI_RETURN_IF_ERROR(ck.readF32Range(dn, e * d * F, d * F, s.down.data.data()));
                }
                return Status();
            };
        }
        add(TensorKind::ExpertsGateUp, layer, 0, {E, 2 * F, d}, true, std::move(readGu));
        add(TensorKind::ExpertsDown, layer, 0, {E, d, F}, true, std::move(readDn));
    }

    const ModelConfig& m_c;
    ExpertLayout m_layout;
    ModelWeights* m_w;
    std::vector<Need> m_needs;
};

// Every needed tensor must exist with its shape. Missing names are counted; the first
// kShownMissing are listed (a config with absurd sizes can miss millions).
constexpr size_t kShownMissing = 20;

Status checkPresence(const Checkpoint& ck, const std::vector<Need>& needs) {
    std::string shown;
    size_t missing = 0;
    for (const Need& n : needs) {
        if (ck.find(n.name)) continue;
        if (++missing <= kShownMissing) shown += (missing > 1 ? ", " : "") + n.name;
    }
    if (missing > 0) {
        std::string msg =
            ck.dir() + ": " + std::to_string(missing) + " expected tensor(s) missing: " + shown;
        if (missing > kShownMissing)
            msg += " and " + std::to_string(missing - kShownMissing) + " more";
        return {ErrorCode::NotFound, msg};
    }
    for (const Need& n : needs) {
        const TensorInfo* t = ck.find(n.name);
        if (t->shape != n.shape)
            return {ErrorCode::Malformed, ck.dir() + ": tensor '" + n.name + "' has shape " +
                                              shapeString(t->shape) + ", expected " +
                                              shapeString(n.shape)};
    }
    return {};
}

// The family's published layout, unless the checkpoint holds only the other one (transformers 5
// saves OLMoE / Qwen experts stacked). Decided on the first MoE layer.
ExpertLayout detectLayout(const Checkpoint& ck, const ModelConfig& c) {
    const ExpertLayout preferred = expertLayout(c.family);
    int layer = -1;
    for (int l = 0; l < c.nLayers && layer < 0; ++l)
        if (c.sparseLayer[l]) layer = l;
    if (layer < 0 || preferred != ExpertLayout::PerExpert) return preferred;
    const std::string perExpert = tensorName(c.family, TensorKind::ExpertGate, layer, 0);
    const std::string stacked = tensorName(c.family, TensorKind::ExpertsGateUp, layer);
    if (!ck.find(perExpert) && !stacked.empty() && ck.find(stacked)) return ExpertLayout::Stacked;
    return preferred;
}

} // namespace

double expectedParamsLowerBound(const ModelConfig& c) {
    // In double: the product of absurd sizes must not overflow before it can be compared.
    const double d = c.dModel, vocab = c.vocabSize;
    const double qDim = double(c.nHeads) * c.headDim, kvDim = double(c.nKvHeads) * c.headDim;
    double n = vocab * d * (c.tieWordEmbeddings ? 1 : 2);
    for (int l = 0; l < c.nLayers; ++l) {
        n += 2 * qDim * d + 2 * kvDim * d; // q, o; k, v
        if (l < int(c.sparseLayer.size()) && c.sparseLayer[l])
            n += double(c.nExperts) * d + double(c.nExperts) * 3 * c.expertFfn * d +
                 3.0 * c.sharedFfn * d;
        else
            n += 3.0 * c.denseFfn * d;
    }
    return n;
}

Status checkPlausibleSizes(const Checkpoint& ckpt, const ModelConfig& c) {
    double held = 0;
    for (const TensorInfo* t : ckpt.tensors())
        held += double(t->numel());
    const double need = expectedParamsLowerBound(c);
    // Within a factor of 2, a few missing or misshapen tensors are likelier than wrong sizes, and
    // checkPresence names them; planning that many tensors costs little.
    if (need <= 2 * held) return {};
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "%.4g parameters, more than twice the %.4g the checkpoint's tensors hold", need,
                  held);
    return {ErrorCode::Malformed,
            ckpt.dir() + "/config.json: the sizes (num_hidden_layers " + std::to_string(c.nLayers) +
                ", hidden_size " + std::to_string(c.dModel) + ", vocab_size " +
                std::to_string(c.vocabSize) + ", experts " + std::to_string(c.nExperts) +
                " x ffn " + std::to_string(c.expertFfn) + ") need at least " + buf +
                " (a corrupt or mistyped config.json?)"};
}

Result<ModelWeights> loadWeights(const Checkpoint& ckpt, const ModelConfig& cfg,
                                 const WeightProgressFn& progress,
                                 const std::atomic<bool>* cancel) {
    COLI_RETURN_IF_ERROR(checkPlausibleSizes(ckpt, cfg));
    ModelWeights w;
    std::vector<Need> needs = Planner(cfg, detectLayout(ckpt, cfg), &w).plan();
    COLI_RETURN_IF_ERROR(checkPresence(ckpt, needs));
    uint64_t total = 0, done = 0;
    for (const Need& n : needs)
        total += ckpt.find(n.name)->nbytes;
    for (const Need& n : needs) {
        if (cancel && cancel->load(std::memory_order_relaxed))
            return Status(ErrorCode::Cancelled, ckpt.dir() + ": loading cancelled");
        COLI_RETURN_IF_ERROR(n.read(ckpt));
        done += ckpt.find(n.name)->nbytes;
        if (progress) progress(total ? double(done) / double(total) : 1.0);
    }
    return w;
}

ModelSummary computeSummary(const Checkpoint& ckpt, const ModelConfig& cfg) {
    ModelSummary s;
    // Not a model this checkpoint can hold: loadWeights reports why; planning could exhaust memory.
    if (!checkPlausibleSizes(ckpt, cfg)) return s;
    const std::vector<Need> needs = Planner(cfg, detectLayout(ckpt, cfg), nullptr).plan();
    std::set<std::string> dtypes;
    for (const Need& n : needs) {
        const TensorInfo* t = ckpt.find(n.name);
        int64_t numel = 1;
        for (int64_t x : n.shape)
            numel *= x;
        s.totalParams += numel;
        if (!t) continue;
        dtypes.insert(dtypeName(t->dtype));
        if (n.routedExpert) {
            s.expertBytes += int64_t(t->nbytes);
        } else {
            s.denseBytes += int64_t(t->nbytes);
        }
    }
    s.expertsPerLayer = cfg.nExperts;
    for (bool sp : cfg.sparseLayer)
        s.moeLayers += sp ? 1 : 0;
    const int64_t paramsPerExpert = 3 * int64_t(cfg.expertFfn) * cfg.dModel;
    s.activeParams =
        s.totalParams - int64_t(s.moeLayers) * (cfg.nExperts - cfg.topK) * paramsPerExpert;
    const int64_t nExpertsTotal = int64_t(s.moeLayers) * cfg.nExperts;
    s.bytesPerExpert = nExpertsTotal ? s.expertBytes / nExpertsTotal : 0;
    std::string list;
    for (const std::string& d : dtypes)
        list += (list.empty() ? "" : "+") + d;
    s.storage = "safetensors (" + list + ")";
    return s;
}

} // namespace coli
