// GLSL twin of engine/quant/shared_math.h: same functions, same operations, same order (the tests
// in tests/gpu compare them bit for bit, and the self-test does so at load on every device).
// Every float temporary is `precise` (SPIR-V NoContraction: no fusion into FMA, no reassociation);
// constants are given as bit patterns so that no literal parsing can change them; division and
// float->int rounding are integer code on the bits; branch conditions are tested on the bits.
#define PRECISE precise

// Float-controls execution modes (SPV_KHR_float_controls, core in Vulkan 1.2). The host only
// loads a variant whose modes the device reports as supported (gpu/shader_set.h).
#ifdef FC_RTE // RoundingModeRTE for 32-bit floats (needs shaderRoundingModeRTEFloat32)
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4467], 4462, 32);
#endif
#ifdef FC_SZ // SignedZeroInfNanPreserve for 32-bit (needs shaderSignedZeroInfNanPreserveFloat32)
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4466], 4461, 32);
#endif
#ifdef FC_DENORM // DenormPreserve for 32-bit (needs shaderDenormPreserveFloat32)
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4464], 4459, 32);
#endif

uint divRnBits(uint ua, uint ub) {
    uint sign = (ua ^ ub) & 0x80000000u;
    uint ea = (ua >> 23) & 0xffu, eb = (ub >> 23) & 0xffu;
    uint ma = ua & 0x7fffffu, mb = ub & 0x7fffffu;
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
    if (ea == 0u) {
        int s = findMSB(ma);
        ma <<= uint(23 - s);
        xa = 1 - (23 - s);
    } else {
        ma |= 0x800000u;
    }
    if (eb == 0u) {
        int s = findMSB(mb);
        mb <<= uint(23 - s);
        xb = 1 - (23 - s);
    } else {
        mb |= 0x800000u;
    }
    int e = xa - xb + 127;
    if (ma < mb) {
        ma <<= 1;
        e -= 1;
    }
    uint q = 0u, r = ma;
    for (int i = 0; i < 24; ++i) {
        q <<= 1;
        if (r >= mb) {
            r -= mb;
            q |= 1u;
        }
        r <<= 1;
    }
    if (e >= 255) return sign | 0x7f800000u;
    uint shift = 0u;
    int E = e;
    if (e < 1) {
        shift = uint(1 - e);
        E = 1;
    }
    uint mant;
    bool rb, st;
    if (shift == 0u) {
        mant = q;
        rb = r >= mb;
        st = rb ? (r != mb) : (r != 0u);
    } else if (shift <= 24u) {
        mant = q >> shift;
        uint lost = q & ((1u << shift) - 1u);
        uint half_ = 1u << (shift - 1u);
        rb = lost >= half_;
        st = (lost & (half_ - 1u)) != 0u || r != 0u;
    } else {
        return sign;
    }
    if (rb && (st || (mant & 1u) != 0u)) mant += 1u;
    return sign | ((uint(E - 1) << 23) + mant);
}

int rneToInt(uint u) {
    uint e = (u >> 23) & 0xffu;
    if (e < 126u) return 0;
    uint i;
    if (e >= 150u) {
        i = 0x800000u;
    } else {
        uint m = (u & 0x7fffffu) | 0x800000u;
        uint sh = 150u - e;
        i = m >> sh;
        uint lost = m & ((1u << sh) - 1u);
        uint half_ = 1u << (sh - 1u);
        if (lost > half_ || (lost == half_ && (i & 1u) != 0u)) i += 1u;
    }
    return (u & 0x80000000u) != 0u ? -int(i) : int(i);
}

#define K_LOG2E uintBitsToFloat(0x3fb8aa3bu)
#define K_C1 uintBitsToFloat(0x3f318000u)
#define K_C2 uintBitsToFloat(0xb95e8083u)
#define K_P0 uintBitsToFloat(0x3f000000u)
#define K_P1 uintBitsToFloat(0x3e2aaaabu)
#define K_P2 uintBitsToFloat(0x3d2aaaabu)
#define K_P3 uintBitsToFloat(0x3c088889u)
#define K_P4 uintBitsToFloat(0x3ab60b61u)
#define K_P5 uintBitsToFloat(0x39500d01u)

float expShared(float x) {
    uint ux = floatBitsToUint(x);
    uint ax = ux & 0x7fffffffu;
    if (ax < 0x33000000u) return 1.0;
    if (ax > 0x7f800000u) return x;
    if ((ux >> 31) != 0u && ax > 0x42b00000u) return 0.0;
    if ((ux >> 31) == 0u && ax > 0x42b20000u) return uintBitsToFloat(0x7f800000u);
    PRECISE float xl = x * K_LOG2E;
    int k = rneToInt(floatBitsToUint(xl));
    float kf = float(k);
    PRECISE float r = (x - kf * K_C1) - kf * K_C2;
    PRECISE float poly = K_P0 + r * (K_P1 + r * (K_P2 + r * (K_P3 + r * (K_P4 + r * K_P5))));
    PRECISE float p = 1.0 + (r + (r * r) * poly);
    uint pb = floatBitsToUint(p);
    int ex = int((pb >> 23) & 0xffu) + k;
    if (ex <= 0) return 0.0;
    if (ex >= 255) return uintBitsToFloat(0x7f800000u);
    return uintBitsToFloat((pb & 0x807fffffu) | (uint(ex) << 23));
}

// sigmoid(x) with t = exp(-|x|): x >= 0 (sign bit clear): 1 / (1 + t); x < 0: t / (1 + t).
float sigmoidShared(float x) {
    float t = expShared(uintBitsToFloat(floatBitsToUint(x) | 0x80000000u));
    PRECISE float d = 1.0 + t;
    return (floatBitsToUint(x) >> 31) == 0u ? uintBitsToFloat(divRnBits(0x3f800000u, floatBitsToUint(d)))
                                            : uintBitsToFloat(divRnBits(floatBitsToUint(t), floatBitsToUint(d)));
}

float siluShared(float x) {
    float s = sigmoidShared(x);
    PRECISE float y = x * s;
    return y;
}

// Guard predicates for devices without DenormPreserve (and as a net for overflow): true when an
// IEEE op on these operands could have met or made a subnormal, an infinity or a NaN, i.e. when a
// driver's flush-to-zero (or inf/NaN encoding) could make the GPU bits differ from the CPU's.
// Integer tests on the bits only, so flushing cannot hide them.
bool badOperand(uint a) {
    uint e = (a >> 23) & 0xffu;
    return (a & 0x7fffffffu) != 0u && (e == 0u || e == 255u);
}
bool badMul(uint a, uint b, uint p) {
    if (badOperand(a) || badOperand(b)) return true;
    if ((a & 0x7fffffffu) == 0u || (b & 0x7fffffffu) == 0u) return false; // exact zero product
    uint e = (p >> 23) & 0xffu;
    return e == 0u || e == 255u; // underflow (subnormal, or flushed to 0) or overflow
}
bool badAdd(float a, float b, float s) {
    uint sb = floatBitsToUint(s);
    uint e = (sb >> 23) & 0xffu;
    if (e == 255u) return true;
    if (e != 0u) return false;
    if ((sb & 0x7fffffffu) != 0u) return true; // subnormal sum
    return !(a == -b); // zero sum that is not an exact cancellation: a flushed subnormal
}
