#pragma once
// Internal: what a loaded Model holds, and the two forward paths over it.
#include "forward/model.h"
#include "forward/rope.h"
#include "model/weights.h"
#include "tiers/expert_cache.h"

#include <chrono>
#include <mutex>
#include <span>
#include <vector>

namespace coli {

// Scratch buffers of the Fast path, sized at load for kChunk tokens (longer batches run in chunks
// of kChunk; each token's row is computed independently, so chunking never changes a bit).
struct FastWorkspace {
    static constexpr int kChunk = 32;
    std::vector<float> x, h, q, k, v, att, o;   // [kChunk, dim]
    std::vector<float> routerLogits, gateW;     // [kChunk, n_experts], [kChunk, top_k]
    std::vector<int> sel;                       // [kChunk, top_k]
    std::vector<float> slotOut;                 // [kChunk * top_k, d_model]
    std::vector<int> expertTokens, expertCount; // [n_experts, kChunk * top_k], [n_experts]
    std::vector<float> gather, g, u, y;         // [kChunk*top_k, d_model | ffn | ffn | d_model]
    std::vector<float> mlpOut, sharedGate;      // [kChunk, d_model], [kChunk]
    std::vector<float> scores; // [scoreThreads, scoreTokens] attention scores, one row per thread
    std::vector<float> cosSin; // [kChunk, head_dim] (cos then sin halves)
    std::vector<uint8_t> xq;   // quantised activations of one matmul (quantised weights only)
    std::vector<int> unionExperts; // [n_experts] the chunk's distinct routed experts, ascending
    std::vector<int> unionCounts;  // [n_experts] tokens of the chunk routed to each of them
    std::vector<float> lookH, lookLogits; // [kChunk, d_model], [kChunk, n_experts] (lookahead)
    std::vector<int> lookSel, lookUnion;  // [kChunk, top_k], [n_experts]
    int scoreThreads = 0;
    int scoreTokens = 0; // grows (outside the loops) with the longest context seen, up to
                         // max_position_embeddings
    void allocate(const ModelConfig& c, int threads);
    // Makes the score rows hold `tokens` keys (called by forward() before computing).
    void reserveScores(int tokens, int maxTokens);
};

struct ModelImpl {
    ModelConfig cfg;
    ModelWeights w;
    Rope rope;
    ModelSummary summary;
    ForwardPath path = ForwardPath::Fast;
    int threads = 1;
    mutable std::mutex mutex; // serialises forward() (the workspace is shared)
    mutable FastWorkspace ws;
    // Streamed routed experts (ModelLoadOptions::tiers.stream); null when all are resident in w.
    std::unique_ptr<tiers::ExpertCache> cache;

    float attentionScale() const;
};

// The seconds from t0 to now (one steady_clock read: tens of nanoseconds, vDSO). For the
// ForwardTimes regions; called on the forward() caller's thread, outside OpenMP regions.
inline double regionSeconds(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Both: tokens already validated, kv already reserved for kv.size() + tokens.size() positions.
// They append to kv and fill logits as Model::forward documents. routing, when not null, is
// already sized by forward() (moeLayers, topK, nTokens, experts, weights); they write its rows.
// times: the regions' seconds are added to it (ForwardTimes; regionSeconds below).
// Errors: only from streamed experts (Io: a failed read); kv may then hold a partial chunk
// (Model::forward truncates it back).
Status forwardReference(const ModelImpl& m, std::span<const int32_t> tokens, KVCache& kv,
                        std::vector<float>& logits, bool allLogits, RoutingTrace* routing,
                        ForwardTimes& times);
Status forwardFast(const ModelImpl& m, std::span<const int32_t> tokens, KVCache& kv,
                   std::vector<float>& logits, bool allLogits, RoutingTrace* routing,
                   ForwardTimes& times);

} // namespace coli
