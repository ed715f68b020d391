#pragma once
// The Tiers view's data: the latest TierStatus of the engine thread turned into rows (VRAM, the
// RAM budget's parts, disk) and figures (hit rates, prefetch recall and precision, MiB read per
// token, I/O wait share), for the last forward step and for the session (since the model was
// loaded or resetSession() was called: a new or another chat). Also the controls: the RAM budget
// and the prefetch switch, forwarded to EngineWorker::requestBudget / requestPrefetch (applied by
// the engine thread between two tokens, also during an answer), and the VRAM budget, forwarded to
// EngineWorker::requestVramBudget (applied between two answers).
// Definitions (counters of tiers/tier_telemetry.h over the period):
//   hit rate        = (hitsVram + hitsPinned + hitsCache - inFlightHits) / routed: found ready
//                     in VRAM or RAM (tiers::hitRate)
//   per row         = hitsVram / routed (VRAM), hitsPinned / routed (pinned), (hitsCache -
//                     inFlightHits) / routed (cache), inFlightHits / routed (in flight: being
//                     read by a prefetch), misses / routed (disk); the five add up to 1
//   VRAM row        = available when the GPU tier holds experts (residency.vramCapacity > 0):
//                     experts / vramCapacity, bytes / vramBudgetBytes (its own budget)
//   VRAM budget     = from one expert (vramBudgetBytes / vramCapacity, the bytes of one expert
//                     there) to every routed expert (that * totalExperts)
//   recall          = lookaheadRecalled / lookaheadRouted; precision = prefetchCorrect /
//                     prefetchPredicted
//   MiB per token   = bytesRead / 2^20 / tokens, for the answers' decode steps (last: the last
//                     decode step; -1 before one) and apart for the prompts' prefill steps
//                     (mibPerPromptTokenSession; -1 without prompt tokens): a prefill chunk reads
//                     each routed expert once for all its tokens
//   I/O wait share  = ioWaitSeconds / seconds the engine thread spent generating
//   bytes per disk  = bytesReadPrimary and bytesReadMirror over the session (the model's disk and
//                     the mirror's, docs/mirror.md)
// Thread-safety: GUI thread only (QObject affinity).
#include "tier_rows_model.h"
#include "tier_status.h"

#include <QObject>
#include <QString>
#include <QVariantList>

#include <functional>

