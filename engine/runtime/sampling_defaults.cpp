#include "runtime/sampling_defaults.h"

namespace coli {

SamplerParams resolveSampling(const SamplingOverrides& o, const GenerationConfig& gc) {
    SamplerParams p = gc.hasSamplingDefaults ? gc.defaults : SamplerParams{};
    if (o.temperature) p.temperature = *o.temperature;
    if (o.topK) p.topK = *o.topK;
    if (o.topP) p.topP = *o.topP;
    if (o.minP) p.minP = *o.minP;
    if (o.repeatPenalty) p.repeatPenalty = *o.repeatPenalty;
    if (o.repeatLastN) p.repeatLastN = *o.repeatLastN;
    if (o.seed) p.seed = *o.seed;
    return p;
}

} // namespace coli
