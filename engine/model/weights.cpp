#include "model/weights.h"

#include "io/safetensors.h"
#include "model/tensor_names.h"
#include "model/weight_plan.h"

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
        quant::dequantiseRow(qfmt, q.data(), cols, r, out);
    } else {
        std::copy(row(r), row(r) + cols, out);
    }
}

namespace {

using Shape = std::vector<int64_t>;

// One checkpoint tensor the model needs: its name, expected shape and how to read it into the
// weights.
struct Need {
    std::string name;
    Shape shape;
    bool routedExpert = false; // part of a routed expert (stacked: all experts of a layer)
    std::function<Status(const Checkpoint&)> read; // empty when only planning (summary)
};

std::function<Status(const Checkpoint&)> matrixReader(Matrix* m, const std::string& name,
                                                      int64_t rows, int64_t cols) {
    if (!m) return {};
    return [m, name, rows, cols](const Checkpoint& ck) {
        m->rows = static_cast<int>(rows);
        m->cols = static_cast<int>(cols);
        return ck.readF32(name, m->data);
    };
}

// GraniteMoE: input_linear.weight [E, 2*ffn, d] holds, per expert, the gate rows then the up
// rows (GraniteMoeMoE.forward: chunk(2, dim=-1), activation on chunk 0); output_linear.weight
// [E, d, ffn] is the down projection. transformers 5's packed gate_up_proj / down_proj
// (Qwen3MoeExperts.forward: linear(x, gate_up_proj[e]).chunk(2, dim=-1)) use the same layout.
// Experts are read one by one (readF32Range) so the per-(layer, expert) structure is the same
// as for per-expert checkpoints. `experts` points at the layer's n_experts SwiGluWeights.
void stackedNeeds(const ModelConfig& c, int layer, SwiGluWeights* experts, std::vector<Need>* out) {
    const int64_t E = c.nExperts, F = c.expertFfn, d = c.dModel;
    const std::string gu = tensorName(c.family, TensorKind::ExpertsGateUp, layer);
    const std::string dn = tensorName(c.family, TensorKind::ExpertsDown, layer);
    std::function<Status(const Checkpoint&)> readGu, readDn;
    if (experts) {
        readGu = [experts, gu, E, F, d](const Checkpoint& ck) {
            for (int64_t e = 0; e < E; ++e) {
                SwiGluWeights& s = experts[e];
                s.gate = f32Matrix(F, d);
                s.up = f32Matrix(F, d);
                COLI_RETURN_IF_ERROR(ck.readF32Range(gu, e * 2 * F * d, F * d, s.gate.data.data()));
                COLI_RETURN_IF_ERROR(
                    ck.readF32Range(gu, e * 2 * F * d + F * d, F * d, s.up.data.data()));
            }
            return Status();
        };
        readDn = [experts, dn, E, F, d](const Checkpoint& ck) {
            for (int64_t e = 0; e < E; ++e) {
                SwiGluWeights& s = experts[e];
                s.down = f32Matrix(d, F);
                COLI_RETURN_IF_ERROR(ck.readF32Range(dn, e * d * F, d * F, s.down.data.data()));
            }
            return Status();
        };
    }
    out->push_back({gu, {E, 2 * F, d}, true, std::move(readGu)});
    out->push_back({dn, {E, d, F}, true, std::move(readDn)});
}

// The shared plan (model/weight_plan.h) in checkpoint tensors: a routed expert becomes its three
// per-expert tensors, or, for a stacked layout, the layer's two stacked tensors (at expert 0).
std::vector<Need> checkpointNeeds(const ModelConfig& c, ExpertLayout layout, ModelWeights* w) {
    std::vector<Need> needs;
    for (const WeightSlot& s : planWeights(c, w)) {
        switch (s.what) {
        case SlotKind::Vector: {
            std::function<Status(const Checkpoint&)> read;
            if (s.vec)
                read = [v = s.vec, name = s.name](const Checkpoint& ck) {
                    return ck.readF32(name, *v);
                };
            needs.push_back({s.name, s.shape, false, std::move(read)});
            break;
        }
        case SlotKind::Matrix:
            needs.push_back(
                {s.name, s.shape, false, matrixReader(s.matrix, s.name, s.shape[0], s.shape[1])});
            break;
        case SlotKind::Expert: {
            if (layout == ExpertLayout::Stacked) {
                if (s.expert == 0) stackedNeeds(c, s.layer, s.mlp, &needs);
                break;
            }
            const int64_t F = s.shape[0], d = s.shape[1];
            const struct {
                TensorKind kind;
                Matrix* m;
                int64_t rows, cols;
            } parts[] = {{TensorKind::ExpertGate, s.mlp ? &s.mlp->gate : nullptr, F, d},
                         {TensorKind::ExpertUp, s.mlp ? &s.mlp->up : nullptr, F, d},
                         {TensorKind::ExpertDown, s.mlp ? &s.mlp->down : nullptr, d, F}};
            for (const auto& p : parts) {
                const std::string name = tensorName(c.family, p.kind, s.layer, s.expert);
                needs.push_back(
                    {name, {p.rows, p.cols}, true, matrixReader(p.m, name, p.rows, p.cols)});
            }
            break;
        }
        }
    }
    return needs;
}

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
        if (c.isMla()) { // q (or q_b), kv_a, kv_b, o: at least the big ones
            const MlaConfig& a = c.mla;
            n += double(c.nHeads) * a.qkHeadDim() *
                 std::max(a.qLoraRank > 0 ? a.qLoraRank : c.dModel, 1);
            n += double(a.kvLoraRank) * d +
                 double(c.nHeads) * (a.qkNopeHeadDim + a.vHeadDim) * a.kvLoraRank;
            n += d * double(c.nHeads) * a.vHeadDim;
        } else {
            n += 2 * qDim * d + 2 * kvDim * d; // q, o; k, v
        }
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

Status checkCheckpointFits(const Checkpoint& ckpt, const ModelConfig& cfg) {
    COLI_RETURN_IF_ERROR(checkPlausibleSizes(ckpt, cfg));
    return checkPresence(ckpt, checkpointNeeds(cfg, detectLayout(ckpt, cfg), nullptr));
}

Result<ModelWeights> loadWeights(const Checkpoint& ckpt, const ModelConfig& cfg,
                                 const WeightProgressFn& progress, const std::atomic<bool>* cancel,
                                 bool routedExperts) {
    COLI_RETURN_IF_ERROR(checkPlausibleSizes(ckpt, cfg));
    ModelWeights w;
    std::vector<Need> needs = checkpointNeeds(cfg, detectLayout(ckpt, cfg), &w);
    COLI_RETURN_IF_ERROR(checkPresence(ckpt, needs));
    if (!routedExperts) std::erase_if(needs, [](const Need& n) { return n.routedExpert; });
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

Result<std::array<ExpertTensorRange, 3>> locateExpert(const Checkpoint& ckpt, const ModelConfig& c,
                                                      int layer, int expert) {
    if (layer < 0 || layer >= c.nLayers || !c.sparseLayer[layer] || expert < 0 ||
        expert >= c.nExperts)
        return Status(ErrorCode::InvalidArgument, ckpt.dir() + ": no routed expert " +
                                                      std::to_string(expert) + " in layer " +
                                                      std::to_string(layer));
    const int64_t F = c.expertFfn, d = c.dModel;
    std::array<ExpertTensorRange, 3> out;
    auto find = [&](const std::string& name, const Shape& shape) -> Result<const TensorInfo*> {
        const TensorInfo* t = ckpt.find(name);
        if (!t) return Status(ErrorCode::NotFound, ckpt.dir() + ": tensor '" + name + "' missing");
        if (t->shape != shape)
            return Status(ErrorCode::Malformed, ckpt.dir() + ": tensor '" + name + "' has shape " +
                                                    shapeString(t->shape) + ", expected " +
                                                    shapeString(shape));
        return t;
    };
    if (detectLayout(ckpt, c) == ExpertLayout::Stacked) {
        const int64_t E = c.nExperts;
        Result<const TensorInfo*> gu =
            find(tensorName(c.family, TensorKind::ExpertsGateUp, layer), {E, 2 * F, d});
        if (!gu) return gu.status();
        Result<const TensorInfo*> dn =
            find(tensorName(c.family, TensorKind::ExpertsDown, layer), {E, d, F});
        if (!dn) return dn.status();
        out[0] = {*gu, expert * 2 * F * d, F * d, int(F), int(d)};
        out[1] = {*gu, expert * 2 * F * d + F * d, F * d, int(F), int(d)};
        out[2] = {*dn, expert * d * F, d * F, int(d), int(F)};
        return out;
    }
    const TensorKind kinds[3] = {TensorKind::ExpertGate, TensorKind::ExpertUp,
                                 TensorKind::ExpertDown};
    for (int p = 0; p < 3; ++p) {
        const int64_t rows = p == 2 ? d : F, cols = p == 2 ? F : d;
        Result<const TensorInfo*> t =
            find(tensorName(c.family, kinds[p], layer, expert), {rows, cols});
        if (!t) return t.status();
        out[p] = {*t, 0, rows * cols, int(rows), int(cols)};
    }
    return out;
}

void finishSummary(const ModelConfig& cfg, ModelSummary& s) {
    s.expertsPerLayer = cfg.nExperts;
    s.moeLayers = 0;
    for (bool sp : cfg.sparseLayer)
        s.moeLayers += sp ? 1 : 0;
    const int64_t paramsPerExpert = 3 * int64_t(cfg.expertFfn) * cfg.dModel;
    s.activeParams =
        s.totalParams - int64_t(s.moeLayers) * (cfg.nExperts - cfg.topK) * paramsPerExpert;
    const int64_t nExpertsTotal = int64_t(s.moeLayers) * cfg.nExperts;
    s.bytesPerExpert = nExpertsTotal ? s.expertBytes / nExpertsTotal : 0;
}

ModelSummary computeSummary(const Checkpoint& ckpt, const ModelConfig& cfg) {
    ModelSummary s;
    // Not a model this checkpoint can hold: loadWeights reports why; planning could exhaust memory.
    if (!checkPlausibleSizes(ckpt, cfg)) return s;
    const std::vector<Need> needs = checkpointNeeds(cfg, detectLayout(ckpt, cfg), nullptr);
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
    finishSummary(cfg, s);
    std::string list;
    for (const std::string& d : dtypes)
        list += (list.empty() ? "" : "+") + d;
    s.storage = "safetensors (" + list + ")";
    return s;
}

} // namespace coli
