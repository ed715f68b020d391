#version 450
// Quantised matrix products of a batch of routed experts (engine/quant/matmul.h, restated):
//   y[j, r] = sum over groups g in increasing order: acc = acc + f32(idot(j, r, g)) * (ws[r,g] * xs[j,g])
// for every job j (one (expert, token) pair of the layer), acc starting at +0.0.
// Layout: 64 invocations per workgroup own RPW rows of one job (gl_WorkGroupID.y). The integer
// group dots and the two products of each group are computed in parallel, CHUNK groups at a time,
// into shared memory; then one invocation per row adds that chunk's terms to its accumulator in
// increasing group order. So every row's float adds happen in one invocation, in the CPU's order.
// REVERSED (test only) adds the groups in decreasing order: the self-test must reject it.
// GUARD flags a job when a float op met or made a subnormal, an inf or a NaN (common.glsl).
#extension GL_EXT_spirv_intrinsics : require
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#define RPW 16u   // rows per workgroup
#define CHUNK 64u // groups per pass through shared memory

layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer WBuf { uint w[]; };      // weights arena
layout(std430, set = 0, binding = 1) readonly buffer XqBuf { uint xq[]; };    // int8 rows, packed
layout(std430, set = 0, binding = 2) readonly buffer XsBuf { float xs[]; };   // [row, cols / G]
layout(std430, set = 0, binding = 3) writeonly buffer YBuf { float y[]; };    // [job, rows]
layout(std430, set = 0, binding = 4) buffer FlagBuf { uint flags[]; };        // [job]
layout(std430, set = 0, binding = 5) readonly buffer JobBuf { uint jobs[]; }; // [job, 4]
layout(push_constant) uniform PC {
    uint rows, cols, G, bits;
    uint tiled;      // 1: the -r8 layout (tiles of 8 rows), 0: rows back to back (formats.h)
    uint weightSlot; // which word offset of the job record: 0 gate, 1 up, 2 down
    uint inputByJob; // 1: input row = job index (down: the job's own act), 0: the job's x row
    uint jobBase;    // first job of this dispatch (jobs of one weights buffer are consecutive)
} pc;

shared float terms[RPW * CHUNK];
shared uint anyBad;

uint blockBytes() { return 4u + pc.G * pc.bits / 8u; }
uint rowBytes() { return (pc.cols / pc.G) * blockBytes(); }

// Word index of row r's group-g scale and of its first value word (formats.h rowBlocks).
uvec2 blockWords(uint base, uint r, uint g) {
    if (pc.tiled == 0u) {
        uint b = base + (r * rowBytes() + g * blockBytes()) / 4u;
        return uvec2(b, b + 1u);
    }
    uint tile = base + ((r / 8u) * 8u * rowBytes() + g * 8u * blockBytes()) / 4u;
    uint i = r % 8u;
    return uvec2(tile + i, tile + 8u + i * ((blockBytes() - 4u) / 4u));
}

int wval(uint valuesWord, uint i) {
    if (pc.bits == 8u) return bitfieldExtract(int(w[valuesWord + (i >> 2)]), int((i & 3u) * 8u), 8);
    return bitfieldExtract(int(w[valuesWord + (i >> 3)]), int((i & 7u) * 4u), 4);
}
int xval(uint xrow, uint c) {
    uint idx = xrow * pc.cols + c;
    return bitfieldExtract(int(xq[idx >> 2]), int((idx & 3u) * 8u), 8);
}

void main() {
    uint lid = gl_LocalInvocationID.x, j = pc.jobBase + gl_WorkGroupID.y, r0 = gl_WorkGroupID.x * RPW;
    uint base = jobs[j * 4u + pc.weightSlot];
    uint xrow = pc.inputByJob != 0u ? j : jobs[j * 4u + 3u];
    uint groups = pc.cols / pc.G;
    if (lid == 0u) anyBad = 0u;
    PRECISE float acc = 0.0;
    bool bad = false;
    uint nChunks = (groups + CHUNK - 1u) / CHUNK;
    for (uint cc = 0u; cc < nChunks; ++cc) {
#ifdef REVERSED
        uint c = nChunks - 1u - cc;
#else
        uint c = cc;
#endif
        uint g0 = c * CHUNK, ng = min(CHUNK, groups - g0);
        barrier(); // the previous chunk's terms are consumed
        for (uint idx = lid; idx < RPW * ng; idx += 64u) {
            uint r = r0 + idx / ng, g = g0 + idx % ng;
            if (r >= pc.rows) continue;
            uvec2 bw = blockWords(base, r, g);
            int d = 0;
            for (uint i = 0u; i < pc.G; ++i) d += wval(bw.y, i) * xval(xrow, g * pc.G + i);
            float ws = uintBitsToFloat(w[bw.x]);
            float xsv = xs[xrow * groups + g];
            PRECISE float scale = ws * xsv;
            float fd = float(d); // exact: |d| <= 2^20
            PRECISE float p = fd * scale;
#ifdef GUARD
            if (badMul(floatBitsToUint(ws), floatBitsToUint(xsv), floatBitsToUint(scale)) ||
                badMul(floatBitsToUint(fd), floatBitsToUint(scale), floatBitsToUint(p)))
                atomicOr(anyBad, 1u);
#endif
            terms[(idx / ng) * CHUNK + idx % ng] = p;
        }
        barrier();
        if (lid < RPW && r0 + lid < pc.rows) {
            for (uint k = 0u; k < ng; ++k) {
#ifdef REVERSED
                float p = terms[lid * CHUNK + (ng - 1u - k)];
#else
                float p = terms[lid * CHUNK + k];
#endif
                PRECISE float nacc = acc + p;
#ifdef GUARD
                bad = bad || badAdd(acc, p, nacc);
#endif
                acc = nacc;
            }
        }
    }
    barrier();
    if (lid < RPW && r0 + lid < pc.rows) {
        y[j * pc.rows + r0 + lid] = acc;
#ifdef GUARD
        if (bad || anyBad != 0u) atomicOr(flags[j], 1u);
#endif
    }
}
