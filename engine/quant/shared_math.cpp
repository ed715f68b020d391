#include "quant/shared_math.h"

#include <bit>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace coli::quant {

namespace {

uint32_t f2u(float f) {
    return std::bit_cast<uint32_t>(f);
}
float u2f(uint32_t u) {
    return std::bit_cast<float>(u);
}

// Position of the highest set bit (x != 0), as GLSL findMSB.
int msb(uint32_t x) {
    return 31 - __builtin_clz(x);
}

// Constants of expShared, written as bit patterns in the GLSL twin.
constexpr float kLog2e = 1.44269504088896341f; // 0x3fb8aa3b
constexpr float kC1 = 0.693359375f;            // 355/512, 0x3f318000: k * C1 exact for |k| < 2^15
constexpr float kC2 = -2.12194440e-4f;         // ln 2 - C1, 0xb95e8083
constexpr float kP0 = 0.5f;                    // 1/2!
constexpr float kP1 = 0.166666672f;            // 1/3!
constexpr float kP2 = 0.0416666679f;           // 1/4!
constexpr float kP3 = 0.00833333377f;          // 1/5!
constexpr float kP4 = 0.00138888892f;          // 1/6!
constexpr float kP5 = 0.000198412701f;         // 1/7!

} // namespace

uint32_t divRnBits(uint32_t ua, uint32_t ub) {
    const uint32_t sign = (ua ^ ub) & 0x80000000u;
    const uint32_t ea = (ua >> 23) & 0xffu, eb = (ub >> 23) & 0xffu;
    uint32_t ma = ua & 0x7fffffu, mb = ub & 0x7fffffu;
    if (ea == 255u) {
        if (ma != 0u || eb == 255u) return 0x7fc00000u;
        return sign | 0x7f800000u;
    }
    if (eb == 255u) {
        if (mb != 0u) return 0x7fc00000u;
        return sign;
    }
    if ((ub & 0x7fffffffu) == 0u) {
        if ((ua & 0x7fffffffu) == 0u) return 0x7fc00000u;
        return sign | 0x7f800000u;
    }
    if ((ua & 0x7fffffffu) == 0u) return sign;
    int xa = int(ea), xb = int(eb);
    if (ea == 0u) { // subnormal: normalise so that the leading one is bit 23
        const int s = msb(ma);
        ma <<= uint32_t(23 - s);
        xa = 1 - (23 - s);
    } else {
        ma |= 0x800000u;
    }
    if (eb == 0u) {
        const int s = msb(mb);
        mb <<= uint32_t(23 - s);
        xb = 1 - (23 - s);
    } else {
        mb |= 0x800000u;
    }
    int e = xa - xb + 127; // biased exponent of the quotient when ma >= mb
    if (ma < mb) {
        ma <<= 1;
        e -= 1;
    }
    // 1 <= ma / mb < 2: 24 quotient bits by restoring division (r < 2 mb < 2^25).
    uint32_t q = 0u, r = ma;
    for (int i = 0; i < 24; ++i) {
        q <<= 1;
        if (r >= mb) {
            r -= mb;
            q |= 1u;
        }
        r <<= 1;
    }
    if (e >= 255) return sign | 0x7f800000u;
    uint32_t shift = 0u;
    int E = e;
    if (e < 1) {
        shift = uint32_t(1 - e);
        E = 1;
    }
    uint32_t mant;
    bool roundBit, sticky;
    if (shift == 0u) {
        mant = q;
        roundBit = r >= mb;
        sticky = roundBit ? (r != mb) : (r != 0u);
    } else if (shift <= 24u) {
        mant = q >> shift;
        const uint32_t lost = q & ((1u << shift) - 1u);
        const uint32_t half = 1u << (shift - 1u);
        roundBit = lost >= half;
        sticky = (lost & (half - 1u)) != 0u || r != 0u;
    } else {
        return sign; // below half the smallest subnormal
    }
    if (roundBit && (sticky || (mant & 1u) != 0u)) mant += 1u;
    // Normal: ((E - 1) << 23) + mant (mant carries the implicit bit); subnormal: E = 1. A rounding
    // carry moves into the exponent (up to infinity) by itself.
    return sign | ((uint32_t(E - 1) << 23) + mant);
}

