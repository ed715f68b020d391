#pragma once
// Internal: the two row phases every attention and MLP block of the Fast path starts and ends
// with (forward_fast.cpp, fast_mla.cpp), on the chunk's FastWorkspace.
#include "forward/fast_matmul.h"
#include "forward/fast_team.h"
#include "forward/kernels.h"
#include "forward/model_impl.h"

namespace coli {

// h[t] = rmsnorm(x[t]) * w for this thread's tokens, quantised into ws.qin for `mask`. With
// fewer tokens than threads (one at decode) every thread computes the token's factor (the same
// serial sum, rmsNormFactor) and scales and quantises its own whole groups of 64 columns, so no
// thread waits for one to do the whole row; the bytes are the same (groups are independent).
// The same into other buffers: h [n, d_model] and its quantised rows qr (the router lookahead's
// lookH / qlook).
inline void normShareInto(const Team& team, const FastWorkspace& ws, const ModelConfig& c,
                          const float* w, int n, int mask, float* h, QuantisedRows& qr) {
    const int d = c.dModel;
    const float* x = ws.x.data();
    if (n == 1 && team.size > 1 && d % 64 == 0) {
        const float r = rmsNormFactor(x, d, c.rmsNormEps);
        const auto [c0, c1] = team.shareBlocks(d, 64);
        for (int64_t i = c0; i < c1; ++i)
            h[i] = w[i] * (x[i] * r);
        if (mask && c1 > c0) qr.quantiseRowPart(mask, h, d, 0, int(c0), int(c1));
        return;
    }
    const auto [t0, t1] = team.share(n);
    for (int64_t t = t0; t < t1; ++t) {
        rmsNorm(x + size_t(t) * d, w, d, c.rmsNormEps, h + size_t(t) * d);
        if (mask) qr.quantiseRow(mask, h + size_t(t) * d, d, int(t));
    }
}

inline void normShare(const Team& team, FastWorkspace& ws, const ModelConfig& c, const float* w,
                      int n, int mask) {
    normShareInto(team, ws, c, w, n, mask, ws.h.data(), ws.qin);
}

// x[t, r0..r1) += y[t, r0..r1) * residual_multiplier for every token (this thread's rows).
inline void addResidualRows(FastWorkspace& ws, const ModelConfig& c, const float* y, int n,
                            int64_t r0, int64_t r1) {
    const int d = c.dModel;
    for (int t = 0; t < n; ++t)
        for (int64_t i = r0; i < r1; ++i)
            ws.x[size_t(t) * d + i] += y[size_t(t) * d + i] * c.residualMultiplier;
}

} // namespace coli
