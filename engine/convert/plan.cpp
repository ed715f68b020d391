#include "convert/plan.h"

#include "model/tensor_names.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

namespace coli::convert {

namespace {

uint64_t alignUp(uint64_t v, uint64_t a) {
    return (v + a - 1) / a * a;
}

std::string shapeString(const std::vector<int64_t>& s) {
    std::string r = "[";
    for (size_t i = 0; i < s.size(); ++i)
        r += (i ? ", " : "") + std::to_string(s[i]);
    return r + "]";
}

Status checkDtype(const TensorInfo& t, const SourceCheckpoint& ck) {
    if (t.dtype == DType::F8_E4M3) return ck.checkF8(t);
    if (convertibleDtype(t.dtype)) return {};
    return {ErrorCode::Unsupported,
            ck.dir() + ": tensor '" + t.name + "': dtype " + dtypeName(t.dtype) +
                " cannot be converted (weights must be F32, F16, BF16 or F8_E4M3 with scales)"};
}

// The layer index of "model.layers.<L>.<...>", or -1.
int layerOf(const std::string& name) {
    static const std::string kPrefix = "model.layers.";
    if (name.rfind(kPrefix, 0) != 0) return -1;
    size_t i = kPrefix.size();
    int v = 0;
    bool any = false;
    while (i < name.size() && name[i] >= '0' && name[i] <= '9' && v < 1'000'000) {
        v = v * 10 + (name[i++] - '0');
        any = true;
    }
    return any && i < name.size() && name[i] == '.' ? v : -1;
}

// The class of a tensor the name table knows; Other for the rest.
TensorClass classOf(TensorKind k) {
    switch (k) {
    case TensorKind::Embed:
        return TensorClass::Embeddings;
    case TensorKind::LmHead:
        return TensorClass::LmHead;
    case TensorKind::Router:
    case TensorKind::SharedExpertGate:
    case TensorKind::RouterBias:
        return TensorClass::Router;
    case TensorKind::QA:
    case TensorKind::QB:
    case TensorKind::KvA:
    case TensorKind::KvB:
    case TensorKind::Q:
    case TensorKind::K:
    case TensorKind::V:
    case TensorKind::O:
    case TensorKind::SharedGate:
    case TensorKind::SharedUp:
    case TensorKind::SharedDown:
    case TensorKind::DenseGate:
    case TensorKind::DenseUp:
    case TensorKind::DenseDown:
        return TensorClass::Dense;
    case TensorKind::FinalNorm:
    case TensorKind::AttnNorm:
    case TensorKind::FfnNorm:
    case TensorKind::QBias:
    case TensorKind::KBias:
    case TensorKind::VBias:
    case TensorKind::OBias:
    case TensorKind::QNorm:
    case TensorKind::KNorm:
    case TensorKind::QANorm:
    case TensorKind::KvANorm:
        return TensorClass::Norms;
    default:
        return TensorClass::Other;
    }
}

// name -> class for every non-expert tensor name the family's table gives for this config.
std::map<std::string, TensorClass> knownNames(const ModelConfig& c) {
    std::map<std::string, TensorClass> m;
    auto put = [&](TensorKind k, int layer) {
        const std::string n = tensorName(c.family, k, layer);
        if (!n.empty()) m.emplace(n, classOf(k));
    };
    for (TensorKind k : {TensorKind::Embed, TensorKind::FinalNorm, TensorKind::LmHead})
        put(k, 0);
    const TensorKind perLayer[] = {TensorKind::AttnNorm,
                                   TensorKind::FfnNorm,
                                   TensorKind::Q,
                                   TensorKind::K,
                                   TensorKind::V,
                                   TensorKind::O,
                                   TensorKind::QBias,
                                   TensorKind::KBias,
                                   TensorKind::VBias,
                                   TensorKind::OBias,
                                   TensorKind::QNorm,
                                   TensorKind::KNorm,
                                   TensorKind::Router,
                                   TensorKind::SharedGate,
                                   TensorKind::SharedUp,
                                   TensorKind::SharedDown,
                                   TensorKind::SharedExpertGate,
                                   TensorKind::DenseGate,
                                   TensorKind::DenseUp,
                                   TensorKind::DenseDown,
                                   TensorKind::QA,
                                   TensorKind::QANorm,
                                   TensorKind::QB,
                                   TensorKind::KvA,
                                   TensorKind::KvANorm,
                                   TensorKind::KvB,
                                   TensorKind::RouterBias};
    // DeepSeek-V3's multi-token-prediction layers take the decoder layers' names and classes
    // (their router stays f32); their own extra matrices are placed by makePlan.
    for (int l = 0; l < c.nLayers + c.mtpLayers; ++l)
        for (TensorKind k : perLayer)
            put(k, l);
    return m;
}

struct ExpertSources {
    SourceSlice gate, up, down;
};

class Planner {
public:
    Planner(const SourceCheckpoint& ck, const ModelConfig& c, const PlanOptions& o)
        : m_ck(ck), m_c(c), m_o(o) {}

