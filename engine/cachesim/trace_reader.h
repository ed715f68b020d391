#pragma once
// Reader of `coli trace` routing traces (JSON lines; format: docs/cli.md "coli trace"): line 1 is
// the header {"format":"coli-routing-trace","version":1,"n_layers",..,"n_experts",..,"top_k",..,
// "moe_layers":[...]}, then one record per token with "experts": one list of top_k ids per MoE
// layer. Gate weights, pieces and token ids are not needed by the simulator and are not kept.
// Thread-safety: free functions over their own data; safe to call from several threads.
#include "core/status.h"

#include <cstdint>
#include <istream>
#include <span>
#include <string>
#include <vector>

namespace coli::cachesim {

struct RoutingTraceFile {
    std::string name;           // the file name, for messages
    int nLayers = 0;            // model layers (dense ones included)
    int nExperts = 0;           // routed experts per MoE layer
    int topK = 0;               // experts per token per MoE layer
    std::vector<int> moeLayers; // model layer index of each MoE layer, ascending
    // experts[(t * moeLayers.size() + i) * topK + j]: token t, MoE layer i, j-th choice;
    // [n_tokens, n_moe_layers, top_k], every id in [0, nExperts).
    std::vector<int32_t> experts;
    std::vector<uint8_t> generated; // [n_tokens]: 1 when the token was generated (decode step)

    int64_t nTokens() const { return int64_t(generated.size()); }
    int nMoeLayers() const { return int(moeLayers.size()); }
    // The top_k ids of token t at MoE layer i (t < nTokens(), i < nMoeLayers()).
    std::span<const int32_t> expertsAt(int64_t t, int i) const {
        return {experts.data() + (size_t(t) * moeLayers.size() + size_t(i)) * size_t(topK),
                size_t(topK)};
    }
};

// Parses a trace from `in`; `name` is used in messages. Errors (Malformed) name the place as
// "NAME:LINE: what", e.g. "a.jsonl:3: expert 17 out of range [0, 16) (MoE layer 2)": invalid JSON,
// a header that is missing or not format "coli-routing-trace" version 1, sizes out of range
// (layers <= 4096, experts <= 65536, 1 <= top_k <= experts, moe_layers ascending within
// [0, n_layers)), a record without an "experts" list of n_moe_layers lists of top_k ids, ids out of
// range or repeated within one layer, and a trace without any token record.
Result<RoutingTraceFile> parseRoutingTrace(std::istream& in, const std::string& name);
// Reads the file at `path` (NotFound when it cannot be opened, Io on a read error, else as
// parseRoutingTrace).
Result<RoutingTraceFile> readRoutingTrace(const std::string& path);

} // namespace coli::cachesim
