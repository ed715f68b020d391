#include "forward/rope.h"

#include <algorithm>
#include <cmath>

namespace coli {

namespace {

// _compute_yarn_parameters: frequencies whose wavelength fits the original context
// (original_max_position_embeddings) many times are kept (extrapolated), those of long
// wavelengths divided by `factor` (interpolated), with a linear ramp between the correction
// dimensions given by beta_fast and beta_slow rotations.
void yarn(const ModelConfig& c, std::vector<float>& invFreq) {
    const RopeScaling& s = c.ropeScaling;
    const double dim = c.ropeDim(), base = c.ropeTheta, ctx = s.originalMaxPositionEmbeddings;
    auto correctionDim = [&](double rotations) {
        return dim * std::log(ctx / (rotations * 2.0 * M_PI)) / (2.0 * std::log(base));
    };
    double low = correctionDim(s.betaFast), high = correctionDim(s.betaSlow);
    if (s.truncate) {
        low = std::floor(low);
        high = std::ceil(high);
    }
    low = std::max(low, 0.0);
    high = std::min(high, dim - 1);
    if (low == high) high += 0.001; // linear_ramp_factor: avoid a division by zero
    for (size_t i = 0; i < invFreq.size(); ++i) {
        const double extrapolated = invFreq[i];
        const double interpolated = extrapolated / s.factor;
        const double ramp = std::clamp((double(i) - low) / (high - low), 0.0, 1.0);
        const double keep = 1.0 - ramp; // inv_freq_extrapolation_factor
        invFreq[i] = static_cast<float>(interpolated * (1.0 - keep) + extrapolated * keep);
    }
}

} // namespace

Result<Rope> Rope::create(const ModelConfig& c) {
    Rope r;
    const int dim = c.ropeDim(), half = dim / 2;
    r.m_invFreq.resize(half);
    for (int i = 0; i < half; ++i) {
        // HF: 1 / base ** (arange(0, d, 2) / d)
        r.m_invFreq[i] =
            static_cast<float>(1.0 / std::pow(double(c.ropeTheta), double(2 * i) / double(dim)));
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
    if (s.type == "yarn") {
        yarn(c, r.m_invFreq);
        r.m_attentionFactor = s.attentionFactor;
        return r;
    }
    return Status(ErrorCode::Unsupported,
                  "config.json: rope_scaling type '" + s.type + "' is not supported");
}

void Rope::cosSin(int pos, float* cos, float* sin) const {
    const float p = static_cast<float>(pos);
    for (size_t i = 0; i < m_invFreq.size(); ++i) {
        const float angle = m_invFreq[i] * p; // f32 product like HF's inv_freq @ position_ids
        cos[i] = static_cast<float>(std::cos(double(angle))) * m_attentionFactor;
        sin[i] = static_cast<float>(std::sin(double(angle))) * m_attentionFactor;
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

void Rope::applyPairs(float* x, int d, const float* cos, const float* sin) {
    for (int i = 0; i < d / 2; ++i) {
        const float x1 = x[2 * i], x2 = x[2 * i + 1];
        x[2 * i] = x1 * cos[i] - x2 * sin[i];
        x[2 * i + 1] = x2 * cos[i] + x1 * sin[i];
    }
}

} // namespace coli
