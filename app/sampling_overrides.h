#pragma once
// Sampling settings chosen by the user (command line) on top of the model's defaults, resolved
// the way `coli generate` does: generation_config.json's defaults when the checkpoint ships some,
// else SamplerParams' defaults, then every value the user gave. Unlike the CLI, the seed is fixed
// (0 unless given), so the same conversation gives the same answers on every run.
// Thread-safety: plain data and a pure function.
#include "runtime/session.h"

#include <cstdint>
#include <optional>

namespace coli::app {

struct SamplingOverrides {
    std::optional<float> temperature;
    std::optional<int> topK;
    std::optional<float> topP;
    std::optional<float> minP;
    std::optional<float> repeatPenalty;
    uint64_t seed = 0;
};

inline SamplerParams resolveSampling(const SamplingOverrides& o, const GenerationConfig& gc) {
    SamplerParams p = gc.hasSamplingDefaults ? gc.defaults : SamplerParams{};
    if (o.temperature) p.temperature = *o.temperature;
    if (o.topK) p.topK = *o.topK;
    if (o.topP) p.topP = *o.topP;
    if (o.minP) p.minP = *o.minP;
    if (o.repeatPenalty) p.repeatPenalty = *o.repeatPenalty;
    p.seed = o.seed;
    return p;
}

} // namespace coli::app
