#pragma once
// Small numeric kernels shared by the Reference and Fast forward paths. All f32.
// Thread-safety: pure functions.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace coli {

// RMSNorm (HF *RMSNorm.forward): out[i] = w[i] * (x[i] * rsqrt(mean(x^2) + eps)). x, w, out: [n].
// out may alias x. The sum of squares runs in index order.
void rmsNorm(const float* x, const float* w, int n, float eps, float* out);
// RMSNorm's factor rsqrt(mean(x^2) + eps) alone, computed exactly as rmsNorm computes it (rmsNorm
// calls it), so that threads can each scale a part of a row: out[i] = w[i] * (x[i] * factor).
float rmsNormFactor(const float* x, int n, float eps);

// silu(x) = x * sigmoid(x) (torch.nn.functional.silu), computed as quant::siluShared: an exp
// built from +, -, * and bit operations, so that the GPU tier reproduces it bit for bit
// (quant/shared_math.h; within 3 ulp of silu in double).
float silu(float x);
// sigmoid(x) = 1 / (1 + exp(-x)) with the C library's expf (the shared-expert gate, the
// sigmoid router: CPU only).
float sigmoid(float x);

// In-place softmax over x[0..n): exp(x - max) / sum, sums in index order.
void softmax(float* x, int n);

// Indices of the k largest values of x[0..n) in descending order of value; ties -> lower index
// first (a total order, so the result never depends on the sort algorithm). out: [k].
void topK(const float* x, int n, int k, int* out);

// Dot product in plain index order, accumulated in double and rounded once (the Reference path:
// the oracle is kept as close to exact as is cheap, so Fast-vs-Reference differences measure the
// Fast path's own f32 rounding).
float dotReference(const float* a, const float* b, int n);

// Dot product with 8 interleaved partial sums combined in a fixed order (the Fast path): the
// order depends only on n, never on threads, so results are reproducible bit for bit.
float dotFast(const float* a, const float* b, int n);
// dotFast's result, bit for bit, while prefetching what lies 1 KiB (into L1) and 3 KiB (into L2)
// past each part of `a` it reads: for a matrix whose rows follow one another (the f32 router),
// the rest of this row and the start of the next. Addresses past `a` are prefetched only, never
// dereferenced (a prefetch does not fault).
float dotFastAhead(const float* a, const float* b, int n);
// out[r] = dotFast(a + r * stride, b, n) for r = 0..3, bit for bit, the four rows read together
// and prefetched as dotFastAhead prefetches one (stride in floats). out: [4].
void dotFastRows4(const float* a, size_t stride, const float* b, int n, float* out);

} // namespace coli
