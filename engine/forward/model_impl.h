#pragma once
// Internal: what a loaded Model holds, and the two forward paths over it.
#include "forward/fast_ffn.h"
#include "forward/model.h"
#include "forward/rope.h"
#include "forward/spin_barrier.h"
#include "forward/vram_experts.h"
#include "model/weights.h"
#include "tiers/expert_cache.h"

#include <chrono>
#include <mutex>
#include <span>
#include <vector>

namespace coli {

// Scratch buffers of the Fast path, sized at load for kChunk tokens (longer batches run in chunks
// of kChunk; each token's row is computed independently, so chunking never changes a bit). The
// team of a chunk shares them: each phase writes disjoint parts (forward_fast.cpp).
struct FastWorkspace {
    static constexpr int kChunk = 32;
    std::vector<float> x, h, q, k, v, att, o;   // [kChunk, dim] (MLA: k holds kv_a_proj's rows)
    std::vector<float> routerLogits, gateW;     // [kChunk, n_experts], [kChunk, top_k]
    std::vector<int> sel;                       // [kChunk, top_k]
    std::vector<float> slotOut;                 // [kChunk * top_k, d_model] routed experts' down
    std::vector<int> expertTokens, expertCount; // [n_experts, kChunk], [n_experts]
    std::vector<int> slotRow;     // [kChunk * top_k] the slotOut / gather row of each (token, slot)
    std::vector<int> gatherToken; // [kChunk * top_k] token of a gathered row, -1: not gathered
    std::vector<float> gather;    // [kChunk * top_k, d_model] routed experts' input rows
    std::vector<float> g, u;      // routed experts' [cnt, expert_ffn] blocks, then one
                                  // [kChunk, max(shared_ffn, dense_ffn)] block
    std::vector<float> y;         // [kChunk, d_model] shared expert / dense MLP output
    std::vector<float> mlpOut, sharedGate; // [kChunk, d_model], [kChunk]
    std::vector<float> scores; // [scoreThreads, scoreTokens] attention scores, one row per thread
    std::vector<float> cosSin; // [kChunk, head_dim] (cos then sin halves)
    QuantisedRows qin;         // the current matmul input (h or att), [kChunk, max(d, q_dim)]
    QuantisedRows qgather;     // gathered expert inputs [kChunk * top_k, d_model]
    QuantisedRows qact;        // routed experts' act [kChunk * top_k, expert_ffn]
    QuantisedRows qactShared;  // shared / dense act [kChunk, max(shared_ffn, dense_ffn)]
    QuantisedRows qlook;       // lookahead router input [kChunk, d_model]
    std::vector<int> unionExperts; // [n_experts] the chunk's distinct routed experts, ascending
    std::vector<int> unionCounts;  // [n_experts] tokens of the chunk routed to each of them
    std::vector<FfnItem> items;    // [n_experts + 1] the layer's MLPs (routed, then shared)
    int nItems = 0;                // routed items of the current layer
    bool needGather = false;       // some routed item has a strict subset of the tokens
    std::vector<float> lookH, lookLogits; // [kChunk, d_model], [kChunk, n_experts] (lookahead)
    std::vector<float> lookWeights;       // [top_k] the lookahead's (unused) gate weights
    std::vector<float> routeScratch;      // [routingScratchFloats] selectExperts' scratch (master)
    // MLA (forward/fast_mla.h): [kChunk, q_lora_rank] q_a rows, [kChunk, n_heads, kv_lora_rank +
    // qk_rope_head_dim] absorbed queries, [kChunk, n_heads, kv_lora_rank] attended latents.
    std::vector<float> qa, qAbs, latent;
    std::vector<int> lookSel, lookUnion; // [kChunk, top_k], [n_experts]
    // The VRAM tier (forward/fast_gpu_experts.h), master-written: the layer's jobs on the GPU
    // and, per job, its slotOut row and item; the device's outputs and guard flags; the items the
    // CPU computes (routed ones not in VRAM, then the shared expert) and those it recomputes
    // (an item with a flagged job).
    std::vector<gpu::GpuJob> gpuJobs;         // [kChunk * top_k]
    std::vector<int> gpuJobRow, gpuJobItem;   // [kChunk * top_k]
    std::vector<float> gpuY;                  // [kChunk * top_k, d_model]
    std::vector<uint32_t> gpuFlags;           // [kChunk * top_k]
    std::vector<FfnItem> cpuItems, redoItems; // [n_experts + 1], [n_experts]
    std::vector<uint8_t> onGpu;               // [n_experts] per routed item: computed on the GPU
    std::vector<int> redoPositions;           // [n_experts] the redo items' positions in `items`
    int nGpuJobs = 0, nGpuItems = 0, nCpuItems = 0, nRedoItems = 0;
    int handedCpu = 0;         // streamed: CPU positions the cache has handed out this layer
    bool gpuSubmitted = false; // the device took the layer's jobs
    bool gpuToCollect = false; // the layer's jobs are not collected yet
    int scoreThreads = 0;
    int scoreTokens = 0; // grows (outside the loops) with the longest context seen, up to
                         // max_position_embeddings
    // Shared between the team's threads of one chunk, written by the master before a sync.
    SpinBarrier barrier;
    // The phases balanced by stealing (Team::steal): one task range per thread. Decode's experts
    // (fast_ffn.h, expertSteal): per item the epoch its act was completed in; the epoch is
    // master-written in the routing phase.
    StealRanges stealRanges;
    std::unique_ptr<std::atomic<uint32_t>[]> actDone; // [n_experts + 1]
    uint32_t expertEpoch = 0;
    // Each flag is written by the master in one phase only and read by all after the next sync;
    // two flags, not one, so that no thread can still be reading one the master is setting.
    Status status;             // the chunk's error (streamed expert reads)
    bool routeFailed = false;  // ExpertCache::beginLayer failed
    bool streamFailed = false; // ExpertCache::next failed
    int streamBatch = 0;       // streamed experts the team computes next (0: the layer is done)
    std::vector<FfnItem> batchItems; // [n_experts] those experts' items (copies of items[pos])
    std::vector<int> batchPos;       // [n_experts] their positions in items (ExpertCache::next)
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
    // The VRAM tier (ExpertTierOptions::gpu); null when experts are computed on the CPU only.
    std::unique_ptr<VramExperts> vram;
    std::string gpuNote; // Model::gpuNote()

    float attentionScale() const;
};

// The seconds from t0 to now (one steady_clock read: tens of nanoseconds, vDSO). For the
// ForwardTimes regions; called on the forward() caller's thread, outside OpenMP regions.
inline double regionSeconds(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Model::decodeBytes (model.h), from the weights as loaded.
DecodeBytes decodeBytesOf(const ModelImpl& m);
Result<placement::MemoryBandwidth> residentWeightReadBandwidthOf(const ModelImpl& m,
                                                                 int repetitions);

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
