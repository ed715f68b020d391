#pragma once
// Element conversions to f32. Exact: every F16 and BF16 value is representable in f32.
// F16: IEEE 754 binary16 (subnormals, inf, NaN preserved). BF16: the upper 16 bits of an f32.
// Thread-safety: pure functions.
#include <cstddef>
#include <cstdint>

namespace coli {

float f16ToF32(uint16_t h);
float bf16ToF32(uint16_t b);
void f16ToF32(const uint16_t* src, float* dst, size_t n);
void bf16ToF32(const uint16_t* src, float* dst, size_t n);

} // namespace coli