    Result<Plan> run() {
        for (const TensorInfo* t : m_ck.tensors()) {
            COLI_RETURN_IF_ERROR(checkDtype(*t, m_ck));
            m_plan.sourceBytes += t->nbytes;
            // Block scales of F8 weights are applied while reading, never stored.
            if (t->dtype == DType::F8_E4M3) m_consumed.insert(m_ck.scaleOf(*t)->name);
        }
        for (int l = 0; l < m_c.nLayers; ++l) {
            if (l < int(m_c.sparseLayer.size()) && m_c.sparseLayer[l])
                COLI_RETURN_IF_ERROR(expertsOfLayer(l));
        }
        const auto known = knownNames(m_c);
        for (const TensorInfo* t : m_ck.tensors()) {
            if (m_consumed.count(t->name)) continue;
            auto it = known.find(t->name);
            TensorClass cls = it != known.end() ? it->second : TensorClass::Other;
            if (cls == TensorClass::Other && t->shape.size() <= 1) cls = TensorClass::Norms;
            // DeepSeek-V3's multi-token-prediction layers (model.layers.{n_layers + i}.*, experts
            // included) are kept for a later speculative decoder at the dense format (int8 or
            // bf16), never at the experts' int4.
            if (cls == TensorClass::Other && t->shape.size() == 2 &&
                layerOf(t->name) >= m_c.nLayers)
                cls = TensorClass::Dense;
            dense(*t, cls);
        }
        std::stable_sort(m_plan.items.begin(), m_plan.items.end(),
                         [](const PlannedItem& a, const PlannedItem& b) {
                             return std::make_tuple(a.layer, a.expert, a.name) <
                                    std::make_tuple(b.layer, b.expert, b.name);
                         });
        layoutShards();
        return std::move(m_plan);
    }

private:
    Status need(const std::string& name, const std::vector<int64_t>& shape,
                const TensorInfo** out) {
        const TensorInfo* t = m_ck.find(name);
        if (!t)
            return {ErrorCode::NotFound,
                    m_ck.dir() + ": expert tensor '" + name + "' is missing (config.json says " +
                        std::to_string(m_c.nExperts) + " experts per MoE layer)"};
        if (t->shape != shape)
            return {ErrorCode::Malformed, m_ck.dir() + ": tensor '" + name + "' has shape " +
                                              shapeString(t->shape) + ", expected " +
                                              shapeString(shape)};
        m_consumed.insert(name);
        *out = t;
        return {};
    }

    Status expertsOfLayer(int l) {
        const int64_t E = m_c.nExperts, F = m_c.expertFfn, d = m_c.dModel;
        const std::string gate0 = tensorName(m_c.family, TensorKind::ExpertGate, l, 0);
        const std::string gu = tensorName(m_c.family, TensorKind::ExpertsGateUp, l);
        const bool stacked = (gate0.empty() || !m_ck.find(gate0)) && !gu.empty() && m_ck.find(gu);
        std::vector<ExpertSources> src(static_cast<size_t>(E));
        if (stacked) {
            const TensorInfo *tgu = nullptr, *tdn = nullptr;
            COLI_RETURN_IF_ERROR(need(gu, {E, 2 * F, d}, &tgu));
            COLI_RETURN_IF_ERROR(
                need(tensorName(m_c.family, TensorKind::ExpertsDown, l), {E, d, F}, &tdn));
            // Per expert: F gate rows then F up rows (see model/weights.cpp, stackedExperts).
            for (int64_t e = 0; e < E; ++e)
                src[size_t(e)] = {{gu, e * 2 * F * d, F, d},
                                  {gu, e * 2 * F * d + F * d, F, d},
                                  {tdn->name, e * d * F, d, F}};
        } else {
            for (int64_t e = 0; e < E; ++e) {
                const TensorInfo *g = nullptr, *u = nullptr, *dn = nullptr;
                const int ei = int(e);
                COLI_RETURN_IF_ERROR(
                    need(tensorName(m_c.family, TensorKind::ExpertGate, l, ei), {F, d}, &g));
                COLI_RETURN_IF_ERROR(
                    need(tensorName(m_c.family, TensorKind::ExpertUp, l, ei), {F, d}, &u));
                COLI_RETURN_IF_ERROR(
                    need(tensorName(m_c.family, TensorKind::ExpertDown, l, ei), {d, F}, &dn));
                src[size_t(e)] = {{g->name, 0, F, d}, {u->name, 0, F, d}, {dn->name, 0, d, F}};
            }
        }
        for (int64_t e = 0; e < E; ++e) {
            PlannedItem it;
            it.name =
                "model.layers." + std::to_string(l) + ".experts." + std::to_string(e) + ".packed";
            it.cls = TensorClass::Experts;
            it.layer = l;
            it.expert = int(e);
            uint64_t at = 0;
            for (const SourceSlice* s :
                 {&src[size_t(e)].gate, &src[size_t(e)].up, &src[size_t(e)].down}) {
                bool ok = true;
                const StoredFormat f = formatForCols(m_o.experts, s->cols, m_o.experts, &ok);
                if (!ok)
                    return {ErrorCode::Unsupported,
                            m_ck.dir() + ": tensor '" + s->tensor + "': " +
                                std::to_string(s->cols) + " columns is not a multiple of 32 (" +
                                storedFormatName(m_o.experts) + " experts need that)"};
                PlannedPart p;
                p.src = *s;
                p.format = formatForRows(f, s->rows);
                p.shape = {s->rows, s->cols};
                p.offset = alignUp(at, kPartAlign);
                p.length = storedBytes(p.format, s->rows, s->cols);
                at = p.offset + p.length;
                it.parts.push_back(std::move(p));
            }
            it.length = alignUp(at, kAlign);
            it.dtype = DType::U8;
            it.storedShape = {int64_t(it.length)};
            m_plan.items.push_back(std::move(it));
        }
        return {};
    }

