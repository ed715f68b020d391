#pragma once
// Internal: the two row phases every attention and MLP block of the Fast path starts and ends
// with (forward_fast.cpp, fast_mla.cpp), on the chunk's FastWorkspace.
#include "forward/fast_matmul.h"
#include "forward/fast_team.h"
#include "forward/kernels.h"
#include "forward/model_impl.h"

namespace coli {

// h[t] = rmsnorm(x[t]) * w for this thread's tokens, quantised into ws.qin for `mask`.
inline void normShare(const Team& team, FastWorkspace& ws, const ModelConfig& c, const float* w,
                      int n, int mask) {
    const int d = c.dModel;
    const auto [t0, t1] = team.share(n);
    for (int64_t t = t0; t < t1; ++t) {
        rmsNorm(ws.x.data() + size_t(t) * d, w, d, c.rmsNormEps, ws.h.data() + size_t(t) * d);
        if (mask) ws.qin.quantiseRow(mask, ws.h.data() + size_t(t) * d, d, int(t));
    }
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
