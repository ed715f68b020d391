#pragma once
// Rotary position embedding, Hugging Face convention (modeling_llama.py rotate_half /
// apply_rotary_pos_emb; modeling_rope_utils.py for the inverse frequencies):
//   inv_freq[i] = theta^(-2i/d), i < d/2 (d = head_dim); scaled per config "rope_scaling";
//   angle = inv_freq[i] * pos (f32 product, as HF); pairs (i, i + d/2) rotate:
//   out[i] = x[i] cos - x[i+d/2] sin;  out[i+d/2] = x[i+d/2] cos + x[i] sin.
// Thread-safety: immutable after construction.
#include "core/status.h"
#include "model/config.h"

#include <vector>

namespace coli {

class Rope {
public:
    // Errors: Unsupported for a rope_scaling type other than none/linear/llama3.
    static Result<Rope> create(const ModelConfig& c);
    // cos/sin: [head_dim / 2] for position `pos`.
    void cosSin(int pos, float* cos, float* sin) const;
    // Rotates one head vector x [head_dim] in place with the tables from cosSin.
    static void apply(float* x, int headDim, const float* cos, const float* sin);
    int half() const { return static_cast<int>(m_invFreq.size()); }

private:
    std::vector<float> m_invFreq; // [head_dim / 2]
};

} // namespace coli