    void dense(const TensorInfo& t, TensorClass cls) {
        PlannedItem it;
        it.name = t.name;
        it.cls = cls;
        it.layer = layerOf(t.name);
        const int64_t n = t.numel();
        const bool matrix = t.shape.size() == 2;
        StoredFormat f = StoredFormat::F32;
        bool ok = true;
        if (matrix && cls == TensorClass::Dense)
            f = formatForCols(m_o.dense, t.shape[1], StoredFormat::BF16, &ok);
        else if (matrix && (cls == TensorClass::Embeddings || cls == TensorClass::LmHead))
            f = formatForCols(m_o.embed, t.shape[1], StoredFormat::BF16, &ok);
        PlannedPart p;
        const int64_t cols = t.shape.empty() ? 1 : t.shape.back();
        p.src = {t.name, 0, cols > 0 ? n / cols : 0, cols};
        f = formatForRows(f, p.src.rows);
        p.format = f;
        p.shape = t.shape;
        p.length = storedBytes(f, p.src.rows, p.src.cols);
        it.length = p.length;
        if (isQuantised(f)) {
            it.dtype = DType::U8;
            it.storedShape = {p.src.rows, int64_t(quant::rowBytes(weightFormat(f), cols))};
        } else {
            it.dtype = f == StoredFormat::BF16 ? DType::BF16 : DType::F32;
            it.storedShape = t.shape;
        }
        it.parts.push_back(std::move(p));
        m_plan.items.push_back(std::move(it));
    }

    void layoutShards() {
        std::vector<std::vector<size_t>> groups;
        uint64_t cur = 0;
        for (size_t i = 0; i < m_plan.items.size(); ++i) {
            const uint64_t len = m_plan.items[i].length;
            if (groups.empty() || (cur > 0 && cur + len > m_o.maxShardBytes)) {
                groups.emplace_back();
                cur = 0;
            }
            groups.back().push_back(i);
            cur += len;
        }
        const size_t n = groups.size();
        for (size_t s = 0; s < n; ++s) {
            PlannedShard sh;
            char buf[64];
            std::snprintf(buf, sizeof buf, "model-%05zu-of-%05zu.safetensors", s + 1, n);
            sh.file = buf;
            // Blobs first: every blob length is a multiple of kAlign and the data section starts
            // at one, so every blob starts at one.
            for (size_t i : groups[s])
                if (m_plan.items[i].cls == TensorClass::Experts) sh.items.push_back(i);
            for (size_t i : groups[s])
                if (m_plan.items[i].cls != TensorClass::Experts) sh.items.push_back(i);
            nlohmann::ordered_json h = nlohmann::ordered_json::object();
            h["__metadata__"] = {
                {"format", "colibri"},
                {"colibri_format_version", std::to_string(kContainerFormatVersion)}};
            uint64_t off = 0;
            for (size_t i : sh.items) {
                PlannedItem& it = m_plan.items[i];
                it.shard = int(s);
                it.dataOffset = off;
                h[it.name] = {{"dtype", dtypeName(it.dtype)},
                              {"shape", it.storedShape},
                              {"data_offsets", {off, off + it.length}}};
                off += it.length;
            }
            sh.header = h.dump();
            sh.header.append(size_t(alignUp(8 + sh.header.size(), kAlign) - 8 - sh.header.size()),
                             ' ');
            const uint64_t dataStart = 8 + sh.header.size();
            for (size_t i : sh.items)
                m_plan.items[i].fileOffset = dataStart + m_plan.items[i].dataOffset;
            sh.bytes = dataStart + off;
            m_plan.totalBytes += sh.bytes;
            m_plan.shards.push_back(std::move(sh));
        }
    }

    const SourceCheckpoint& m_ck;
    const ModelConfig& m_c;
    const PlanOptions& m_o;
    Plan m_plan;
    std::set<std::string> m_consumed;
};

} // namespace

bool convertibleDtype(DType t) {
    return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F8_E4M3;
}

Result<Plan> makePlan(const SourceCheckpoint& ck, const ModelConfig& cfg, const PlanOptions& opt) {
    return Planner(ck, cfg, opt).run();
}

} // namespace coli::convert
