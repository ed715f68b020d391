#pragma once
// A loaded MoE model (weights in RAM, f32 or quantised; expert tiers come with issue 5) and its
// forward pass. Two paths compute the same function:
//   ForwardPath::Reference - scalar, single-threaded, written to be read top to bottom: the oracle.
//   ForwardPath::Fast      - OpenMP across output rows / heads / experts; must match Reference
//                            within 1e-5 relative on logits (tests assert it).
// Thread-safety: a Model is immutable after load(); forward() may be called from one thread per
// KVCache. OpenMP teams exist only inside forward(); no callback is made from a parallel region.
#include "aio/io_pool.h"
#include "core/status.h"
#include "model/config.h"
#include "model/quantise_weights.h"
#include "placement/memory_bandwidth.h"
#include "tiers/heat_table.h" // tiers::ExpertId

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace coli {

class Checkpoint;
struct PhaseTimes; // forward/phase_times.h
namespace tiers {
class ExpertCache;
}

enum class ForwardPath { Reference, Fast };

struct LoadProgress {
    std::string stage;   // "config", "weights", "tokenizer", ...
    double fraction = 0; // 0..1 over the whole load
};
using ProgressFn = std::function<void(const LoadProgress&)>;

// Streaming the routed experts from disk (docs/design.md "Expert tiers"; tiers/expert_cache.h):
// dense weights stay resident, routed experts are read on demand into a RAM cache of
// ramBudgetBytes. Placement never changes a bit of the result
// (tests/tiers/test_placement_invariance).
struct ExpertTierOptions {
    bool stream = false;         // false: every expert is read at load and stays in RAM
    uint64_t ramBudgetBytes = 0; // expert RAM incl. reads in flight; 0 = the minimum working set
    int ioQueueDepth = 4;        // reads in flight (aio::IoOptions::queueDepth)
    aio::IoBackend ioBackend = aio::IoBackend::Auto;
    // O_DIRECT or buffered (+ DONTNEED) expert reads; Auto: docs/tiers.md "Buffered or O_DIRECT".
    aio::DirectIo directIo = aio::DirectIo::Auto;
    bool prefetch = true;  // router-lookahead prefetch (Fast path)
    double pinShare = 0.5; // share of the cache the pinned hot-store may take
    // A mirror of some model files on a second disk (docs/mirror.md, mirror/mirror_load.h):
    // its receipt's files are checked at load and expert reads split between the two disks.
    // "" = none. Ignored (a warning) when the experts are resident.
    std::string mirrorDir;
    // Read weights (primary, mirror) of the split (--disk-weights); unset = measured at load.
    std::optional<std::pair<double, double>> diskWeights;
    // The VRAM tier (docs/gpu.md): "none", "auto" (a discrete, else an integrated GPU) or a
    // case-insensitive substring of a Vulkan device's name. Quantised experts (a container's, or
    // --quantise experts=... when resident) on the Fast path only; otherwise gpuNote() says why.
    std::string gpu = "none";
    uint64_t vramBudgetBytes = 0; // bytes of VRAM for experts; 0 = 80 % of the device-local heap
    std::string gpuSelfTestCache; // the self-test's verdict cache; "" = gpu::defaultSelfTestCache()
    // Test hook: treat every N-th GPU job as flagged by the guard (recomputed on the CPU), so the
    // tests exercise that path on devices that never flag ordinary data; 0 = off.
    int gpuTestFlagEvery = 0;
    // Test hook: uploads through the staging ring even where the device maps its memory
    // (gpu::GpuContext::setStagedUploadsForTesting), the path of discrete GPUs.
    bool gpuTestStaging = false;
};

// The VRAM tier's counters (cumulative since load; docs/gpu.md).
struct GpuCounters {
    int64_t experts = 0;        // expert computations on the GPU (an expert's tokens of one layer)
    int64_t jobs = 0;           // (expert, token) pairs computed there
    int64_t flagged = 0;        // jobs the guard flagged: recomputed on the CPU
    uint64_t uploadedBytes = 0; // expert bytes copied to VRAM
    double waitSeconds = 0;     // the forward pass's master thread waiting for the device
    // Seconds the device spent on expert batches (Vulkan timestamps around each batch; 0 where
    // the queue has no timestamps).
    double deviceSeconds = 0;
    int64_t evictions = 0;    // experts replaced in VRAM by hotter ones (docs/gpu.md)
    int resident = 0;         // experts in VRAM now
    int capacity = 0;         // experts the VRAM budget holds
    uint64_t expertBytes = 0; // bytes of one expert in VRAM (gate, up, down)
};

struct ModelLoadOptions {
    int threads = 0; // OpenMP threads for forward(); 0 = all cores
    ForwardPath path = ForwardPath::Fast;
    // Quantise the loaded f32 weights in memory (model/quantise_weights.h; nothing by default).
    // Gives the same bytes, and so the same logits, as loading the colibri container of the
    // same choice; for quality checks and for running unconverted checkpoints smaller.
    // Hugging Face checkpoints only: load() refuses it (InvalidArgument) for a container.
    WeightQuantisation quantisation;
    ExpertTierOptions tiers;
};

// Keys and values of every layer for one sequence. Capacity in tokens; grows on demand up to
// the model's context length. A cache belongs to the model that first filled it (forward()
// refuses a cache with other dimensions unless it is empty). Movable, not copyable.
// Thread-safety: one thread at a time per cache.
class KVCache {
public:
    KVCache() = default;
    int size() const { return m_nTokens; } // tokens currently cached
    void truncate(int nTokens);            // keep the first nTokens (prefix reuse); clamps
    void clear() { truncate(0); }
    int capacity() const { return m_capacity; }    // tokens the buffers hold without growing
    int layers() const { return int(m_k.size()); } // 0 until a model filled it
    KvShape shape() const { return m_shape; }
    // Floats of one position over all layers: layers() * heads * (kDim + vDim).
    size_t positionFloats() const;
    // Position `pos`'s keys and values of every layer into out [positionFloats()]: per layer the
    // key rows of heads 0..heads-1, then their value rows. Requires pos < size(). Thread-safety:
    // const (no concurrent forward() on this cache).
    void copyPosition(int pos, float* out) const;
    // Replaces the contents by n positions of a model with nLayers layers of `shape`, from rows
    // [n, positionFloats()] laid out as copyPosition writes them (a persisted session,
    // runtime/session_kv_file.h). maxTokens: the model's context length. Errors: InvalidArgument
    // when n > maxTokens, a dimension is not positive, or rows has the wrong size; the cache is
    // then empty.
    Status assign(int nLayers, KvShape shape, int maxTokens, std::span<const float> rows, int n);

private:
    friend struct KVCacheAccess; // the forward pass (forward/kv_access.h)
    // Per layer, [heads, capacity, kDim] keys (after RoPE) and [heads, capacity, vDim] values
    // (KvShape, model/config.h: GQA n_kv_heads x head_dim each; MLA one row of the latent and the
    // rope key, no values): one head's positions are contiguous, so attention over the cached
    // positions reads each head as one stream. Left uninitialised past the cached positions (never
    // read there). The room ahead's pages are committed by decode steps, 64 positions ahead
    // (KVCacheAccess::kDecodeCommitAhead), not all at once; a prompt's writers fault in its own.
    std::vector<std::unique_ptr<float[]>> m_k, m_v;
    int m_capacity = 0;
    int m_committed = 0; // positions whose pages reserve() committed (<= m_capacity)
    int m_nTokens = 0;
    KvShape m_shape; // of the model that filled it
};

// The router's choices during one Model::forward() call: for every token of the call and every
// MoE (sparse) layer, the top-k expert ids and their gate weights, in the router's top-k order
// (descending selection score; ties -> lower expert id), exactly the experts and weights the
// forward pass used. Dense layers (mlp_only_layers / decoder_sparse_step) have no entry.
// Weights: the gates the experts' outputs were multiplied by (forward/routing.h): the softmax
// probabilities over all experts (renormalised over the k when norm_topk_prob, so they sum to 1),
// or, for GraniteMoE, the softmax over the k selected logits (sum to 1); DeepSeek-V3's sigmoid
// scores; DeepSeek's are then multiplied by routed_scaling_factor. Each is in (0, scaling factor].
// In top-k order (descending) except DeepSeek-V3's, which ranks by bias-corrected scores.
// Reference and Fast fill it with the same expert ids; weights agree within f32 rounding.
// Thread-safety: plain data, filled by the thread that called forward().
struct RoutingTrace {
    int nTokens = 0;              // tokens of the forward() call
    int topK = 0;                 // experts per token per MoE layer (config num_experts_per_tok)
    std::vector<int> moeLayers;   // [n_moe_layers]: the model layer index of each MoE layer
    std::vector<int32_t> experts; // [n_tokens, n_moe_layers, top_k] expert ids in [0, n_experts)
    std::vector<float> weights;   // [n_tokens, n_moe_layers, top_k]

    int nMoeLayers() const { return int(moeLayers.size()); }
    // Offset of (token t, MoE layer index i, slot 0) in experts/weights.
    size_t offset(int t, int i) const { return (size_t(t) * moeLayers.size() + i) * topK; }
    std::span<const int32_t> expertsAt(int t, int i) const {
        return {experts.data() + offset(t, i), size_t(topK)};
    }
    std::span<const float> weightsAt(int t, int i) const {
        return {weights.data() + offset(t, i), size_t(topK)};
    }
};

// Where a forward() call spent the calling thread's time, in seconds (steady_clock around coarse
// regions of the layer loop: a few clock reads per layer, never inside an OpenMP region).
// forward() ADDS to these, so one ForwardTimes can sum a whole generation.
//   attention: the attention blocks (Q/K/V projections, norms, RoPE, scores, output projection);
//   moe:       the MoE blocks (router, lookahead, routed experts, shared expert), the time the
//              thread waited for streamed expert reads included (TierCounters::ioWaitSeconds
//              counts that part).
// Embeddings, norms, residual adds, dense (non-MoE) FFN layers and the logits are in neither.
// Thread-safety: plain values.
struct ForwardTimes {
    double attention = 0;
    double moe = 0;
    // When set, the Fast path also adds each thread's time per phase (forward/phase_times.h:
    // decode steps or prefill chunks, as phases->prefill says); the Reference path ignores it.
    PhaseTimes* phases = nullptr;
};

// The bytes one decode step at batch 1 reads from memory: B_tok of `coli bench decode
// --resident`, whose tok/s x B_tok / (memory read bandwidth) is the decode's share of the memory
// roofline (docs/performance.md).
struct DecodeBytes {
    // Weights as stored (quantisation scales included), in bytes: per layer the attention
    // projections, their norms and biases, the router, top_k routed experts (one expert = its
    // gate, up and down; a cache slot when experts stream), the shared expert and its gate or the
    // dense MLP; then the final norm, the LM head and one embedding row.
    uint64_t weights = 0;
    // K and V bytes read per cached position, all layers (f32; MLA: the latent and rope key);
    // not counted in `weights`.
    uint64_t kvPerPosition = 0;
};

class Model {
public:
    // Loads config.json and every tensor the family needs from `dir`: a Hugging Face checkpoint
    // (sharded or not; f32 in RAM unless opt.quantisation says otherwise) or, when `dir` holds a
    // colibri.json, a colibri container (convert/container_weights.h: quantised tensors stay as
    // stored, one read per expert blob).
    // Errors: everything loadConfig and Checkpoint::open (or openContainer) return; NotFound for a
    // missing tensor (the message lists the expected names); Malformed for a tensor of the wrong
    // shape (containers: also format or length; the message names colibri.json, the tensor and
    // its shard); InvalidArgument for opt.quantisation on a container, or for bad
    // opt.tiers.diskWeights; Cancelled when *cancel turns true during loading. A mirror that
    // cannot be used (opt.tiers.mirrorDir) is not an error: warnings() says why.
    static Result<std::unique_ptr<Model>> load(const std::string& dir, const ModelLoadOptions& opt,
                                               const ProgressFn& progress = {},
                                               const std::atomic<bool>* cancel = nullptr);
    ~Model();

    const ModelConfig& config() const;
    // Problems that did not stop the load, one message each naming the file: mirror files refused
    // (size or header differs from the primary's), a mirror without a receipt, ...
    const std::vector<std::string>& warnings() const;
    // Parameter counts and on-disk sizes (see ModelSummary), computed at load. For a container:
    // bytes as stored (bytes per expert = one blob, padding included); storage names the formats.
    ModelSummary summary() const;
    // DecodeBytes of this model as loaded (computed from the weights in memory). Thread-safe.
    DecodeBytes decodeBytes() const;
    // The read bandwidth of this model's own resident weights (placement::timeReadPasses: the
    // median of `repetitions` timed passes after one untimed; bufferBytes = the bytes one pass
    // reads, all 0 for a model with none) of placement::streamRead's loop (64-bit sums, each of the
    // model's threads reading its contiguous share of every buffer, one OpenMP region per pass)
    // over every matrix of every layer, every resident expert and the LM head. The same loop as
    // `coli bench kernels`' MemRead, on the memory a decode step reads: on a VM, memory taken at
    // another moment can stream at another speed (docs/performance.md, "Which memory"). Streamed
    // experts are not counted (their slots are not read here). Errors: InvalidArgument
    // (repetitions outside 1..1000). Thread-safety: not concurrently with forward() (it uses the
    // same cores); const otherwise.
    Result<placement::MemoryBandwidth> residentWeightReadBandwidth(int repetitions) const;
    // The weights as they compute, in words: the storage (summary().storage), the format of each
    // class in memory (embeddings, attention, dense MLP, routed experts, LM head: "f32" or a
    // quant format name) and the forward path, e.g. "safetensors (BF16); embed f32, attention
    // q8_g64-r8, experts q4_g64-r8, lm_head f32; fast". Two loads with the same description and
    // model identity compute the same KV bits (the persisted session's key,
    // runtime/session_kv_file.h). Not thread-safe against setPath().
    std::string weightsDescription() const;
    // Not thread-safe against a concurrent forward().
    void setPath(ForwardPath p);
    ForwardPath path() const;
    // OpenMP threads for the Fast path (0 = all cores). Not thread-safe against forward().
    void setThreads(int n);
    int threads() const;
    // The expert tiers when experts stream (ModelLoadOptions::tiers.stream), else null: budget,
    // pins, heat and telemetry. Thread-safe (the cache has its own lock); owned by the Model.
    tiers::ExpertCache* expertCache() const;
    // The VRAM tier: whether experts are computed on a GPU, its counters (zero when not), and a
    // line for the user: the device and its budget, or why there is no tier (empty for --gpu
    // none). Not thread-safe against a concurrent forward() (counters change there).
    bool gpuActive() const;
    GpuCounters gpuCounters() const;
    std::string gpuNote() const;
    std::string gpuDevice() const; // the VRAM tier's device name; "" without a tier
    // The VRAM tier's learned pins (tiers/vram_placement.h): the hottest experts by learned heat
    // (hottestFirst, e.g. learning::vramPinCandidates) reserve up to half of its slots and are
    // never evicted; resident experts are copied now, streamed ones when first routed. Returns
    // the pins in force (empty without a GPU tier). Call before the first forward(); not
    // thread-safe against forward().
    std::vector<tiers::ExpertId> setVramPins(const std::vector<tiers::ExpertId>& hottestFirst);
    std::vector<tiers::ExpertId> vramPins() const; // by (layer, expert)
    int vramPinCapacity() const;                   // 0 without a GPU tier
    // Changes the VRAM budget at run time (bytes; whole experts). Shrinking frees the device
    // memory of whole buffers beyond the new size at once (the experts in them leave VRAM, pins
    // there included, and the pins beyond the new pin share: the expert cache's map follows);
    // growing allocates again, up to every routed expert. With a device sharing the system's
    // memory the RAM budget's split follows (ExpertCache::setVramCapacity). Call between
    // forward() calls (not thread-safe against it). Errors: Unsupported without a GPU tier;
    // InvalidArgument below one expert; NoSpace when the device cannot hold more (the tier keeps
    // its former size).
    Status setVramBudget(uint64_t bytes);
    uint64_t vramBudget() const; // bytes in force (slots x bytes per expert); 0 without a tier

    // Runs tokens[0..n) at positions kv.size() .. kv.size()+n-1, appending them to kv.
    // logits: [n, vocab] when allLogits, else [vocab] for the last token only (resized here).
    // Errors: InvalidArgument (no tokens, token id outside [0, vocab), context length
    // max_position_embeddings exceeded, a cache filled by a model of other dimensions); Io when a
    // streamed expert cannot be read (naming the file); on error kv is unchanged. Concurrent calls
    // on one Model are serialised (the Fast path's scratch buffers are per model). routing: when
    // not null, replaced by the call's RoutingTrace (n_tokens = tokens.size()); on error it is left
    // unchanged. When null nothing is recorded (no cost). times: when not null, the call's
    // region times are added to it (also after an error: the time was spent); the clocks run
    // either way (their cost is a few clock reads per layer).
    Status forward(std::span<const int32_t> tokens, KVCache& kv, std::vector<float>& logits,
                   bool allLogits = false, RoutingTrace* routing = nullptr,
                   ForwardTimes* times = nullptr) const;

private:
    Model();
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

} // namespace coli
