#pragma once
// Rotary position embedding, Hugging Face convention (modeling_llama.py rotate_half /
// apply_rotary_pos_emb; modeling_rope_utils.py for the inverse frequencies):
//   inv_freq[i] = theta^(-2i/d), i < d/2 (d = head_dim); scaled per config "rope_scaling";
//   angle = inv_freq[i] * pos (f32 product, as HF); pairs (i, i + d/2) rotate:
//   out[i] = x[i] cos - x[i+d/2] sin;  out[i+d/2] = x[i+d/2] cos + x[i] sin.
// d = ModelConfig::ropeDim() (qk_rope_head_dim with MLA). DeepSeek rotates interleaved pairs
// (2i, 2i+1) instead (applyPairs; modeling_deepseek_v2.py apply_rotary_emb's complex form, V3's
// rope_interleave). YaRN (_compute_yarn_parameters) blends interpolated and extrapolated
// frequencies and multiplies cos and sin by its attention factor (f32 product, as HF).
// Thread-safety: immutable after construction.
#include "core/status.h"
#include "model/config.h"

#include <vector>

namespace coli {

class Rope {
public:
    // Errors: Unsupported for a rope_scaling type other than none/linear/llama3/yarn.
    static Result<Rope> create(const ModelConfig& c);
    // cos/sin: [d / 2] for position `pos` (times the yarn attention factor).
    void cosSin(int pos, float* cos, float* sin) const;
    // Rotates one head vector x [d] in place with the tables from cosSin: pairs (i, i + d/2).
    static void apply(float* x, int headDim, const float* cos, const float* sin);
    // The same with pairs (2i, 2i+1): out[2i] = x[2i] cos - x[2i+1] sin,
    // out[2i+1] = x[2i+1] cos + x[2i] sin.
    static void applyPairs(float* x, int d, const float* cos, const float* sin);
    // applyPairs when interleavedPairs (MlaConfig::ropeInterleave), else apply.
    static void rotate(float* x, int d, const float* cos, const float* sin, bool interleavedPairs) {
        if (interleavedPairs)
            applyPairs(x, d, cos, sin);
        else
            apply(x, d, cos, sin);
    }
    int half() const { return static_cast<int>(m_invFreq.size()); }

private:
    std::vector<float> m_invFreq; // [d / 2]
    float m_attentionFactor = 1.0f;
};

} // namespace coli
