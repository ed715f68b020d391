#pragma once
// Where a period's routed experts were served from, as shares of the routed ones (docs/app.md
// "Tiers view"): VRAM (computed on the GPU), the pinned hot-store, the cache (ready), in flight (a
// prefetch was still reading it) and disk (read on demand); the five add up to 1. One definition
// for the Tiers view (TierMonitor, from tiers::TierCounters) and the Charts view (TurnStatsModel,
// from a saved run's storage::RunTierCounters, which has hitsVram from schema version 6): both
// counter types have these fields.
// Thread-safety: pure functions.
#include <algorithm>
#include <cstdint>
#include <optional>

namespace coli::app {

struct PlaceShares {
    double vram = 0, pinned = 0, cache = 0, inFlight = 0, disk = 0;
    // Found ready in VRAM or RAM: the expert hit rate (tiers::hitRate's definition).
    double ready() const { return vram + pinned + cache; }
};

// nullopt when nothing was routed (a dense model, no token yet).
template <typename Counters> std::optional<PlaceShares> placeShares(const Counters& c) {
    if (c.routed == 0) return std::nullopt;
    const double routed = double(c.routed);
    // inFlightHits is part of hitsCache; counters that say otherwise count none in flight.
    const uint64_t inFlight = std::min(c.inFlightHits, c.hitsCache);
    PlaceShares s;
    s.pinned = double(c.hitsPinned) / routed;
    s.cache = double(c.hitsCache - inFlight) / routed;
    s.inFlight = double(inFlight) / routed;
    s.disk = double(c.misses) / routed;
    s.vram = double(c.hitsVram) / routed;
    return s;
}

} // namespace coli::app
