#pragma once
// Options shared by `generate` and `chat`: the model directory, threads and sampling.
#include "runtime/session.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace coli::cli {

struct ModelOptions {
    std::string dir;
    int threads = 0; // 0 = all cores
};

// Sampling flags; a flag left out takes the model's generation_config.json default, or ours
// (kDefaultSampling) when the file has none.
struct SamplingOptions {
    std::optional<float> temperature;
    std::optional<int> topK;
    std::optional<float> topP;
    std::optional<float> minP;
    std::optional<float> repeatPenalty;
    std::optional<int> repeatLastN;
    std::optional<uint64_t> seed; // absent: a random seed, reported on stderr
};

// Used when generation_config.json has no sampling keys: temp 0.8, top-k 40, top-p 0.95,
// min-p 0.05, repeat penalty 1.0 (off) over the last 64 tokens.
SamplerParams defaultSampling();

void addModelOptions(CLI::App& cmd, ModelOptions& o);
void addSamplingOptions(CLI::App& cmd, SamplingOptions& o);

// Checks each given flag against the sampler's ranges before any model is loaded.
// Returns "" when fine, else a message naming the flag and the allowed range.
std::string checkSamplingFlags(const SamplingOptions& o);

// Model defaults (or ours), overridden by the given flags; draws a seed when none is given.
SamplerParams resolveSampling(const SamplingOptions& o, const GenerationConfig& gc);

// One line for stderr: "temp 0.80, top-k 40, top-p 0.95, min-p 0.05, repeat-penalty 1.00, seed 42".
std::string describeSampling(const SamplerParams& p);

// Loads the model, showing progress on stderr when it is a terminal. On failure prints the error
// and sets exitCode (kExitModel, or kExitInterrupted when Ctrl+C cancelled the load).
std::unique_ptr<LoadedModel> loadModel(const ModelOptions& o, int& exitCode);

// Prints "coli: error: <msg>" to stderr.
void printError(const std::string& msg);

} // namespace coli::cli