namespace coli::app {

class TierMonitor : public QObject {
    Q_OBJECT
    Q_PROPERTY(QObject* rows READ rowsObject CONSTANT)
    Q_PROPERTY(bool available READ available NOTIFY changed)
    Q_PROPERTY(double budgetBytes READ budgetBytes NOTIFY changed)
    Q_PROPERTY(double minimumBudgetBytes READ minimumBudgetBytes NOTIFY changed)
    Q_PROPERTY(double maximumBudgetBytes READ maximumBudgetBytes NOTIFY changed)
    Q_PROPERTY(double allocatedBytes READ allocatedBytes NOTIFY changed)
    Q_PROPERTY(int totalExperts READ totalExperts NOTIFY changed)
    Q_PROPERTY(int pinnedExperts READ pinnedExperts NOTIFY changed)
    Q_PROPERTY(int diskExperts READ diskExperts NOTIFY changed)
    Q_PROPERTY(int pinCapacity READ pinCapacity NOTIFY changed)
    // The VRAM tier (docs/gpu.md): whether the loaded model has one, the experts in it and the
    // experts it holds, the bytes they take and its budget.
    Q_PROPERTY(bool vramAvailable READ vramAvailable NOTIFY changed)
    Q_PROPERTY(int vramExperts READ vramExperts NOTIFY changed)
    Q_PROPERTY(int vramCapacity READ vramCapacity NOTIFY changed)
    Q_PROPERTY(double vramBytes READ vramBytes NOTIFY changed)
    Q_PROPERTY(double vramBudgetBytes READ vramBudgetBytes NOTIFY changed)
    // The VRAM budget control's range: one expert .. every routed expert (0 without a GPU tier).
    Q_PROPERTY(double minimumVramBudgetBytes READ minimumVramBudgetBytes NOTIFY changed)
    Q_PROPERTY(double maximumVramBudgetBytes READ maximumVramBudgetBytes NOTIFY changed)
    // A VRAM budget asked for and not yet run by the engine (it waits for the answer being
    // written to end), else -1.
    Q_PROPERTY(double vramBudgetAskedBytes READ vramBudgetAskedBytes NOTIFY changed)
    Q_PROPERTY(double hitRateLast READ hitRateLast NOTIFY changed)
    Q_PROPERTY(double hitRateSession READ hitRateSession NOTIFY changed)
    Q_PROPERTY(double prefetchRecall READ prefetchRecall NOTIFY changed)
    Q_PROPERTY(double prefetchPrecision READ prefetchPrecision NOTIFY changed)
    Q_PROPERTY(double mibPerTokenLast READ mibPerTokenLast NOTIFY changed)
    Q_PROPERTY(double mibPerTokenSession READ mibPerTokenSession NOTIFY changed)
    Q_PROPERTY(double mibPerPromptTokenSession READ mibPerPromptTokenSession NOTIFY changed)
    Q_PROPERTY(double ioWaitShare READ ioWaitShare NOTIFY changed)
    Q_PROPERTY(bool prefetch READ prefetch NOTIFY changed)
    Q_PROPERTY(bool directIo READ directIo NOTIFY changed)
    Q_PROPERTY(QString backend READ backend NOTIFY changed)
    Q_PROPERTY(QString readMode READ readMode NOTIFY changed)
    Q_PROPERTY(QString source READ source NOTIFY changed)
    Q_PROPERTY(int sessionTokens READ sessionTokens NOTIFY changed)
    // The placement plan beside the measured figures (plan_figures.h; engine/placement): the
    // expected hit rate and decode tok/s at the budget in force (-1: no estimate yet), where the
    // hit rate came from ("heat", "all fit", "none fit", ""), and the last answer's measured
    // decode tok/s (-1 before the first answer).
    Q_PROPERTY(double planHitRate READ planHitRate NOTIFY changed)
    Q_PROPERTY(QString planHitSource READ planHitSource NOTIFY changed)
    Q_PROPERTY(double planTokensPerSecond READ planTokensPerSecond NOTIFY changed)
    Q_PROPERTY(double measuredTokensPerSecond READ measuredTokensPerSecond NOTIFY changed)
    // The mirror on a second disk: in use, its folder, the share of mirrored experts it serves,
    // why it was switched off ("" while in use), and the bytes each disk served this session.
    Q_PROPERTY(bool mirrorActive READ mirrorActive NOTIFY changed)
    Q_PROPERTY(QString mirrorDir READ mirrorDir NOTIFY changed)
    Q_PROPERTY(double mirrorShare READ mirrorShare NOTIFY changed)
    Q_PROPERTY(QString mirrorProblem READ mirrorProblem NOTIFY changed)
    Q_PROPERTY(double primaryBytesSession READ primaryBytesSession NOTIFY changed)
    Q_PROPERTY(double mirrorBytesSession READ mirrorBytesSession NOTIFY changed)
    // The RAM bar's segments in order (pinned, cache, loading, free): [{key, name, share}] where
    // share = bytes / RAM budget; they add up to 1 when the allocation is within the budget.
    Q_PROPERTY(QVariantList ramSegments READ ramSegments NOTIFY changed)
public:
    // `requestBudget` / `requestPrefetch` reach the engine (EngineWorker's); null in tests that
    // only feed apply().
    explicit TierMonitor(QObject* parent = nullptr);
    void setRequests(std::function<void(uint64_t)> budget, std::function<void(bool)> prefetch);
    void setVramRequest(std::function<void(uint64_t)> vramBudget) {
        m_requestVram = std::move(vramBudget);
    }

    // A new status (from the 30 Hz sample); ignored when its serial was already applied. The
    // first status after a load (or with a lower serial) restarts the session.
    void apply(const TierStatus& s);
    Q_INVOKABLE void resetSession(); // figures "this session" count from now

