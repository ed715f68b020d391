#version 450
// act[i] = silu(gate[i]) * up[i] (engine/forward/fast_ffn.cpp) with siluShared (common.glsl, the
// twin of engine/quant/shared_math.h), written over gate. GUARD flags the row's job when the two
// products meet or make a subnormal, an inf or a NaN (inside siluShared nothing can: its tests
// are on the bits and its results are normal or 0).
#extension GL_EXT_spirv_intrinsics : require
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) buffer GBuf { float gate[]; };          // [job, ffn]
layout(std430, set = 0, binding = 1) readonly buffer UBuf { float up[]; };    // [job, ffn]
layout(std430, set = 0, binding = 2) buffer FlagBuf { uint flags[]; };        // [job]
layout(push_constant) uniform PC { uint n, perRow; } pc; // n elements from 0, perRow = ffn

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= pc.n) return;
    float g = gate[i], u = up[i];
    float s = sigmoidShared(g);
    PRECISE float sg = g * s;
    PRECISE float v = sg * u;
#ifdef GUARD
    if (badOperand(floatBitsToUint(u)) ||
        badMul(floatBitsToUint(g), floatBitsToUint(s), floatBitsToUint(sg)) ||
        badMul(floatBitsToUint(sg), floatBitsToUint(u), floatBitsToUint(v)))
        atomicOr(flags[i / pc.perRow], 1u);
#endif
    gate[i] = v;
}
