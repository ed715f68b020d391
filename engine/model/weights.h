#pragma once
// Model weights in f32 in RAM, read through coli::Checkpoint using the names of tensor_names.h.
// Routed experts are kept per (layer, expert), apart from the dense weights, so a later expert
// tier can stream them instead. Matrices are row-major [out_features, in_features] like
// nn.Linear.weight: y[r] = sum_c W[r, c] * x[c].
// Thread-safety: plain data; immutable after loadWeights().
#include "core/status.h"
#include "model/config.h"
#include "model/weight_arena.h"
#include "quant/formats.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace coli {

class Checkpoint;
struct TensorInfo;

struct Matrix {
    std::vector<float> data; // [rows, cols] f32; empty when quantised
    int rows = 0;
    int cols = 0;
    // Block-quantised rows (quant/formats.h): rows * quant::rowBytes(qfmt, cols) bytes; empty
    // when the matrix is f32. Filled by quantiseWeights (model/quantise_weights.h) or by the
    // colibri container loader; never both `data` and `q`.
    // In the weight arena (model/weight_arena.h: huge pages where the kernel gives them).
    WeightBytes q;
    quant::WeightFormat qfmt = quant::WeightFormat::Q8_G32;
    bool empty() const { return data.empty() && q.empty(); }
    bool quantised() const { return !q.empty(); }
    // Row r in f32; only for an f32 matrix (quantised(): use rowF32).
    const float* row(int r) const { return data.data() + static_cast<size_t>(r) * cols; }
    // Row r in f32 into out [cols]: a copy, or scale * q dequantised. Thread-safe (const).
    void rowF32(int r, float* out) const;
};

// A non-owning view of a Matrix's data, or of a matrix inside a streamed expert's slot
// (tiers/expert_source.h): what the forward pass multiplies by. Valid while the owner lives (a
// slot: while its ExpertCache handle is held).
struct MatrixView {
    const float* data = nullptr; // [rows, cols] f32; null when quantised
    const uint8_t* q = nullptr;  // rows * quant::rowBytes(qfmt, cols) bytes; null when f32
    int rows = 0;
    int cols = 0;
    quant::WeightFormat qfmt = quant::WeightFormat::Q8_G32;
    MatrixView() = default;
    MatrixView(const Matrix& m) // NOLINT(google-explicit-constructor): a Matrix is a view source
        : data(m.data.empty() ? nullptr : m.data.data()), q(m.q.empty() ? nullptr : m.q.data()),
          rows(m.rows), cols(m.cols), qfmt(m.qfmt) {}
    bool quantised() const { return q != nullptr; }
    const float* row(int r) const { return data + static_cast<size_t>(r) * cols; }
};

// One SwiGLU MLP: down(silu(gate x) * up x).
struct SwiGluWeights {
    Matrix gate; // [ffn, d_model]
    Matrix up;   // [ffn, d_model]
    Matrix down; // [d_model, ffn]
};

// Views of one SwiGLU MLP's three matrices (a resident expert or a streamed one).
struct SwiGluView {
    MatrixView gate, up, down;
    SwiGluView() = default;
    SwiGluView(const SwiGluWeights& w) : gate(w.gate), up(w.up), down(w.down) {} // NOLINT
};

struct LayerWeights {
    std::vector<float> attnNorm; // [d_model]
    std::vector<float> ffnNorm;  // [d_model]
    Matrix q, k, v, o;           // see TensorKind for shapes
    // Multi-head latent attention (empty for GQA families; q when q_lora_rank is null). kvB is
    // kept in f32 (dequantised at load when stored quantised): attention reads it per head, the
    // key rows folded into the query and the value rows applied to the attended latent.
    Matrix qA, qB, kvA, kvB;
    std::vector<float> qANorm, kvANorm;
    std::vector<float> routerBias; // [n_experts] V3 e_score_correction_bias (selection only)
    std::vector<float> qBias, kBias, vBias, oBias; // empty when the family has none
    std::vector<float> qNorm, kNorm;               // empty when QkNorm::None
    bool sparse = false;                           // MoE layer (else `dense` is the MLP)
    Matrix router;                                 // [n_experts, d_model] (sparse layers)
    SwiGluWeights shared;                          // Qwen2-MoE shared expert (empty otherwise)
    Matrix sharedExpertGate;                       // [1, d_model]
    SwiGluWeights dense; // dense layers (mlp_only_layers / decoder_sparse_step)
};

