#pragma once
// Where a period's routed experts were served from, as shares of the routed ones (docs/app.md
// "Tiers view"): the pinned hot-store, the cache (ready), in flight (a prefetch was still reading
// it) and disk (read on demand); the four add up to 1. One definition for the Tiers view
// (TierMonitor, from tiers::TierCounters) and the Charts view (TurnStatsModel, from a saved run's
// storage::RunTierCounters): both counter types have these fields.
// Thread-safety: pure functions.
#include <algorithm>
#include <cstdint>
#include <optional>

namespace coli::app {

struct PlaceShares {
    double pinned = 0, cache = 0, inFlight = 0, disk = 0;
    double ready() const { return pinned + cache; } // found ready in RAM: the expert hit rate
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
    return s;
}

} // namespace coli::app