int32_t rneToInt(uint32_t u) {
    const uint32_t e = (u >> 23) & 0xffu;
    if (e < 126u) return 0; // |f| < 0.5
    uint32_t i;
    if (e >= 150u) {
        i = 0x800000u; // |f| >= 2^23: saturate
    } else {
        const uint32_t m = (u & 0x7fffffu) | 0x800000u;
        const uint32_t sh = 150u - e; // 1..24
        i = m >> sh;
        const uint32_t lost = m & ((1u << sh) - 1u);
        const uint32_t half = 1u << (sh - 1u);
        if (lost > half || (lost == half && (i & 1u) != 0u)) i += 1u;
    }
    return (u & 0x80000000u) != 0u ? -int32_t(i) : int32_t(i);
}

float expShared(float x) {
    const uint32_t ux = f2u(x);
    const uint32_t ax = ux & 0x7fffffffu;
    if (ax < 0x33000000u) return 1.0f;                     // |x| < 2^-25 (zeros and subnormals too)
    if (ax > 0x7f800000u) return x;                        // NaN
    if ((ux >> 31) != 0u && ax > 0x42b00000u) return 0.0f; // x < -88
    if ((ux >> 31) == 0u && ax > 0x42b20000u) return u2f(0x7f800000u); // x > 89
    const int32_t k = rneToInt(f2u(x * kLog2e));
    const float kf = float(k);
    const float r = (x - kf * kC1) - kf * kC2;
    const float poly = kP0 + r * (kP1 + r * (kP2 + r * (kP3 + r * (kP4 + r * kP5))));
    const float p = 1.0f + (r + (r * r) * poly);
    const uint32_t pb = f2u(p);
    const int32_t ex = int32_t((pb >> 23) & 0xffu) + k;
    if (ex <= 0) return 0.0f;
    if (ex >= 255) return u2f(0x7f800000u);
    return u2f((pb & 0x807fffffu) | (uint32_t(ex) << 23));
}

float siluShared(float x) {
    const float t = expShared(u2f(f2u(x) | 0x80000000u)); // exp(-|x|), in [0, 1]
    const float d = 1.0f + t;
    const float s = (f2u(x) >> 31) == 0u ? 1.0f / d : t / d;
    return x * s;
}

bool guardBadOperand(uint32_t a) {
    const uint32_t e = (a >> 23) & 0xffu;
    return (a & 0x7fffffffu) != 0u && (e == 0u || e == 255u);
}

bool guardBadMul(uint32_t a, uint32_t b, uint32_t p) {
    if (guardBadOperand(a) || guardBadOperand(b)) return true;
    if ((a & 0x7fffffffu) == 0u || (b & 0x7fffffffu) == 0u) return false; // exact zero product
    const uint32_t e = (p >> 23) & 0xffu;
    return e == 0u || e == 255u; // underflow (subnormal, or flushed to 0) or overflow
}

bool guardBadAdd(float a, float b, float s) {
    const uint32_t sb = f2u(s);
    const uint32_t e = (sb >> 23) & 0xffu;
    if (e == 255u) return true;
    if (e != 0u) return false;
    if ((sb & 0x7fffffffu) != 0u) return true; // subnormal sum
    return !(a == -b); // a zero sum that is not an exact cancellation: a flushed subnormal
}

