#include "gpu/shader_set.h"

#include "gpu/devices.h"

#include <xxhash.h>

#include <cstring>
#include <string>

namespace coli::gpu {

int floatControlsMask(const DeviceInfo& d) {
    return (d.roundingRte ? 1 : 0) | (d.signedZeroInfNanPreserve ? 2 : 0) |
           (d.denormPreserve ? 4 : 0);
}

const EmbeddedShader* shaderFor(Kernel k, int mask) {
    std::string name;
    switch (k) {
    case Kernel::Matvec:
        name = "matvec_fc" + std::to_string(mask);
        break;
    case Kernel::Swiglu:
        name = "swiglu_fc" + std::to_string(mask);
        break;
    case Kernel::QuantAct:
        name = "quant_act_fc" + std::to_string(mask);
        break;
    case Kernel::MatvecReversed:
        name = "matvec_reversed";
        break;
    }
    for (const EmbeddedShader& s : embeddedShaders())
        if (name == s.name) return &s;
    return nullptr;
}

uint64_t shaderHash() {
    XXH64_state_t* st = XXH64_createState();
    XXH64_reset(st, 0);
    for (const EmbeddedShader& s : embeddedShaders()) {
        XXH64_update(st, s.name, std::strlen(s.name));
        XXH64_update(st, s.words, size_t(s.count) * 4);
    }
    const uint64_t h = XXH64_digest(st);
    XXH64_freeState(st);
    return h;
}

} // namespace coli::gpu
