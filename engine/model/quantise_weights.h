#pragma once
// In-memory quantisation of loaded f32 weights into the block formats of quant/formats.h, with
// the same quantiser (quant::quantiseRows) the converter uses, so a model quantised here and the
// same model read from a colibri container hold identical bytes (docs/quantisation.md).
// Tensor classes follow docs/design.md's container: routed experts (int4-g64 by default), dense
// linear weights (attention, shared expert, dense MLPs: int8), embedding table and LM head
// (int8 or kept); norms, biases, router and shared-expert gate always stay f32.
#include "core/status.h"
#include "model/weights.h"
#include "quant/formats.h"

#include <optional>
#include <string>
#include <vector>

namespace coli {

// std::nullopt keeps the class in f32.
struct WeightQuantisation {
    std::optional<quant::WeightFormat> experts; // routed experts' gate, up, down
    std::optional<quant::WeightFormat> dense;   // q, k, v, o (MLA: q_a, q_b, kv_a, kv_b, o), shared
                                                // expert, dense MLPs
    std::optional<quant::WeightFormat> embed;   // embedding table (row lookups)
    std::optional<quant::WeightFormat> lmHead;  // untied LM head (a tied one follows `embed`)
};

// The format a matrix with `cols` input columns gets when `preferred` is asked: the same bits
// with group 32 when cols is not a multiple of 64, std::nullopt (stay f32) when cols is not a
// multiple of 32 either. Pure.
std::optional<quant::WeightFormat> formatForCols(quant::WeightFormat preferred, int64_t cols);

// Quality of one quantised tensor against its f32 original.
struct TensorQuantReport {
    std::string name;   // e.g. "layers.3.experts.5.down", "layers.0.q", "embed"
    std::string format; // quant::FormatInfo::name, or "f32" when its cols forced f32
    double cosine = 1;  // cos(original, dequantised) over all elements, in double
    double relRmse = 0; // ||original - dequantised|| / ||original||
    int64_t bytesF32 = 0;
    int64_t bytesQuantised = 0;
};

// Replaces Matrix::data by Matrix::q for every matrix of the chosen classes (in place; the f32
// data is freed). With `report` non-null, appends one TensorQuantReport per matrix considered.
// Errors: Numeric (a NaN/Inf weight; the message names the tensor), InvalidArgument (a matrix
// that is already quantised). On error the weights are partly quantised: discard them.
// Thread-safety: mutates `w`; run before the model is shared. Parallel inside (OpenMP over rows
// is not used: each matrix is quantised on the calling thread; cost ~1 s per 100M weights).
Status quantiseWeights(ModelWeights& w, const WeightQuantisation& q,
                       std::vector<TensorQuantReport>* report = nullptr);

} // namespace coli
