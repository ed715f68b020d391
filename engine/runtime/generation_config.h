#pragma once
// generation_config.json: the EOS ids and sampling defaults a checkpoint ships with.
// Semantics follow Hugging Face transformers' GenerationConfig (generation/configuration_utils.py):
//   - eos_token_id is an int or a list of ints; when generation_config.json lacks it (or the file
//     is absent), config.json's eos_token_id is used, then tokenizer_config.json's eos_token
//     (looked up by the caller in the vocabulary).
//   - sampling keys: do_sample, temperature, top_k, top_p, min_p, repetition_penalty. A key we
//     cannot use is skipped with a warning (as if absent). When any valid one is present,
//     hasSamplingDefaults is true and the missing ones take transformers' defaults
//     (temperature 1.0, top_k 50, top_p 1.0, min_p off, repetition_penalty 1.0);
//     do_sample == false means greedy (temperature 0), as transformers decodes greedily then.
// Thread-safety: plain data and pure functions.
#include "core/status.h"
#include "sampler/sampler.h"

#include <cstdint>
#include <string>
#include <vector>

namespace coli {

struct GenerationConfig {
    std::vector<int32_t> eosIds; // empty: the model has no end-of-sequence token
    int32_t bosId = -1;          // -1: none given
    bool hasSamplingDefaults = false;
    SamplerParams defaults; // meaningful only when hasSamplingDefaults
    // Sampling keys that were ignored (wrong type or out of the sampler's range), one message
    // each naming the file and the key. The key then counts as absent.
    std::vector<std::string> warnings;
};

// Parses generation_config.json text. `configJson` (config.json's text, may be empty) supplies
// eos/bos ids the generation config lacks. sourceName names the file in messages.
// Errors: Malformed (invalid JSON, an eos_token_id / bos_token_id of the wrong type or out of
// range, naming the key). A bad sampling key is not an error: it is skipped with a warning
// (GenerationConfig::warnings).
Result<GenerationConfig> parseGenerationConfig(const std::string& jsonText,
                                               const std::string& configJsonText,
                                               const std::string& sourceName);

// Reads <dir>/generation_config.json (optional: its absence is not an error) and
// <dir>/config.json (for the eos fallback). Errors: as parseGenerationConfig, Io.
Result<GenerationConfig> loadGenerationConfig(const std::string& dir);

} // namespace coli
