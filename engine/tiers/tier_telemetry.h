#pragma once
// What the expert tiers report (docs/design.md "Threading contract" 4: aggregated in the engine,
// published latest-wins; the GUI's tier bars, Brain and Atlas draw it). Counters are cumulative
// since the cache was made: a per-token figure is the difference of two snapshots.
// Thread-safety: plain values.
#include <cstdint>
#include <string>
#include <vector>

namespace coli::tiers {

struct TierCounters {
    uint64_t routed = 0; // demanded (layer, expert) accesses: distinct experts per layer per batch
    uint64_t hitsPinned = 0; // found in the pinned hot-store
    uint64_t hitsCache = 0; // found in the LFRU cache (ready, or already loading: see inFlightHits)
    uint64_t inFlightHits = 0; // of hitsCache: the expert was still being read (a prefetch)
    uint64_t misses = 0;       // read from disk on demand
    // Found in VRAM and computed on the GPU (docs/gpu.md). routed = hitsPinned + hitsCache +
    // misses + hitsVram.
    uint64_t hitsVram = 0;
    uint64_t readsIssued = 0; // expert loads started (demand + prefetch + pins)
    uint64_t bytesRead = 0;   // bytes of completed expert loads
    // bytesRead by the disk that served each load (tiers/disk_router.h): the model's folder, or
    // the mirror on a second disk. They add up to bytesRead.
    uint64_t bytesReadPrimary = 0;
    uint64_t bytesReadMirror = 0;
    uint64_t evictions = 0; // ready experts dropped to make room
    uint64_t failedReads = 0;
    uint64_t prefetchIssued = 0;    // lookahead loads started
    uint64_t prefetchUsed = 0;      // prefetched experts later demanded before eviction
    uint64_t prefetchPredicted = 0; // experts the lookahead predicted (resident or not)
    uint64_t prefetchCorrect = 0;   // of prefetchPredicted: routed in that layer (precision)
    uint64_t lookaheadRouted = 0;   // routed experts of layers that had a lookahead (recall's base)
    uint64_t lookaheadRecalled = 0; // of lookaheadRouted: predicted by the lookahead (recall)
    double ioWaitSeconds = 0;       // compute thread blocked waiting for reads
    uint64_t tokens = 0;            // tokens counted by endTokens()
};

// after - before, field by field: the counters of the steps between two cumulative snapshots
// (a turn's, a token's). `after` must be the later snapshot of the same cache (each field >=).
TierCounters operator-(const TierCounters& after, const TierCounters& before);
// a + b, field by field: the counters of two disjoint sets of steps together.
TierCounters operator+(const TierCounters& a, const TierCounters& b);
// Routed experts found ready in VRAM or RAM (pinned or cache, not still being read) / routed; 0
// when nothing was routed.
double hitRate(const TierCounters& c);
// Bytes read per token (bytesRead / tokens); 0 without tokens.
double bytesReadPerToken(const TierCounters& c);

struct TierResidency {
    int pinnedExperts = 0;        // ready in the hot-store
    int cachedExperts = 0;        // ready in the LFRU cache
    int loadingExperts = 0;       // reads in flight
    int diskExperts = 0;          // every other routed expert
    int vramExperts = 0;          // in VRAM (the GPU tier; they may also hold a RAM slot)
    int vramCapacity = 0;         // experts the VRAM budget holds (0: no GPU tier)
    uint64_t vramBytes = 0;       // VRAM holding experts (vramExperts * the expert's bytes there)
    uint64_t vramBudgetBytes = 0; // vramCapacity * the expert's bytes
    uint64_t pinnedBytes = 0, cacheBytes = 0; // slot bytes allocated to each (loading -> cache)
    uint64_t allocatedBytes = 0;              // all slot memory allocated now
    uint64_t budgetBytes = 0;                 // the budget in force
    uint64_t slotBytes = 0;                   // bytes of one slot
    int totalExperts = 0;                     // routed experts of the model
};

// Where one routed expert is now: the Brain view's hue (issue 12). One byte per (layer, expert).
enum class ExpertState : uint8_t {
    None = 0,    // not a routed expert (a dense layer's entries)
    Disk = 1,    // not in RAM: read on demand when routed
    Loading = 2, // a read is in flight (demand or prefetch)
    Cached = 3,  // ready in the LFRU cache
    Pinned = 4,  // ready or loading in the pinned hot-store
    Vram = 5,    // in VRAM: computed on the GPU (docs/gpu.md)
};
// ORed into a state byte when the expert is pinned by the user (a user pin, schema v3), whether
// or not its read has finished; the low bits still give the ExpertState.
constexpr uint8_t kUserPinFlag = 0x80;
constexpr uint8_t kExpertStateMask = 0x0f;

// Per-expert state and cumulative routing counts of every (layer, expert), indexed
// layer * nExperts + expert over ALL layers (dense layers' entries are None / 0).
struct ExpertMap {
    int nLayers = 0;            // the model's decoder layers
    int nExperts = 0;           // routed experts per MoE layer
    std::vector<uint8_t> state; // [n_layers * n_experts]: ExpertState, | kUserPinFlag
    // [n_layers * n_experts]: times the expert was routed since the cache was made, counted as
    // TierCounters::routed counts (once per distinct expert per layer per batch), so the sum over
    // all entries equals counters.routed. Differences of two snapshots give the experts routed in
    // between (the Brain's and the Atlas's flash).
    std::vector<uint32_t> hits;
};

// The mirror on a second disk (tiers/disk_router.h, docs/mirror.md), as the telemetry reports it.
struct MirrorStatus {
    bool configured = false; // a mirror with at least one usable file was set up at load
    std::string dir;
    int files = 0;         // mirrored files the sources read from
    double share = 0;      // MirrorSetup::share
    bool fellBack = false; // the mirror was switched off during the run (problem says why)
    std::string problem;   // the one warning, naming the file and what happened
};

struct TierTelemetry {
    TierCounters counters;
    TierResidency residency;
    // The last batch's routed experts per MoE layer, as bitsets: [n_layers][ceil(n_experts/64)]
    // words, bit e of word e/64 set when expert e was routed (dense layers: all zero).
    std::vector<std::vector<uint64_t>> routedBits;
    ExpertMap experts;   // filled by ExpertCache::telemetry() (issue 12)
    MirrorStatus mirror; // the mirror on a second disk, if any (docs/mirror.md)
};

} // namespace coli::tiers
