#version 450
// The activation quantiser (engine/quant/formats.cpp, quantiseActivationRow), restated on the
// bits for one (row, group) per invocation: amax = max |x| (integer max of the bits),
// scale = amax / 127 (divRnBits), q = clamp(rne(x / scale), -127, 127) (rneToInt, divRnBits),
// packed four int8 per uint. Non-finite inputs were flagged by the SwiGLU stage already.
#extension GL_EXT_spirv_intrinsics : require
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer XBuf { float x[]; };   // [row, cols]
layout(std430, set = 0, binding = 1) writeonly buffer XqBuf { uint xq[]; }; // [row, cols] int8
layout(std430, set = 0, binding = 2) writeonly buffer XsBuf { float xs[]; }; // [row, cols / G]
layout(push_constant) uniform PC { uint cols, nRows, G; } pc;

void main() {
    uint groups = pc.cols / pc.G;
    uint id = gl_GlobalInvocationID.x;
    if (id >= groups * pc.nRows) return;
    uint t = id / groups, g = id % groups;
    uint base = t * pc.cols + g * pc.G;
    uint amax = 0u;
    for (uint i = 0u; i < pc.G; ++i) amax = max(amax, floatBitsToUint(x[base + i]) & 0x7fffffffu);
    uint s = divRnBits(amax, 0x42fe0000u); // 127.0f
    xs[id] = uintBitsToFloat(s);
    for (uint i = 0u; i < pc.G; i += 4u) {
        uint word = 0u;
        for (uint k = 0u; k < 4u; ++k) {
            int v = 0;
            if (s != 0u) v = clamp(rneToInt(divRnBits(floatBitsToUint(x[base + i + k]), s)), -127, 127);
            word |= (uint(v) & 0xffu) << (8u * k);
        }
        xq[(base + i) >> 2] = word;
    }
}
