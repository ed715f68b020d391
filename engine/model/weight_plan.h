#pragma once
// The list of tensors a config needs and where each one goes in ModelWeights: the one place that
// knows the families' optional parts (biases, q/k norms, shared experts, dense layers, tied LM
// head). Both readers walk it: the Hugging Face checkpoint reader (model/weights.cpp, which maps
// a routed expert to per-expert or stacked tensors) and the colibri container reader
// (convert/container_weights.h, which reads one expert blob per routed expert).
// Thread-safety: planWeights is pure apart from resizing the ModelWeights it is given.
#include "model/config.h"
#include "model/tensor_names.h"
#include "model/weights.h"

#include <cstdint>
#include <string>
#include <vector>

namespace coli {

enum class SlotKind {
    Vector, // 1-D f32 (norms, biases): `vec`
    Matrix, // 2-D (attention, router, shared / dense MLPs, embeddings, LM head): `matrix`
    Expert, // one routed expert's gate, up and down (SwiGLU): `mlp`
};

struct WeightSlot {
    SlotKind what = SlotKind::Vector;
    TensorKind kind = TensorKind::Embed; // Vector / Matrix: the tensor's kind; Expert: ExpertGate
    int layer = -1;                      // -1 for the layer-less tensors (embed, final norm, head)
    int expert = -1;                     // Expert slots: the expert index; -1 otherwise
    std::string name; // tensorName(family, kind, layer); empty for Expert slots, whose tensors
                      // depend on the storage (per-expert, stacked, or a container blob)
    std::vector<int64_t> shape; // Vector [n]; Matrix [rows, cols]; Expert [expert_ffn, d_model]
                                // (gate and up; down is the transpose shape)
    // Destinations inside the ModelWeights given to planWeights; null when planning only.
    std::vector<float>* vec = nullptr;
    Matrix* matrix = nullptr;
    SwiGluWeights* mlp = nullptr;
};

// Every tensor `cfg` needs, in load order: embedding, final norm, LM head (absent when tied: HF
// ties lm_head.weight to embed_tokens.weight and ignores a stored copy), then layer by layer:
// norms, attention (+ biases, q/k norms as the config says), then either the dense MLP or the
// router, shared expert (+ its gate) and the routed experts 0..n_experts-1.
// With `w` non-null, also sizes w->layers / w->experts, sets LayerWeights::sparse and points the
// slots at their destinations (the destinations stay empty: the readers fill them).
// Preconditions: cfg came from parseConfig (sizes bounded); callers with untrusted sizes run
// checkPlausibleSizes (or the container's equivalent) first, since the plan is O(layers x experts).
std::vector<WeightSlot> planWeights(const ModelConfig& cfg, ModelWeights* w);

// Elements of the slot's tensors (an Expert slot: gate + up + down).
int64_t slotParams(const WeightSlot& s);

// "[1, 2, 3]" for error messages.
std::string shapeString(const std::vector<int64_t>& s);

} // namespace coli
