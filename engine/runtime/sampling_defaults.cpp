#include "runtime/sampling_defaults.h"

namespace coli {

SamplingOverrides overlaySampling(SamplingOverrides base, const SamplingOverrides& top) {
    if (top.temperature) base.temperature = top.temperature;
    if (top.topK) base.topK = top.topK;
    if (top.topP) base.topP = top.topP;
    if (top.minP) base.minP = top.minP;
    if (top.repeatPenalty) base.repeatPenalty = top.repeatPenalty;
    if (top.repeatLastN) base.repeatLastN = top.repeatLastN;
    return base;
}

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
