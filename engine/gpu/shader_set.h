#pragma once
// The embedded SPIR-V (engine/gpu/shaders, compiled by the build) and which variant a device gets.
#include <cstdint>
#include <span>
#include <string>

namespace coli::gpu {

struct EmbeddedShader {
    const char*
        name; // "matvec_fc3": shader and float-controls mask (1 RTE, 2 SZ, 4 DenormPreserve)
    const uint32_t* words;
    uint32_t count;
};
std::span<const EmbeddedShader> embeddedShaders();

enum class Kernel { Matvec, Swiglu, QuantAct, MatvecReversed };

// The float-controls mask a device supports (its modes, all declared).
struct DeviceInfo;
int floatControlsMask(const DeviceInfo& d);
// The variant of `k` for `mask` (MatvecReversed: a test-only variant the self-test must reject,
// with no modes declared). Never null for the kernels the build makes.
const EmbeddedShader* shaderFor(Kernel k, int mask);
// xxHash64 of every embedded SPIR-V word, in table order (the self-test's cache key: a rebuilt
// shader means a new verdict).
uint64_t shaderHash();

} // namespace coli::gpu
