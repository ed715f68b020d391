#pragma once
// The Atlas's data (issue 12): one point per routed expert at its 3D embedded position, with its
// topic shares, dominant topic (or "generalist") and specialist flag, plus the topics' labels.
// This is exactly what the topic probe's `coli atlas MODEL --json FILE` writes (format in
// docs/visualisation.md, "Atlas view"), and what syntheticAtlas() makes for tests and benchmarks
// without a probed model.
// Plain C++ (no Qt). Thread-safety: plain values; the functions are pure (no shared state).
#include "core/status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace coli::atlas {

struct AtlasExpert {
    int layer = 0;             // decoder layer (0-based, dense layers included in the numbering)
    int expert = 0;            // routed expert index within the layer (0-based)
    float x = 0, y = 0, z = 0; // embedded position (embedding units, about [-100, 100])
    int topic = -1;            // dominant topic index into AtlasData::topics; -1: generalist
    bool specialist = false;   // share in its dominant topic >= 3x the balanced share
    std::vector<float> shares; // [topics.size()] routing share per topic (0..1), may be empty
};

struct AtlasData {
    std::string model;               // the model the probe ran on (empty: synthetic)
    std::vector<std::string> topics; // topic labels, in index order
    int nLayers = 0;                 // decoder layers of the model (ExpertMap::nLayers)
    int nExperts = 0;                // routed experts per MoE layer (ExpertMap::nExperts)
    std::vector<AtlasExpert> experts;
};

// A deterministic synthetic atlas: `nLayers` x `nExperts` experts (every layer MoE), `nTopics`
// topics (at most 16, labelled "topic 1", ...). About two thirds of the experts are specialists
// clustered around their topic's centre (centres spread on a sphere of radius 100); the rest are
// generalists near the origin. The same arguments give the same bytes on every machine (own
// generator and Box-Muller, no <random> distributions). nLayers, nExperts >= 1; nTopics in 1..16.
AtlasData syntheticAtlas(int nLayers, int nExperts, int nTopics, uint64_t seed = 1);

// Parses the probe's JSON (`coli atlas --json`). `name` (the file's name) prefixes every error
// message. Errors (Malformed): not JSON, a missing or mistyped field, a topic index out of range,
// shares of the wrong length, a (layer, expert) outside [0, layers) x [0, experts_per_layer) or
// given twice, non-finite coordinates.
Result<AtlasData> parseAtlasJson(std::string_view text, const std::string& name);
// Reads and parses a file (NotFound / Io when it cannot be read).
Result<AtlasData> readAtlasJson(const std::string& path);
// The JSON parseAtlasJson reads (used by tests and to cache an atlas).
std::string toAtlasJson(const AtlasData& data);

// A synthetic router for the views without weights: advances `hits` ([nLayers * nExperts], as
// ExpertMap::hits) by one token: `k` distinct experts per layer, half of them drawn from the
// specialists of `topic` in that layer (when there are any). Deterministic in `rng`.
void routeSyntheticToken(const AtlasData& data, int topic, int k, uint64_t& rng,
                         std::vector<uint32_t>& hits);

} // namespace coli::atlas
