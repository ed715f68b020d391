#include "io/dtype.h"

#include <bit>
#include <cstring>

namespace coli {

// IEEE 754 binary16: 1 sign bit, 5 exponent bits (bias 15), 10 mantissa bits.
// Every binary16 value is exactly representable in binary32, so no rounding happens here.
float f16ToF32(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1Fu;
    const uint32_t mant = h & 0x3FFu;
    uint32_t bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign; // +-0
        } else {
            // Subnormal: mant * 2^-24. Normalise: shift the mantissa up until its leading 1 reaches
            // bit 10, lowering the exponent once per shift.
            uint32_t m = mant;
            int32_t e = -14; // exponent of a subnormal's implicit 0.xxx is 2^-14
            while ((m & 0x400u) == 0) {
                m <<= 1;
                --e;
            }
            m &= 0x3FFu;
            bits = sign | uint32_t(e + 127) << 23 | m << 13;
        }
    } else if (exp == 31) {
        bits = sign | 0x7F800000u | mant << 13; // inf (mant 0) or NaN with its payload kept
    } else {
        bits = sign | (exp - 15 + 127) << 23 | mant << 13;
    }
    return std::bit_cast<float>(bits);
}

// bfloat16 is the upper half of a binary32.
float bf16ToF32(uint16_t b) {
    return std::bit_cast<float>(uint32_t(b) << 16);
}

void f16ToF32(const uint16_t* src, float* dst, size_t n) {
    for (size_t i = 0; i < n; ++i)
        dst[i] = f16ToF32(src[i]);
}

void bf16ToF32(const uint16_t* src, float* dst, size_t n) {
    for (size_t i = 0; i < n; ++i)
        dst[i] = bf16ToF32(src[i]);
}

} // namespace coli
