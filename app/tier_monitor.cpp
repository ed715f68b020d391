#include "tier_monitor.h"

#include <algorithm>
#include <cmath>

namespace coli::app {

namespace {
double ratio(double num, double den) {
    return den > 0 ? num / den : -1; // -1: nothing to measure yet (shown as "–")
}
constexpr double kMiB = 1024.0 * 1024.0;
} // namespace

TierMonitor::TierMonitor(QObject* parent) : QObject(parent) {
    recompute(); // the fixed rows exist before the first status
}

void TierMonitor::setRequests(std::function<void(uint64_t)> budget,
                              std::function<void(bool)> prefetch) {
    m_requestBudget = std::move(budget);
    m_requestPrefetch = std::move(prefetch);
}

void TierMonitor::apply(const TierStatus& s) {
    if (s.serial == m_now.serial) return;
    // A reload restarts the counters (and a status without tiers has none): a new session.
    const bool restart = s.serial < m_now.serial || !s.streaming ||
                         s.counters.tokens < m_now.counters.tokens ||
                         s.maximumBudget != m_now.maximumBudget;
    m_now = s;
    if (restart) m_base = s;
    recompute();
}

void TierMonitor::resetSession() {
    m_base = m_now;
    recompute();
}

void TierMonitor::setBudgetBytes(double bytes) {
    if (!m_now.streaming || !m_requestBudget || !std::isfinite(bytes)) return;
    const double lo = double(m_now.minimumBudget), hi = double(m_now.maximumBudget);
    m_requestBudget(uint64_t(std::clamp(bytes, lo, std::max(lo, hi))));
}

void TierMonitor::setPrefetchEnabled(bool on) {
    if (m_now.streaming && m_requestPrefetch) m_requestPrefetch(on);
}

QVariantList TierMonitor::ramSegments() const {
    QVariantList out;
    for (int i = 0; i < m_rows.rowCount(); ++i) {
        const TierRow& r = m_rows.at(i);
        if (r.key == QLatin1String("vram") || r.key == QLatin1String("disk")) continue;
        out.append(QVariantMap{{"key", r.key}, {"name", r.name}, {"share", r.share}});
    }
    return out;
}

void TierMonitor::recompute() {
    const tiers::TierCounters& last = m_now.last;
    m_session = m_now.counters - m_base.counters;
    const tiers::TierCounters& ses = m_session;
    const tiers::TierResidency& r = m_now.residency;

    auto ready = [](const tiers::TierCounters& c) {
        return double(c.hitsPinned + c.hitsCache - std::min(c.hitsCache, c.inFlightHits));
    };
    m_hitLast = ratio(ready(last), double(last.routed));
    m_hitSession = ratio(ready(ses), double(ses.routed));
    m_recall = ratio(double(ses.lookaheadRecalled), double(ses.lookaheadRouted));
    m_precision = ratio(double(ses.prefetchCorrect), double(ses.prefetchPredicted));
    m_mibLast = m_now.lastTokens > 0 ? double(last.bytesRead) / kMiB / m_now.lastTokens : 0;
    m_mibSession = ses.tokens > 0 ? double(ses.bytesRead) / kMiB / double(ses.tokens) : 0;
    const double busy = m_now.busySeconds - m_base.busySeconds;
    m_ioWait = busy > 0 ? std::clamp(ses.ioWaitSeconds / busy, 0.0, 1.0) : 0;

    const double budget = double(r.budgetBytes);
    const double loadingBytes = double(r.loadingExperts) * double(r.slotBytes);
    const double cacheReady = std::max(0.0, double(r.cacheBytes) - loadingBytes);
    const double freeBytes =
        r.budgetBytes > r.allocatedBytes ? double(r.budgetBytes - r.allocatedBytes) : 0.0;
    auto share = [&](double b) { return budget > 0 ? std::clamp(b / budget, 0.0, 1.0) : 0.0; };
    auto hit = [](uint64_t n, const tiers::TierCounters& c) {
        return ratio(double(n), double(c.routed));
    };
    auto cacheHits = [](const tiers::TierCounters& c) {
        return c.hitsCache - std::min(c.hitsCache, c.inFlightHits);
    };

    std::vector<TierRow> rows;
    TierRow vram;
    vram.key = QStringLiteral("vram");
    vram.name = tr("VRAM");
    vram.available = false; // no GPU tier yet
    rows.push_back(vram);
    rows.push_back({QStringLiteral("pinned"), tr("Pinned hot-store"), m_now.streaming,
                    r.pinnedExperts, double(r.pinnedBytes), share(double(r.pinnedBytes)),
                    m_now.pinCapacity, hit(last.hitsPinned, last), hit(ses.hitsPinned, ses)});
    rows.push_back({QStringLiteral("cache"), tr("Cache"), m_now.streaming, r.cachedExperts,
                    cacheReady, share(cacheReady), -1, hit(cacheHits(last), last),
                    hit(cacheHits(ses), ses)});
    rows.push_back({QStringLiteral("loading"), tr("Reads in flight"), m_now.streaming,
                    r.loadingExperts, loadingBytes, share(loadingBytes), -1,
                    hit(last.inFlightHits, last), hit(ses.inFlightHits, ses)});
    rows.push_back({QStringLiteral("free"), tr("Free"), m_now.streaming,
                    r.slotBytes > 0 ? int(freeBytes / double(r.slotBytes)) : 0, freeBytes,
                    share(freeBytes), -1, -1, -1});
    rows.push_back({QStringLiteral("disk"), tr("Disk only"), m_now.streaming, r.diskExperts,
                    double(r.diskExperts) * double(m_now.expertReadBytes), 0, -1,
                    hit(last.misses, last), hit(ses.misses, ses)});
    m_rows.update(rows);
    emit changed();
}

} // namespace coli::app