struct ModelWeights {
    Matrix embed;                 // [vocab, d_model]
    Matrix lmHead;                // [vocab, d_model]; empty when tied (use embed)
    std::vector<float> finalNorm; // [d_model]
    std::vector<LayerWeights> layers;
    std::vector<std::vector<SwiGluWeights>>
        experts; // [n_layers][n_experts]; empty for dense layers
    const Matrix& outputMatrix() const { return lmHead.empty() ? embed : lmHead; }
};

// fraction in [0, 1] over the tensors to read.
using WeightProgressFn = std::function<void(double fraction)>;

// A lower bound of the parameters the config needs (the embedding, lm_head, attention and MLP
// matrices; norms and biases left out), in double so absurd sizes cannot overflow.
double expectedParamsLowerBound(const ModelConfig& cfg);

// Malformed, naming <dir>/config.json and its sizes, when expectedParamsLowerBound(cfg) exceeds
// twice the elements of all the checkpoint's tensors together: the config cannot describe this
// checkpoint (below that, loadWeights names the missing or misshapen tensors instead). Cheap (no
// per-tensor planning), so it runs before anything is allocated per layer.
Status checkPlausibleSizes(const Checkpoint& ckpt, const ModelConfig& cfg);

// checkPlausibleSizes, then that every tensor the config needs exists with the right shape: what
// loadWeights checks before it reads anything (no data read). For `coli doctor`. Errors: as
// loadWeights' checks (Malformed: implausible sizes, a wrong shape; NotFound: missing tensors).
Status checkCheckpointFits(const Checkpoint& ckpt, const ModelConfig& cfg);

// Checks that every tensor the config needs exists with the right shape, then reads them all.
// Errors: Malformed (checkPlausibleSizes), NotFound (missing tensors; the message counts them and
// lists the first 20 expected names), Malformed (a tensor
// with the wrong shape; the message names it with the expected and actual shapes), the read
// errors of Checkpoint (Io, Unsupported dtype), Cancelled when *cancel turns true.
// routedExperts false: the routed experts are checked (presence, shape) but not read, and
// ModelWeights::experts keeps empty matrices (the expert tiers stream them, tiers/).
Result<ModelWeights> loadWeights(const Checkpoint& ckpt, const ModelConfig& cfg,
                                 const WeightProgressFn& progress = {},
                                 const std::atomic<bool>* cancel = nullptr,
                                 bool routedExperts = true);

// Where one routed expert's gate, up and down projections lie in a checkpoint: per-expert
// tensors, or element ranges of a layer's stacked tensors (GraniteMoE input_linear /
// output_linear, transformers 5 gate_up_proj / down_proj). Shapes: gate, up [expert_ffn, d_model],
// down [d_model, expert_ffn]. Errors: NotFound / Malformed as loadWeights (a missing tensor, a
// wrong shape); InvalidArgument for a layer without experts or an expert out of range.
struct ExpertTensorRange {
    const TensorInfo* tensor = nullptr; // in the checkpoint
    int64_t firstElement = 0;           // row-major element offset inside the tensor
    int64_t count = 0;                  // elements (rows * cols)
    int rows = 0;
    int cols = 0;
};
Result<std::array<ExpertTensorRange, 3>>
locateExpert(const Checkpoint& ckpt, const ModelConfig& cfg, int layer, int expert);

// Counts and on-disk sizes for `coli info`, from the checkpoint's tensor table (no data read).
// Tensors are matched by the names of tensor_names.h; tensors the model does not use are ignored.
// All zero when checkPlausibleSizes fails (loadWeights then reports the error).
ModelSummary computeSummary(const Checkpoint& ckpt, const ModelConfig& cfg);

// The parts of a summary that follow from the config and the totals a reader has filled in
// (totalParams, expertBytes): expertsPerLayer, moeLayers, activeParams (everything but the
// routed experts not in the top-k of each MoE layer) and bytesPerExpert (expertBytes / routed
// experts). Shared by computeSummary and the container reader. Pure.
void finishSummary(const ModelConfig& cfg, ModelSummary& s);

} // namespace coli
