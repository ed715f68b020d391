#pragma once
// The RAM tiers of the routed experts (docs/design.md "Expert tiers"): one pool of equal-sized
// slots under ONE byte budget (slots being read included), holding
//   - the pinned hot-store: experts chosen from learned heat (setPins, rebalancePins) and the
//     user's own pins (pinUser, setUserPins: never swapped out by the learned ones, counted in
//     the same capacity), never evicted while pinned;
//   - the LFRU cache: every other resident expert; the victim is the ready, unreferenced, unpinned
//     slot expected to be routed last: HeatTable::colder(a, b, currentLayer, topK) (the eviction
//     heat's share of its layer gives a per-token routing chance, the layer cycle the distance;
//     frequency first, recency breaks ties; docs/perf-cache-policy.md);
// and reading everything else from disk through an ExpertSource on an aio::IoPool.
// Slot safety (docs/design.md "Threading contract" 7): a slot is empty, loading or ready, with a
// reference count; only ready, unreferenced, unpinned slots that the current layer does not
// still need are evicted or reused; a failed read frees its slot and is reported to the layer
// that wanted it.
// The compute thread drives one layer at a time: beginLayer (the batch's distinct experts:
// batch-union), then next()/finished() until next() returns -1: next() hands out whichever
// wanted expert is ready first, so resident experts compute while missing ones are read. The
// caller writes each expert's output to its own buffer and sums in the router's top-k order, so
// the order of completion never changes a bit (forward/forward_fast.cpp).
// Thread-safety: every member is safe to call from any thread (one mutex), but beginLayer / next /
// finished / abortLayer / prefetch form one sequence owned by ONE compute thread at a time.
#include "aio/io_pool.h"
#include "core/status.h"
#include "model/config.h"
#include "tiers/expert_source.h"
#include "tiers/heat_table.h"
#include "tiers/tier_telemetry.h"

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace coli::tiers {

struct CacheOptions {
    // Bytes for routed experts in RAM, slots being read included; 0 = only the working set
    // (minimumBudget()). Values below the minimum are refused.
    uint64_t budgetBytes = 0;
    bool prefetch = true;    // accept prefetch() requests (router lookahead)
    double pinShare = 0.5;   // share of the slots beyond the working set the hot-store may take
    int maxPinSwaps = 4;     // rebalancePins(): swaps per call (a turn boundary)
    double pinMargin = 0.25; // rebalancePins(): a candidate's heat must exceed the coldest pinned
                             // expert's by this fraction (hysteresis, no ping-pong)
    // Learned heat (pins, the usage database): storage's half-life.
    double halfLifeTokens = HeatTable::kDefaultHalfLifeTokens;
    // Eviction heat (the LFRU order): a short memory, since routing follows the text's topic;
    // 16 tokens was best on the default model's traces (docs/perf-cache-policy.md).
    double evictionHalfLifeTokens = 16;
};

// "the hot-store is full: N of N places are pinned; unpin an expert or raise the RAM budget"
std::string hotStoreFullMessage(int capacity);

class ExpertCache {
public:
    // The working set in slots: top-k experts of a token plus the I/O pool's queue depth.
    static int workingSlots(int topK, int queueDepth) { return topK + queueDepth; }

    // Takes ownership of the pool and the source (the source reads through the pool).
    // Errors: InvalidArgument when options.budgetBytes is non-zero and below the minimum (the
    // message names the minimum in bytes and MiB).
    static Result<std::unique_ptr<ExpertCache>> create(std::unique_ptr<aio::IoPool> pool,
                                                       std::unique_ptr<ExpertSource> source,
                                                       const ModelConfig& cfg,
                                                       const CacheOptions& options);
    // Waits for every read in flight, then frees the slots.
    ~ExpertCache();
    ExpertCache(const ExpertCache&) = delete;
    ExpertCache& operator=(const ExpertCache&) = delete;

    uint64_t slotBytes() const;
    int expertsPerLayer() const;    // config n_experts (heatSnapshot's row length)
    uint64_t minimumBudget() const; // workingSlots * slotBytes (bytes)
    // Bytes in force: the RAM slots' (telemetry().residency.budgetBytes), plus the system RAM the
    // VRAM tier holds (setVramCapacity's ramBytes).
    uint64_t budget() const;
    // The VRAM tier's bytes that count in the RAM budget (setVramCapacity's ramBytes).
    uint64_t vramTierRamBytes() const;
    // Changes the budget at run time (0 = minimum). Shrinking frees slot memory now (evicting
    // the coldest ready slots and unpinning the coldest pins beyond the new hot-store size:
    // learned pins first, user pins only when they alone exceed it, coldest first; the caller
    // compares userPins() before and after to tell the user);
    // slots that are loading or in use are freed as soon as they are released.
    // Errors: InvalidArgument below the minimum (naming it); nothing changes then.
    Status setBudget(uint64_t bytes);
    void setPrefetch(bool on);
    bool prefetchEnabled() const;

    // ---- the compute thread's layer sequence ----
    // The distinct experts `layer` needs for the current batch (any order) and, optionally, how
    // many tokens of the batch routed to each ([experts.size()]; empty = 1 each: heat counts
    // routings). Counts hits and misses, protects resident ones from eviction until finished,
    // starts reads for missing ones as slots allow. Errors: InvalidArgument (a bad layer/expert,
    // counts of another size, or a layer still open).
    // onGpu ([experts.size()] or empty): experts the caller computes on the GPU (docs/gpu.md):
    // counted as VRAM hits (heat and routing as any other), never read, never handed out by
    // next() unless wantOnCpu() asks for them.
    Status beginLayer(int layer, std::span<const int> experts, std::span<const int> counts = {},
                      std::span<const uint8_t> onGpu = {});
    // The GPU could not compute the open layer's expert at `position` exactly (a flagged token,
    // a device failure): next() hands it out after all, read like a miss when not resident.
    // Ignored when the position was not marked onGpu or the layer is closed.
    void wantOnCpu(int position);
    // Blocks until one of the layer's experts not yet handed out is ready; returns its position in
    // beginLayer's list and its matrices (valid until finished(position)), or -1 when all were
    // handed out (the layer is then closed). Errors: Io when a wanted expert's read failed (the
    // layer is closed, its slots released: the cache stays consistent and usable).
    Result<int> next(SwiGluView* view);
    // next() without waiting: a wanted expert not yet handed out that is ready now (its position,
    // its matrices in *view, valid until finished(position)), or -1 when none is ready at this
    // moment. It never closes the layer and never reports a failed read (the next next() does),
    // so experts handed out and not yet finished stay held; it starts reads as next() does. Lets
    // the caller compute every resident expert of a layer together (forward/forward_fast.cpp).
    int tryNext(SwiGluView* view);
    // Whether every wanted expert of the open layer that next() has not handed out yet is ready
    // (nothing left to read or being read); false when no layer is open. The engine takes a
    // batch only then: the slots of a batch are released together after it, and while reads
    // are pending that would hold back the next reads at a small budget (docs/performance.md).
    bool openLayerReady() const;
    // The expert at `position` is computed; its slot may be evicted again.
    void finished(int position);
    // Closes an open layer early (after an error elsewhere): releases what it held.
    void abortLayer();
    // Best-effort early reads of `layer`'s likely experts (router lookahead): uses empty slots,
    // or evicts the LFRU victim when it is colder (HeatTable::colder) than the expert wanted or
    // belongs to an earlier layer; never waits.
    // Ignored when prefetch is off. Records the prediction for recall/precision telemetry.
    void prefetch(int layer, std::span<const int> experts);
    // n tokens were processed (a decode step or a prefill chunk): advances the heat clocks, then
    // calls the token observer, if any, with the telemetry after them.
    void endTokens(int n);
    // Per-token telemetry (docs/design.md threading rule 4: the engine aggregates, a consumer
    // samples): `fn` is called by endTokens on the compute thread, outside any OpenMP region and
    // without the cache's lock held, with the tokens of the step and the cumulative telemetry. It
    // must be quick (copy what it needs). Null removes it.
    using TokenObserver = std::function<void(int tokens, const TierTelemetry& after)>;
    void setTokenObserver(TokenObserver fn);

    // ---- the VRAM tier's residency (shown in the telemetry; the forward pass owns the VRAM) ----
    // The GPU tier holds up to `experts` experts of `bytesPerExpert` bytes (0, 0: none).
    // ramBytes: the system RAM the tier holds (all of its slots when its device's memory is the
    // system's, as on integrated GPUs and CPU implementations; else its upload staging): they
    // count in the RAM budget (budget() includes them; the RAM slots get the rest, at least the
    // working set).
    void setVramCapacity(int experts, uint64_t bytesPerExpert, uint64_t ramBytes = 0);
    // `id` is now in VRAM (its ExpertMap state becomes Vram) and `evicted`, when a valid id,
    // left it (its state is its RAM or disk one again). Bad ids are ignored.
    void markVram(ExpertId id, ExpertId evicted = {-1, -1});

    // ---- the pinned hot-store ----
    // Experts the hot-store may hold under the current budget (learned and user pins together).
    int pinCapacity() const;
    // Learned pins: pins the first pinCapacity() - userPins().size() experts of `hottestFirst`
    // that are routed, not user-pinned, not excluded and not in VRAM (markVram: the device computes
    // them, so a RAM pin would be a wasted slot) (unpinning other learned pins; user pins
    // stay) and starts reading those not resident into free or cold slots. Bad ids are skipped.
    void setPins(const std::vector<ExpertId>& hottestFirst);
    // Hysteresis swaps of learned pins at a turn boundary: fills free hot-store places (those
    // user pins leave) with the hottest experts neither pinned nor excluded, then swaps while the
    // hottest such (not in VRAM) beats the coldest learned pin by pinMargin, at most maxPinSwaps
    // changes. User
    // pins are never swapped out. Returns the number of changes.
    int rebalancePins();
    // Every pinned expert, learned and user pins, by (layer, expert).
    std::vector<ExpertId> pins() const;

    // ---- user pins (docs/tiers.md "User pins"): the user's choice, applied by the caller at a
    // turn boundary; they change speed, never tokens (placement invariance) ----
    // Makes `id` a user pin (a learned pin becomes one in place; otherwise the coldest learned pin
    // gives up its place when the hot-store is full) and starts reading it. No change when it
    // already is one. Errors: InvalidArgument when `id` is not a routed expert (a dense layer, out
    // of range), or when user pins fill all pinCapacity() places (hotStoreFullMessage).
    Status pinUser(ExpertId id);
    // Drops the user pin of `id` (its slot becomes an ordinary cached one); false when it was none.
    bool unpinUser(ExpertId id);
    // Replaces every user pin by the first pinCapacity() routed experts of `ids` (a stored list,
    // at load); learned pins make room, coldest first. Returns how many were applied (fewer than
    // the valid ids when the hot-store is too small: the caller says so).
    int setUserPins(const std::vector<ExpertId>& ids);
    std::vector<ExpertId> userPins() const; // by (layer, expert)
    // Excludes `id` from learned pins (the user unpinned a learned pin): unpins it when it is a
    // learned pin (returns true then). Ignored for a bad id (false).
    bool exclude(ExpertId id);
    // Replaces the exclusions (at load, or empty after the user reset them); unpins learned pins
    // among them. Bad ids are skipped.
    void setExclusions(const std::vector<ExpertId>& ids);
    std::vector<ExpertId> exclusions() const; // by (layer, expert)
    // The per-expert state and hit map alone (telemetry().experts).
    ExpertMap expertMap() const;

    // ---- learned heat (storage glue) ----
    // Learning on (the default) or paused: while paused, routings and tokens change neither the
    // learned heat nor its token clock (so neither the pins nor the usage database see them),
    // e.g. while the topic probe routes its prompts (engine/probe). The eviction order, the
    // counters and the telemetry go on as usual. Placement only: no token changes either way.
    void setLearning(bool on);
    bool learning() const;
    std::vector<double> heatSnapshot() const; // [n_layers * n_experts], decayed to now
    int64_t tokenClock() const;
    void setTokenClock(int64_t tokens);
    void setHeat(ExpertId id, double heat, int64_t asOf);

    // Counters, residency, the last batch's routed bits and the ExpertMap (kept current as slots
    // and pins change: a copy of 5 bytes per expert, no walk over the experts).
    TierTelemetry telemetry() const;
    // telemetry().counters alone: one copy under the lock, no walk over the slots (for a
    // per-turn difference, TierCounters operator-).
    TierCounters counters() const;
    // The record of reads: per (layer, expert), indexed as ExpertMap, the loads from disk that
    // completed since the cache was made (either disk; failed ones not counted), so that
    // sum(expertReads()) * source().readBytes() == counters().bytesRead.
    std::vector<uint32_t> expertReads() const;
    // telemetry().mirror alone (no lock of the cache; the router has its own): cheap enough to
    // poll after every token.
    MirrorStatus mirrorStatus() const;
    const ExpertSource& source() const;
    aio::IoPool& pool();
    const aio::IoPool& pool() const;
    // Test hook: checks the slot table's invariants (every non-empty slot indexed under its
    // expert and vice versa, no negative reference counts, allocation within the budget or only
    // over it by busy slots, the ExpertMap's states equal to the slot table's, pins within
    // pinCapacity()). Internal naming the broken one.
    Status checkConsistency() const;
    // Test hook: waits until no read is in flight.
    void waitIdle();

private:
    ExpertCache() = default;
    struct Impl;
    std::unique_ptr<Impl> m;
};

} // namespace coli::tiers
