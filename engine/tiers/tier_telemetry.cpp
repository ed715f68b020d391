#include "tiers/tier_telemetry.h"

namespace coli::tiers {

namespace {

// op(a.f, b.f) for every field f: the one list of TierCounters' fields that + and - share.
template <class Op> TierCounters fieldwise(const TierCounters& a, const TierCounters& b, Op op) {
    TierCounters d;
    d.routed = op(a.routed, b.routed);
    d.hitsPinned = op(a.hitsPinned, b.hitsPinned);
    d.hitsCache = op(a.hitsCache, b.hitsCache);
    d.inFlightHits = op(a.inFlightHits, b.inFlightHits);
    d.misses = op(a.misses, b.misses);
    d.hitsVram = op(a.hitsVram, b.hitsVram);
    d.readsIssued = op(a.readsIssued, b.readsIssued);
    d.bytesRead = op(a.bytesRead, b.bytesRead);
    d.bytesReadPrimary = op(a.bytesReadPrimary, b.bytesReadPrimary);
    d.bytesReadMirror = op(a.bytesReadMirror, b.bytesReadMirror);
    d.evictions = op(a.evictions, b.evictions);
    d.failedReads = op(a.failedReads, b.failedReads);
    d.prefetchIssued = op(a.prefetchIssued, b.prefetchIssued);
    d.prefetchUsed = op(a.prefetchUsed, b.prefetchUsed);
    d.prefetchPredicted = op(a.prefetchPredicted, b.prefetchPredicted);
    d.prefetchCorrect = op(a.prefetchCorrect, b.prefetchCorrect);
    d.lookaheadRouted = op(a.lookaheadRouted, b.lookaheadRouted);
    d.lookaheadRecalled = op(a.lookaheadRecalled, b.lookaheadRecalled);
    d.ioWaitSeconds = op(a.ioWaitSeconds, b.ioWaitSeconds);
    d.tokens = op(a.tokens, b.tokens);
    return d;
}

} // namespace

TierCounters operator-(const TierCounters& a, const TierCounters& b) {
    return fieldwise(a, b, [](auto x, auto y) { return x - y; });
}

TierCounters operator+(const TierCounters& a, const TierCounters& b) {
    return fieldwise(a, b, [](auto x, auto y) { return x + y; });
}

double hitRate(const TierCounters& c) {
    if (c.routed == 0) return 0;
    // hitsCache includes the experts found still loading (inFlightHits): not ready, not a hit.
    return double(c.hitsVram + c.hitsPinned + c.hitsCache - c.inFlightHits) / double(c.routed);
}

double bytesReadPerToken(const TierCounters& c) {
    return c.tokens > 0 ? double(c.bytesRead) / double(c.tokens) : 0.0;
}

} // namespace coli::tiers
