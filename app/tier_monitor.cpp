#include "tier_monitor.h"

#include "place_shares.h"

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
    // A reload restarts the counters (and a status without tiers has none): a new session, also
    // the first status with tiers. (A budget change is not one, though the RAM budget's ceiling
    // follows the VRAM budget on a device sharing the system's memory.)
    const bool restart = s.serial < m_now.serial || !s.streaming || !m_now.streaming ||
                         s.counters.tokens < m_now.counters.tokens || s.loadId != m_now.loadId;
    m_now = s;
    if (restart) {
        m_base = s;
        m_vramAsked = -1; // another model: a request for the old one is gone with it
    }
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

double TierMonitor::minimumVramBudgetBytes() const {
    const tiers::TierResidency& r = m_now.residency;
    return vramAvailable() ? double(r.vramBudgetBytes / uint64_t(r.vramCapacity)) : 0;
}

double TierMonitor::maximumVramBudgetBytes() const {
    return minimumVramBudgetBytes() * std::max(0, m_now.residency.totalExperts);
}

void TierMonitor::setVramBudgetBytes(double bytes) {
    if (!vramAvailable() || !m_requestVram || std::isnan(bytes)) return;
    const uint64_t want = uint64_t(std::clamp(bytes, 0.0, maximumVramBudgetBytes()));
    m_vramAsked = double(want);
    m_requestVram(want);
    emit changed();
}

void TierMonitor::vramRequestDone() {
    if (m_vramAsked < 0) return;
    m_vramAsked = -1;
    emit changed();
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

    const std::optional<PlaceShares> lastShares = placeShares(last), sesShares = placeShares(ses);
    m_hitLast = lastShares ? lastShares->ready() : -1;
    m_hitSession = sesShares ? sesShares->ready() : -1;
    m_recall = ratio(double(ses.lookaheadRecalled), double(ses.lookaheadRouted));
    m_precision = ratio(double(ses.prefetchCorrect), double(ses.prefetchPredicted));
    // Read per token: decode steps and prompt steps apart (-1: no such token yet).
    auto mib = [](const tiers::TierCounters& c) {
        return c.tokens > 0 ? tiers::bytesReadPerToken(c) / kMiB : -1.0;
    };
    const tiers::TierCounters sesDecode = m_now.decodeCounters - m_base.decodeCounters;
    m_mibLast = mib(m_now.lastDecode);
    m_mibSession = mib(sesDecode);
    m_mibPromptSession = mib(ses - sesDecode);
    const double busy = m_now.busySeconds - m_base.busySeconds;
    m_ioWait = busy > 0 ? std::clamp(ses.ioWaitSeconds / busy, 0.0, 1.0) : 0;

    const double budget = double(r.budgetBytes);
    const double loadingBytes = double(r.loadingExperts) * double(r.slotBytes);
    const double cacheReady = std::max(0.0, double(r.cacheBytes) - loadingBytes);
    const double freeBytes =
        r.budgetBytes > r.allocatedBytes ? double(r.budgetBytes - r.allocatedBytes) : 0.0;
    auto share = [&](double b) { return budget > 0 ? std::clamp(b / budget, 0.0, 1.0) : 0.0; };
    // A place's share of the routed experts; -1 (shown "–") when nothing was routed.
    auto hit = [](const std::optional<PlaceShares>& s, double PlaceShares::*place) {
        return s ? (*s).*place : -1.0;
    };

    std::vector<TierRow> rows;
    // Its own budget, not the RAM's: share is of the VRAM budget, capacity the experts it holds.
    const bool gpu = m_now.streaming && r.vramCapacity > 0;
    rows.push_back({QStringLiteral("vram"), tr("VRAM"), gpu, gpu ? r.vramExperts : 0,
                    gpu ? double(r.vramBytes) : 0,
                    gpu && r.vramBudgetBytes > 0
                        ? std::clamp(double(r.vramBytes) / double(r.vramBudgetBytes), 0.0, 1.0)
                        : 0,
                    gpu ? r.vramCapacity : -1, gpu ? hit(lastShares, &PlaceShares::vram) : -1,
                    gpu ? hit(sesShares, &PlaceShares::vram) : -1});
    rows.push_back({QStringLiteral("pinned"), tr("Pinned hot-store"), m_now.streaming,
                    r.pinnedExperts, double(r.pinnedBytes), share(double(r.pinnedBytes)),
                    m_now.pinCapacity, hit(lastShares, &PlaceShares::pinned),
                    hit(sesShares, &PlaceShares::pinned)});
    rows.push_back({QStringLiteral("cache"), tr("Cache"), m_now.streaming, r.cachedExperts,
                    cacheReady, share(cacheReady), -1, hit(lastShares, &PlaceShares::cache),
                    hit(sesShares, &PlaceShares::cache)});
    rows.push_back({QStringLiteral("loading"), tr("Reads in flight"), m_now.streaming,
                    r.loadingExperts, loadingBytes, share(loadingBytes), -1,
                    hit(lastShares, &PlaceShares::inFlight),
                    hit(sesShares, &PlaceShares::inFlight)});
    rows.push_back({QStringLiteral("free"), tr("Free"), m_now.streaming,
                    r.slotBytes > 0 ? int(freeBytes / double(r.slotBytes)) : 0, freeBytes,
                    share(freeBytes), -1, -1, -1});
    rows.push_back({QStringLiteral("disk"), tr("Disk only"), m_now.streaming, r.diskExperts,
                    double(r.diskExperts) * double(m_now.expertReadBytes), 0, -1,
                    hit(lastShares, &PlaceShares::disk), hit(sesShares, &PlaceShares::disk)});
    m_rows.update(rows);
    emit changed();
}

} // namespace coli::app
