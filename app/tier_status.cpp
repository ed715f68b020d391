#include "tier_status.h"

#include <algorithm>

namespace coli::app {

tiers::TierCounters countersSince(const tiers::TierCounters& after,
                                  const tiers::TierCounters& before) {
    auto d = [](uint64_t a, uint64_t b) { return a > b ? a - b : 0; };
    tiers::TierCounters r;
    r.routed = d(after.routed, before.routed);
    r.hitsPinned = d(after.hitsPinned, before.hitsPinned);
    r.hitsCache = d(after.hitsCache, before.hitsCache);
    r.inFlightHits = d(after.inFlightHits, before.inFlightHits);
    r.misses = d(after.misses, before.misses);
    r.readsIssued = d(after.readsIssued, before.readsIssued);
    r.bytesRead = d(after.bytesRead, before.bytesRead);
    r.evictions = d(after.evictions, before.evictions);
    r.failedReads = d(after.failedReads, before.failedReads);
    r.prefetchIssued = d(after.prefetchIssued, before.prefetchIssued);
    r.prefetchUsed = d(after.prefetchUsed, before.prefetchUsed);
    r.prefetchPredicted = d(after.prefetchPredicted, before.prefetchPredicted);
    r.prefetchCorrect = d(after.prefetchCorrect, before.prefetchCorrect);
    r.lookaheadRouted = d(after.lookaheadRouted, before.lookaheadRouted);
    r.lookaheadRecalled = d(after.lookaheadRecalled, before.lookaheadRecalled);
    r.ioWaitSeconds = std::max(0.0, after.ioWaitSeconds - before.ioWaitSeconds);
    r.tokens = d(after.tokens, before.tokens);
    return r;
}

} // namespace coli::app