    // Controls. Bytes are clamped to [minimumBudgetBytes, maximumBudgetBytes].
    Q_INVOKABLE void setBudgetBytes(double bytes);
    Q_INVOKABLE void setPrefetchEnabled(bool on);
    // The VRAM budget in bytes, with a GPU tier: above every routed expert it is every routed
    // expert; below one expert it still goes to the engine, which refuses it and says why (the
    // controller shows that in the banner, as the RAM budget's notices).
    Q_INVOKABLE void setVramBudgetBytes(double bytes);
    // The engine ran the VRAM budget request (applied or refused): nothing is asked any more.
    void vramRequestDone();

    TierRowsModel* rows() { return &m_rows; }
    QObject* rowsObject() { return &m_rows; }
    bool available() const { return m_now.streaming; }
    double budgetBytes() const { return double(m_now.residency.budgetBytes); }
    double minimumBudgetBytes() const { return double(m_now.minimumBudget); }
    double maximumBudgetBytes() const { return double(m_now.maximumBudget); }
    double allocatedBytes() const { return double(m_now.residency.allocatedBytes); }
    int totalExperts() const { return m_now.residency.totalExperts; }
    int pinnedExperts() const { return m_now.residency.pinnedExperts; }
    int pinCapacity() const { return m_now.pinCapacity; }
    int diskExperts() const { return m_now.residency.diskExperts; }
    bool vramAvailable() const { return m_now.streaming && m_now.residency.vramCapacity > 0; }
    int vramExperts() const { return m_now.residency.vramExperts; }
    int vramCapacity() const { return m_now.residency.vramCapacity; }
    double vramBytes() const { return double(m_now.residency.vramBytes); }
    double vramBudgetBytes() const { return double(m_now.residency.vramBudgetBytes); }
    double minimumVramBudgetBytes() const;
    double maximumVramBudgetBytes() const;
    double vramBudgetAskedBytes() const { return m_vramAsked; }
    double hitRateLast() const { return m_hitLast; }
    double hitRateSession() const { return m_hitSession; }
    double prefetchRecall() const { return m_recall; }
    double prefetchPrecision() const { return m_precision; }
    double mibPerTokenLast() const { return m_mibLast; }
    double mibPerTokenSession() const { return m_mibSession; }
    double mibPerPromptTokenSession() const { return m_mibPromptSession; }
    double ioWaitShare() const { return m_ioWait; }
    bool prefetch() const { return m_now.prefetch; }
    bool directIo() const { return m_now.directIo; }
    QString backend() const { return QString::fromStdString(m_now.backend); }
    QString readMode() const { return QString::fromStdString(m_now.readMode); }
    QString source() const { return QString::fromStdString(m_now.source); }
    int sessionTokens() const { return int(m_session.tokens); }
    double planHitRate() const { return m_now.plan.valid ? m_now.plan.hitRate : -1; }
    QString planHitSource() const { return QString::fromStdString(m_now.plan.hitSource); }
    double planTokensPerSecond() const {
        return m_now.plan.valid ? m_now.plan.tokensPerSecond : -1;
    }
    double measuredTokensPerSecond() const { return m_now.lastDecodeTokensPerSecond; }
    bool mirrorActive() const { return m_now.streaming && m_now.mirror.configured; }
    QString mirrorDir() const { return QString::fromStdString(m_now.mirror.dir); }
    double mirrorShare() const { return m_now.mirror.share; }
    QString mirrorProblem() const { return QString::fromStdString(m_now.mirror.problem); }
    double primaryBytesSession() const { return double(m_session.bytesReadPrimary); }
    double mirrorBytesSession() const { return double(m_session.bytesReadMirror); }
    QVariantList ramSegments() const;
    const TierStatus& status() const { return m_now; }

signals:
    void changed();

private:
    void recompute();

    TierRowsModel m_rows;
    TierStatus m_now;
    TierStatus m_base; // the status when the session started
    tiers::TierCounters m_session;
    std::function<void(uint64_t)> m_requestBudget;
    std::function<void(bool)> m_requestPrefetch;
    std::function<void(uint64_t)> m_requestVram;
    double m_hitLast = -1, m_hitSession = -1, m_recall = -1, m_precision = -1;
    double m_mibLast = -1, m_mibSession = -1, m_mibPromptSession = -1, m_ioWait = 0;
    double m_vramAsked = -1;
};

} // namespace coli::app
