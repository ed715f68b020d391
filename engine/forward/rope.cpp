#include "forward/rope.h"

#include <cmath>

namespace coli {

Result<Rope> Rope::create(const ModelConfig& c) {
    Rope r;
    const int half = c.headDim / 2;
    r.m_invFreq.resize(half);
    for (int i = 0; i < half; ++i) {
        // HF: 1 / base ** (arange(0, d, 2) / d)
        r.m_invFreq[i] = static_cast<float>(
            1.0 / std::pow(double(c.ropeTheta), double(2 * i) / double(c.headDim)));
    }
    const RopeScaling& s = c.ropeScaling;
    if (s.type.empty()) return r;
    if (s.type == "linear") {
        // _compute_linear_scaling_rope_parameters: inv_freq / factor
        for (float& f : r.m_invFreq)
            f /= s.factor;
        return r;
    }
    if (s.type == "llama3") {
        // _compute_llama3_parameters: long wavelengths divided by factor, short kept, smooth
        // interpolation between.
        const double oldCtx = s.originalMaxPositionEmbeddings;
        const double lowWavelen = oldCtx / s.lowFreqFactor;
        const double highWavelen = oldCtx / s.highFreqFactor;
        for (float& f : r.m_invFreq) {
            const double wavelen = 2.0 * M_PI / f;
            double out = f;
            if (wavelen > lowWavelen) {
                out = f / s.factor;
            } else if (!(wavelen < highWavelen)) {
                const double smooth =
                    (oldCtx / wavelen - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
                out = (1.0 - smooth) * f / s.factor + smooth * f;
            }
            f = static_cast<float>(out);
        }
        return r;
    }
    return Status(ErrorCode::Unsupported,
                  "config.json: rope_scaling type '" + s.type + "' is not supported");
}

void Rope::cosSin(int pos, float* cos, float* sin) const {
    const float p = static_cast<float>(pos);
    for (size_t i = 0; i < m_invFreq.size(); ++i) {
        const float angle = m_invFreq[i] * p; // f32 product like HF's inv_freq @ position_ids
        cos[i] = static_cast<float>(std::cos(double(angle)));
        sin[i] = static_cast<float>(std::sin(double(angle)));
    }
}

void Rope::apply(float* x, int headDim, const float* cos, const float* sin) {
    const int half = headDim / 2;
    for (int i = 0; i < half; ++i) {
        const float x1 = x[i], x2 = x[i + half];
        x[i] = x1 * cos[i] - x2 * sin[i];
        x[i + half] = x2 * cos[i] + x1 * sin[i];
    }
}

} // namespace coli
