#pragma once
// Token sampler over one row of logits. Order (as llama.cpp's default chain): repetition penalty
// -> temperature -> top-k -> softmax -> top-p -> min-p -> renormalise -> draw.
// temperature == 0 means greedy: argmax of the penalised logits, ties to the lowest id; top-k/p,
// min-p and the seed are then ignored.
// The draw uses our own seeded generator (splitmix64 seeding xoshiro256**, Blackman & Vigna,
// https://prng.di.unimi.it/), so a seed gives the same tokens with every standard library.
// Repetition penalty: CTRL (Keskar et al. 2019, arXiv:1909.05858): logit/p if logit>0 else logit*p,
// applied once to each distinct token among the last `repeatLastN` tokens of history.
// Candidates are ordered by probability, ties to the lower id, so the result never depends on the
// sort implementation.
// Thread-safety: one Sampler per generation stream (sample() mutates the generator and buffers).
#include "core/status.h"

#include <cstdint>
#include <span>
#include <vector>

namespace coli {

struct SamplerParams {
    float temperature = 0.8f;   // [0, 100]; 0 = greedy
    int topK = 40;              // >= 0; 0 = off
    float topP = 0.95f;         // (0, 1]; 1 = off
    float minP = 0.05f;         // [0, 1); 0 = off
    float repeatPenalty = 1.0f; // (0, 10]; 1 = off; < 1 favours repeats
    int repeatLastN = 64;       // >= 0 tokens of history the penalty looks at; 0 = off
    uint64_t seed = 0;
};

// InvalidArgument naming the parameter, its allowed range and the value given, e.g.
// "topP must be in (0, 1] (got 1.5)"; NaN is always rejected.
Status validate(const SamplerParams& p);

class Sampler {
public:
    // p should have passed validate(); if not, every sample() returns validate()'s error.
    explicit Sampler(const SamplerParams& p);
    // logits: [vocab]. history: tokens so far (prompt + generated); ids outside [0, vocab) are
    // ignored by the penalty. Returns a token id in [0, vocab).
    // Errors: Numeric when any logit is NaN/Inf (the message gives the count and the first
    // index), InvalidArgument for an empty row or invalid parameters.
    // Cost: O(vocab) plus a sort of the candidates kept by top-k (all of them when top-k is off
    // and top-p is on); buffers are reused between calls.
    Result<int32_t> sample(std::span<const float> logits, std::span<const int32_t> history);
    // Restarts the generator: the same seed replays the same draws.
    void reseed(uint64_t seed);
    const SamplerParams& params() const { return m_p; }

private:
    struct Candidate {
        double logit; // penalised, before temperature
        double p;     // unnormalised probability
        int32_t id;
    };
    uint64_t nextU64();
    double nextUniform(); // [0, 1), 53 random bits

    SamplerParams m_p;
    Status m_valid;
    uint64_t m_state[4];
    std::vector<Candidate> m_cand;
    std::vector<int32_t> m_recent;
};

} // namespace coli
