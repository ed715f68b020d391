#pragma once
// Which routed experts hold the VRAM tier's slots (docs/gpu.md "Placement"): pure bookkeeping,
// no device. The forward pass's VRAM tier (forward/vram_experts.h) asks place() where to copy an
// expert and does the copy; this class decides:
//   - pins: the hottest experts by learned heat (setPins, from the usage database: stored as pins
//     of tier 'vram') reserve up to pinShare of the slots and are never evicted; a pinned expert
//     not yet copied keeps its reserved slot until it is (streamed experts are copied from the RAM
//     slot they were computed from, so a pin fills when first routed);
//   - the other slots are an LFU cache with forgetting: an expert routed while not in VRAM takes a
//     free slot, or replaces the coldest unpinned expert (HeatTable::colder: decayed heat, then
//     recency) when its own heat is at least minHeat and exceeds the victim's by `margin` (an
//     upload costs about as much as computing the expert on the CPU, so a one-off routing must
//     not push out a regular);
//   - when every expert fits, nothing is ever evicted.
// Slots the device reads in the batch being built or in flight are never reused (slotBusy).
// Thread-safety: none; one owner (the Fast forward pass's master thread).
#include "tiers/heat_table.h"

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace coli::tiers {

struct VramPlacementOptions {
    double pinShare = 0.5; // share of the slots learned pins may reserve
    double margin = 0.25;  // place(): a candidate's heat must exceed the victim's by this fraction
    // place() into a full tier: the candidate's heat must be at least this (routed about twice
    // within the half-life), so a one-off routing never costs an upload and an eviction.
    double minHeat = 2.0;
    // Eviction heat's half-life in tokens: longer than the RAM cache's 16, because a VRAM miss
    // costs an upload, so frequency should count for more than recency. Not tuned yet.
    double halfLifeTokens = 128;
};

class VramPlacement {
public:
    // nLayers x nExperts routed experts (a dense layer's are simply never routed); `slots` VRAM
    // places (negative counts as 0).
    VramPlacement(int nLayers, int nExperts, int slots, const VramPlacementOptions& options = {});

    int slots() const { return int(m_owner.size()); }
    int used() const { return m_used; }        // slots holding (or reserved for) an expert
    int readyCount() const { return m_ready; } // slots holding an expert's bytes
    // The slot of `id` (copied or reserved for a pin), -1 when none. Bad ids: -1.
    int slotOf(ExpertId id) const;
    // Whether `id`'s slot holds its bytes (false for a reserved pin not yet copied).
    bool ready(ExpertId id) const;

    // A routing of `id` (heat +count, at the current token). Call for every routed expert, on
    // the GPU or not, before place(). Bad ids are ignored.
    void use(ExpertId id, int count = 1);
    // n tokens were processed: advances the heat clock.
    void endTokens(int n);

    struct Assignment {
        ExpertId id;
        int slot = -1;
    };
    // Learned pins: the first pinCapacity() distinct valid ids of `hottestFirst` become the pins
    // (earlier pins not among them become ordinary cached experts). Each new pin not in VRAM
    // takes a free slot or the coldest unpinned, non-busy one (no margin: learned heat chose it).
    // Returns the pins that need a copy (slot assigned, not ready): the caller copies them now
    // when it has their bytes (then markReady), or leaves them reserved until first routed.
    std::vector<Assignment> setPins(std::span<const ExpertId> hottestFirst,
                                    const std::function<bool(int)>& slotBusy = {});
    int pinCapacity() const;
    std::vector<ExpertId> pins() const; // by (layer, expert)
    bool pinned(ExpertId id) const;

    // Where to copy `id`, routed now at `currentLayer` and not ready in VRAM: its reserved pin
    // slot, a free slot, or the slot of the coldest unpinned ready expert that is not busy when
    // `id` is hotter than it by the margin (that expert leaves VRAM: *evicted receives it, and
    // evictions() counts it). Returns the slot, now `id`'s but not ready (copy, then markReady;
    // on a failed copy, release), or -1 to compute `id` elsewhere.
    int place(ExpertId id, const std::function<bool(int)>& slotBusy, ExpertId* evicted = nullptr);
    void markReady(int slot);
    // The tier now has `slots` places; the contents of slots >= firstLost are gone (the device's
    // buffers changed). Every expert in a slot at or past min(slots, firstLost) leaves (a pin
    // loses its pin), then the coldest pins beyond the new pinCapacity() become ordinary cached
    // experts. Returns the experts that left and were ready (the caller's map follows).
    std::vector<ExpertId> resize(int slots, int firstLost);
    // The copy into `slot` failed: the slot becomes free (a pin loses its reservation too).
    void release(int slot);
    int64_t evictions() const { return m_evictions; }
    const HeatTable& heat() const { return m_heat; }

private:
    struct Slot {
        int key = -1; // layer * nExperts + expert, -1 free
        bool ready = false;
    };
    int key(ExpertId id) const;
    ExpertId idOf(int key) const { return {key / m_nExperts, key % m_nExperts}; }
    // The free slot with the lowest index, or -1.
    int freeSlot() const;
    // The coldest ready, unpinned, non-busy slot, or -1.
    int victim(const std::function<bool(int)>& slotBusy) const;
    void assign(int slot, int key);
    void clear(int slot);

    int m_nLayers, m_nExperts;
    VramPlacementOptions m_opt;
    HeatTable m_heat;
    std::vector<Slot> m_owner;     // [slots]
    std::vector<int> m_slotOf;     // [n_layers * n_experts], -1
    std::vector<uint8_t> m_pinned; // [n_layers * n_experts]
    int m_used = 0, m_ready = 0;
    int64_t m_evictions = 0;
};

} // namespace coli::tiers
