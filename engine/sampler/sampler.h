#pragma once
// Token sampler over one row of logits. Order (as llama.cpp's default chain): repetition penalty
// -> temperature -> top-k -> top-p -> min-p -> draw. temperature == 0 means greedy (argmax, ties
// to the lowest id). The draw uses our own seeded generator (splitmix64/xoshiro-style), so a seed
// gives the same tokens on every platform and standard library.
// Repetition penalty: CTRL (Keskar et al. 2019, arXiv:1909.05858): logit/p if logit>0 else logit*p,
// over the last `repeatLastN` tokens of history.
// Thread-safety: one Sampler per generation stream.
#include "core/status.h"

#include <cstdint>
#include <span>

namespace coli {

struct SamplerParams {
    float temperature = 0.8f;  // >= 0, <= 100; 0 = greedy
    int topK = 40;             // >= 0; 0 = off
    float topP = 0.95f;        // (0, 1]; 1 = off
    float minP = 0.05f;        // [0, 1); 0 = off
    float repeatPenalty = 1.0f; // [1? no: > 0, <= 10]; 1 = off
    int repeatLastN = 64;      // >= 0 tokens of history the penalty looks at
    uint64_t seed = 0;
};

// InvalidArgument naming the parameter and its allowed range; NaN is always rejected.
Status validate(const SamplerParams& p);

class Sampler {
public:
    explicit Sampler(const SamplerParams& p); // p must have passed validate()
    // logits: [vocab]. history: tokens so far (prompt + generated). Errors: Numeric when any
    // logit is NaN/Inf (the message gives the count and the first position), InvalidArgument for
    // an empty row.
    Result<int32_t> sample(std::span<const float> logits, std::span<const int32_t> history);
    void reseed(uint64_t seed);

private:
    SamplerParams m_p;
    uint64_t m_state[4];
};

} // namespace coli
