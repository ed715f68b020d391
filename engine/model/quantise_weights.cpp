#include "model/quantise_weights.h"

#include <cmath>

namespace coli {

namespace {

quant::WeightFormat withGroup32(quant::WeightFormat f) {
    switch (f) {
    case quant::WeightFormat::Q8_G64:
        return quant::WeightFormat::Q8_G32;
    case quant::WeightFormat::Q4_G64:
        return quant::WeightFormat::Q4_G32;
    default:
        return f;
    }
}

Status quantiseMatrix(Matrix& m, quant::WeightFormat preferred, const std::string& name,
                      std::vector<TensorQuantReport>* report) {
    if (m.empty()) return Status::ok();
    if (m.quantised()) return {ErrorCode::InvalidArgument, name + " is already quantised"};
    auto fmt = formatForCols(preferred, m.cols);
    TensorQuantReport r;
    r.name = name;
    r.bytesF32 = int64_t(m.data.size()) * 4;
    if (!fmt) {
        r.format = "f32";
        r.bytesQuantised = r.bytesF32;
        if (report) report->push_back(r);
        return Status::ok();
    }
    // Rows in tiles of eight where they divide (formats.h): the SIMD kernels then read one stream.
    fmt = quant::formatForRows(*fmt, m.rows);
    std::vector<uint8_t> q(quant::rowBytes(*fmt, m.cols) * size_t(m.rows));
    Status s = quant::quantiseRows(*fmt, m.data.data(), m.rows, m.cols, q.data());
    if (!s.isOk()) return {s.code(), name + ": " + s.message()};
    if (report) {
        std::vector<float> back(m.data.size());
        quant::dequantiseRows(*fmt, q.data(), m.rows, m.cols, back.data());
        double dot = 0, na = 0, nb = 0, err = 0;
        for (size_t i = 0; i < back.size(); ++i) {
            const double a = m.data[i], b = back[i];
            dot += a * b;
            na += a * a;
            nb += b * b;
            err += (a - b) * (a - b);
        }
        r.format = quant::formatInfo(*fmt).name;
        r.cosine = (na > 0 && nb > 0) ? dot / std::sqrt(na * nb) : (na == nb ? 1.0 : 0.0);
        r.relRmse = na > 0 ? std::sqrt(err / na) : 0.0;
        r.bytesQuantised = int64_t(q.size());
        report->push_back(r);
    }
    m.q.assign(q.begin(), q.end());
    m.qfmt = *fmt;
    std::vector<float>().swap(m.data);
    return Status::ok();
}

Status quantiseMlp(SwiGluWeights& e, quant::WeightFormat f, const std::string& prefix,
                   std::vector<TensorQuantReport>* report) {
    COLI_RETURN_IF_ERROR(quantiseMatrix(e.gate, f, prefix + ".gate", report));
    COLI_RETURN_IF_ERROR(quantiseMatrix(e.up, f, prefix + ".up", report));
    return quantiseMatrix(e.down, f, prefix + ".down", report);
}

} // namespace

std::optional<quant::WeightFormat> formatForCols(quant::WeightFormat preferred, int64_t cols) {
    if (cols > 0 && cols % quant::formatInfo(preferred).groupSize == 0) return preferred;
    const quant::WeightFormat g32 = withGroup32(quant::plainFormat(preferred));
    if (cols > 0 && cols % 32 == 0) return g32;
    return std::nullopt;
}

Status quantiseWeights(ModelWeights& w, const WeightQuantisation& q,
                       std::vector<TensorQuantReport>* report) {
    for (size_t l = 0; l < w.layers.size(); ++l) {
        LayerWeights& L = w.layers[l];
        const std::string p = "layers." + std::to_string(l);
        if (q.dense) {
            for (auto [m, n] : {std::pair{&L.q, ".q"},
                                {&L.k, ".k"},
                                {&L.v, ".v"},
                                {&L.o, ".o"},
                                {&L.qA, ".q_a"},
                                {&L.qB, ".q_b"},
                                {&L.kvA, ".kv_a"},
                                {&L.kvB, ".kv_b"}})
                COLI_RETURN_IF_ERROR(quantiseMatrix(*m, *q.dense, p + n, report));
            COLI_RETURN_IF_ERROR(quantiseMlp(L.shared, *q.dense, p + ".shared", report));
            COLI_RETURN_IF_ERROR(quantiseMlp(L.dense, *q.dense, p + ".mlp", report));
        }
        if (q.experts && l < w.experts.size())
            for (size_t e = 0; e < w.experts[l].size(); ++e)
                COLI_RETURN_IF_ERROR(quantiseMlp(w.experts[l][e], *q.experts,
                                                 p + ".experts." + std::to_string(e), report));
    }
    // The LM head first: a tied head is the embedding, quantised (or not) with it.
    if (q.lmHead && !w.lmHead.empty())
        COLI_RETURN_IF_ERROR(quantiseMatrix(w.lmHead, *q.lmHead, "lm_head", report));
    if (q.embed) COLI_RETURN_IF_ERROR(quantiseMatrix(w.embed, *q.embed, "embed", report));
    return Status::ok();
}

} // namespace coli