namespace {

#if defined(__x86_64__)
// siluShared on eight lanes: the same operations in the same order as expShared and siluShared,
// the branches as lane masks. rneToInt is VCVTPS2DQ (round to nearest even, the default MXCSR
// mode, which nothing in this program changes): the same integer for |x * log2 e| <= 128, the
// only lanes whose k is used.
__attribute__((target("avx2"))) __m256 silu8(__m256 x) {
    const __m256i ux = _mm256_castps_si256(x);
    const __m256i ax = _mm256_and_si256(ux, _mm256_set1_epi32(0x7fffffff));
    const __m256 v = _mm256_castsi256_ps(_mm256_or_si256(ux, _mm256_set1_epi32(int(0x80000000u))));
    // expShared(v), v = -|x|.
    const __m256i k = _mm256_cvtps_epi32(_mm256_mul_ps(v, _mm256_set1_ps(kLog2e)));
    const __m256 kf = _mm256_cvtepi32_ps(k);
    const __m256 r = _mm256_sub_ps(_mm256_sub_ps(v, _mm256_mul_ps(kf, _mm256_set1_ps(kC1))),
                                   _mm256_mul_ps(kf, _mm256_set1_ps(kC2)));
    __m256 poly = _mm256_add_ps(_mm256_set1_ps(kP4), _mm256_mul_ps(r, _mm256_set1_ps(kP5)));
    poly = _mm256_add_ps(_mm256_set1_ps(kP3), _mm256_mul_ps(r, poly));
    poly = _mm256_add_ps(_mm256_set1_ps(kP2), _mm256_mul_ps(r, poly));
    poly = _mm256_add_ps(_mm256_set1_ps(kP1), _mm256_mul_ps(r, poly));
    poly = _mm256_add_ps(_mm256_set1_ps(kP0), _mm256_mul_ps(r, poly));
    const __m256 p = _mm256_add_ps(_mm256_set1_ps(1.0f),
                                   _mm256_add_ps(r, _mm256_mul_ps(_mm256_mul_ps(r, r), poly)));
    const __m256i pb = _mm256_castps_si256(p);
    const __m256i ex =
        _mm256_add_epi32(_mm256_and_si256(_mm256_srli_epi32(pb, 23), _mm256_set1_epi32(0xff)), k);
    __m256 t = _mm256_castsi256_ps(_mm256_or_si256(
        _mm256_and_si256(pb, _mm256_set1_epi32(int(0x807fffffu))), _mm256_slli_epi32(ex, 23)));
    // ex <= 0 or x < -88 (v below -88: ax > 0x42b00000, NaN excluded next): 0. (ex >= 255 needs
    // v > 88, impossible here.)
    const __m256i under = _mm256_or_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(1), ex),
                                          _mm256_cmpgt_epi32(ax, _mm256_set1_epi32(0x42b00000)));
    t = _mm256_andnot_ps(_mm256_castsi256_ps(under), t);
    // NaN: v itself; |x| < 2^-25: 1 (checked last, so it wins as in expShared).
    const __m256i nan = _mm256_cmpgt_epi32(ax, _mm256_set1_epi32(0x7f800000));
    t = _mm256_blendv_ps(t, v, _mm256_castsi256_ps(nan));
    const __m256i tiny = _mm256_cmpgt_epi32(_mm256_set1_epi32(0x33000000), ax);
    t = _mm256_blendv_ps(t, _mm256_set1_ps(1.0f), _mm256_castsi256_ps(tiny));
    // siluShared: s = 1 / (1 + t) for a clear sign bit, else t / (1 + t); x * s.
    const __m256 d = _mm256_add_ps(_mm256_set1_ps(1.0f), t);
    const __m256 s =
        _mm256_blendv_ps(_mm256_div_ps(_mm256_set1_ps(1.0f), d), _mm256_div_ps(t, d), x);
    return _mm256_mul_ps(x, s);
}

__attribute__((target("avx2"))) void siluMulRowAvx2(float* g, const float* u, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(g + i,
                         _mm256_mul_ps(silu8(_mm256_loadu_ps(g + i)), _mm256_loadu_ps(u + i)));
    for (; i < n; ++i)
        g[i] = siluShared(g[i]) * u[i];
}
#endif

} // namespace

void siluMulRow(float* g, const float* u, int64_t n) {
#if defined(__x86_64__)
    static const bool avx2 = __builtin_cpu_supports("avx2");
    if (avx2) return siluMulRowAvx2(g, u, n);
#endif
    for (int64_t i = 0; i < n; ++i)
        g[i] = siluShared(g[i]) * u[i];
}

} // namespace coli::quant
