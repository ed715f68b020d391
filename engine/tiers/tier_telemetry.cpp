#include "tiers/tier_telemetry.h"

namespace coli::tiers {

TierCounters operator-(const TierCounters& a, const TierCounters& b) {
    TierCounters d;
    d.routed = a.routed - b.routed;
    d.hitsPinned = a.hitsPinned - b.hitsPinned;
    d.hitsCache = a.hitsCache - b.hitsCache;
    d.inFlightHits = a.inFlightHits - b.inFlightHits;
    d.misses = a.misses - b.misses;
    d.readsIssued = a.readsIssued - b.readsIssued;
    d.bytesRead = a.bytesRead - b.bytesRead;
    d.bytesReadPrimary = a.bytesReadPrimary - b.bytesReadPrimary;
    d.bytesReadMirror = a.bytesReadMirror - b.bytesReadMirror;
    d.evictions = a.evictions - b.evictions;
    d.failedReads = a.failedReads - b.failedReads;
    d.prefetchIssued = a.prefetchIssued - b.prefetchIssued;
    d.prefetchUsed = a.prefetchUsed - b.prefetchUsed;
    d.prefetchPredicted = a.prefetchPredicted - b.prefetchPredicted;
    d.prefetchCorrect = a.prefetchCorrect - b.prefetchCorrect;
    d.lookaheadRouted = a.lookaheadRouted - b.lookaheadRouted;
    d.lookaheadRecalled = a.lookaheadRecalled - b.lookaheadRecalled;
    d.ioWaitSeconds = a.ioWaitSeconds - b.ioWaitSeconds;
    d.tokens = a.tokens - b.tokens;
    return d;
}

double hitRate(const TierCounters& c) {
    if (c.routed == 0) return 0;
    // hitsCache includes the experts found still loading (inFlightHits): not ready, not a hit.
    return double(c.hitsPinned + c.hitsCache - c.inFlightHits) / double(c.routed);
}

double bytesReadPerToken(const TierCounters& c) {
    return c.tokens > 0 ? double(c.bytesRead) / double(c.tokens) : 0.0;
}

} // namespace coli::tiers
