#pragma once
// Sampling settings a user chose (command-line flags, app options) on top of a model's defaults:
// generation_config.json's sampling defaults when the checkpoint ships some, else SamplerParams'
// own defaults, then every value the user gave. Shared by `coli generate`/`coli chat` and the app.
// Thread-safety: plain data and a pure function.
#include "runtime/generation_config.h"
#include "sampler/sampler.h"

#include <cstdint>
#include <optional>

namespace coli {

// Each member left empty takes the model's default (see resolveSampling).
struct SamplingOverrides {
    std::optional<float> temperature;
    std::optional<int> topK;
    std::optional<float> topP;
    std::optional<float> minP;
    std::optional<float> repeatPenalty;
    std::optional<int> repeatLastN;
    std::optional<uint64_t> seed; // empty: the default's seed (0); callers may draw one instead
};

// `base` with every sampling value set in `top` (temperature, top-k, top-p, min-p, repeat
// penalty and its window) in its place; the seed is left to the caller (each caller has its own
// rule for it). Layers settings: the app's defaults, then the command line or a chat's own.
SamplingOverrides overlaySampling(SamplingOverrides base, const SamplingOverrides& top);

// gc.defaults when gc.hasSamplingDefaults, else SamplerParams{}, overridden by every value set
// in o. Does not validate: the result may be out of range (check it with validate()).
SamplerParams resolveSampling(const SamplingOverrides& o, const GenerationConfig& gc);

} // namespace coli
