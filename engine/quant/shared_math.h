#pragma once
// Float arithmetic shared bit for bit by the CPU and the GPU tier's shaders
// (engine/gpu/shaders/common.glsl holds the GLSL twin of every function here: same operations,
// same order; change both or neither).
//
// Why it exists: Vulkan promises IEEE results only for +, - and * (with SPIR-V NoContraction);
// division may be 2.5 ulp off and exp 3 + 2|x| ulp. So everything an expert computes beyond the
// quantised products (quant/matmul.h) is written here with +, -, * and exact integer operations
// on the bits, and the CPU uses the same definitions. The one place the two sides differ on
// purpose: the CPU divides with its IEEE '/', the GPU with divRnBits, which the tests show to be
// the same function (tests/quant/test_shared_math.cpp).
//
// This file's .cpp is compiled with -ffp-contract=off and without -ffast-math (coli_quant), so
// every float operation below is one separately rounded IEEE binary32 operation on every CPU.
// Thread-safety: pure functions.
#include <cstdint>

namespace coli::quant {

// IEEE binary32 a / b, round to nearest even, computed on the bit patterns with 32-bit integer
// operations only (the GPU's division). Zeros, subnormals, infinities as IEEE; NaN results are
// 0x7fc00000. Returns the quotient's bits.
uint32_t divRnBits(uint32_t a, uint32_t b);

// Round to nearest integer, ties to even (std::nearbyint in the default mode), on the bits of a
// float; |result| saturates at 2^23. Subnormals and zeros give 0.
int32_t rneToInt(uint32_t bits);

// exp(x) from +, -, * and bit operations (Cody-Waite reduction with C1 = 355/512, then
// 1 + (r + r^2 P(r)) with the Taylor coefficients 1/2! .. 1/7!, then 2^k added to the exponent
// field). At most 1 ulp from the correctly rounded exp for |x| < 88 (measured over every float);
// |x| < 2^-25 gives 1, x < -88 gives 0, results below 2^-126 are 0 (never subnormal), x > 89
// gives +inf, NaN gives x.
float expShared(float x);

// silu(x) = x * s(x) with t = expShared(-|x|), s = 1 / (1 + t) when x's sign bit is clear, else
// t / (1 + t) (torch.nn.functional.silu up to rounding: at most 3 ulp from silu in double for
// |x| in [2^-26, 128)). The SwiGLU activation of every MLP on both forward paths.
float siluShared(float x);

// g[i] = siluShared(g[i]) * u[i] for i in [0, n): SwiGLU's activation of one row ([n] each), the
// same bits as that scalar loop; eight lanes at a time with AVX2 where the CPU has it. NaN lanes
// give a NaN (payload unspecified).
void siluMulRow(float* g, const float* u, int64_t n);

// The guard's predicates (bits of the operands and result of one float op): true when a device
// that flushes subnormals, or encodes inf/NaN differently, could give other bits. Exact zeros and
// exact cancellations are not flagged.
bool guardBadOperand(uint32_t a);
bool guardBadMul(uint32_t a, uint32_t b, uint32_t product);
bool guardBadAdd(float a, float b, float sum);

} // namespace coli::quant
