#pragma once
// Quantised matrix-vector / small-batch matrix-matrix products on block-quantised weights
// (formats.h) and int8 activations quantised in the weights' groups:
//
//   y[t, r] = sum over groups g, in increasing g:  acc = acc + f32(idot(t, r, g)) * (ws[r,g] *
//   xs[t,g])
//
// with acc starting at +0.0f, idot the exact int32 dot product of the group's integer weights and
// activations (|idot| <= 64 * 128 * 128 < 2^31), and every f32 operation a separately rounded
// IEEE multiply or add (no FMA contraction: the library is built with -ffp-contract=off). That
// order is the definition; the scalar path computes it literally and the SIMD paths compute the
// integer dots with SIMD then apply the same float operations per (t, r) in the same order, so
// all paths give bit-identical y. (Same idea as the block-scaled dot products of llama.cpp's
// ggml Q8_0/Q4_0, with its own layout and order.)
#include <cstdint>

#include "core/status.h"
#include "quant/dispatch.h"
#include "quant/formats.h"

namespace coli::quant {

// Tokens processed per pass over the weights; larger batches are split into passes of this many.
constexpr int64_t kMaxBatch = 16;

// w: rows * rowBytes(fmt, cols) bytes (formats.h); x: nTokens activations quantised with the
// weights' group size and cols; y: [x.nTokens, rows] f32, y[t * rows + r].
// Parallel over output rows with OpenMP when the work is large enough; no allocation.
// Errors: InvalidArgument (cols / group mismatch, null pointers, rows < 0), Unsupported (path not
// available on this CPU). Thread-safety: pure; concurrent calls with distinct y are fine.
Status quantMatmul(WeightFormat fmt, const uint8_t* w, int64_t rows, int64_t cols,
                   const QuantisedActivations& x, float* y, KernelPath path = selectedKernelPath());

// Serial variant for callers that parallelise themselves (e.g. across experts, or one OpenMP
// region around many matrices): computes only output rows [r0, r1) of y (same y layout, same
// bits as quantMatmul), on the calling thread. Errors as quantMatmul, plus InvalidArgument when
// not 0 <= r0 <= r1 <= rows.
Status quantMatmulRows(WeightFormat fmt, const uint8_t* w, int64_t rows, int64_t cols,
                       const QuantisedActivations& x, float* y, int64_t r0, int64_t r1,
                       KernelPath path = selectedKernelPath());

// Integer part only, for tests: dots[t * rows * groups + r * groups + g] = idot(t, r, g) computed
// by `path`'s SIMD code. Same errors as quantMatmul.
Status quantGroupDots(WeightFormat fmt, const uint8_t* w, int64_t rows, int64_t cols,
                      const QuantisedActivations& x, int32_t* dots,
                      KernelPath path = selectedKernelPath());

} // namespace coli::quant
