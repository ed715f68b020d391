#pragma once
// The Charts view's data (docs/app.md "Charts"): one row per answered turn of the conversation
// shown, in the order the answers ended, from the session's runs (storage/session_types.h
// RunRecord): filled when a session is opened (its runs read from the database, so it is the same
// after a restart) and appended at each answer's end; emptied by New chat or another model. The
// live tok/s of the answer being written is the separate `live` model (LiveRateModel).
// Roles and definitions (counters of the turn, RunRecord::tiers):
//   turn                1, 2, ... (the answer's place in the session's runs)
//   tokens              generated tokens
//   tokensPerSecond     decode speed, tokens per second
//   ttft                time to the first answer token, seconds
//   tiered              true when experts were routed through the tiers (false: all resident)
//   hitVram             hitsVram / routed                (found in VRAM, computed on the GPU)
//   hitPinned           hitsPinned / routed              (found in the pinned hot-store)
//   hitCache            (hitsCache - inFlightHits) / routed (found ready in the cache)
//   hitInFlight         inFlightHits / routed            (still being read by a prefetch)
//   hitDisk             misses / routed                  (read from disk on demand)
//                       the five add up to 1 when tiered, all 0 otherwise (as TierMonitor)
//   hitRate             hitVram + hitPinned + hitCache: found ready in VRAM or RAM
//   mibPerToken         MiB of experts read per decode step (RunRecord::mibReadPerDecodeToken:
//                       the prompt's prefill apart; runs saved before it was stored: per token of
//                       the whole turn)
//   attentionShare, expertFfnShare, expertWaitShare, samplingShare, otherShare
//                       shares of the engine thread's wall time during the turn; they add up to
//                       1 (all 0 when no time was measured)
// Thread-safety: GUI thread only (QObject affinity).
#include "live_rate_model.h"
#include "storage/session_types.h"

#include <QAbstractListModel>
#include <QVariantList>
#include <QVariantMap>
#include <QVector>

namespace coli::app {

class EngineController;
class SessionManager;

class TurnStatsModel : public QAbstractListModel {
    Q_OBJECT
    Q_PROPERTY(int count READ rowCount NOTIFY countChanged)
    Q_PROPERTY(QObject* live READ liveObject CONSTANT)
    // The largest value of each over the rows (0 when none): for the charts' axis ranges.
    Q_PROPERTY(double maxTokensPerSecond READ maxTokensPerSecond NOTIFY countChanged)
    Q_PROPERTY(double maxTtft READ maxTtft NOTIFY countChanged)
    Q_PROPERTY(double maxMibPerToken READ maxMibPerToken NOTIFY countChanged)
    // True when some turn routed experts through the tiers; vram: when some turn's experts were
    // computed on the GPU (the VRAM tier, docs/gpu.md).
    Q_PROPERTY(bool tiered READ tiered NOTIFY countChanged)
    Q_PROPERTY(bool vram READ vram NOTIFY countChanged)
public:
    enum Role {
        TurnRole = Qt::UserRole + 1,
        TokensRole,
        TokensPerSecondRole,
        TtftRole,
        TieredRole,
        HitPinnedRole,
        HitCacheRole,
        HitInFlightRole,
        HitDiskRole,
        HitRateRole,
        MibPerTokenRole,
        AttentionShareRole,
        ExpertFfnShareRole,
        ExpertWaitShareRole,
        SamplingShareRole,
        OtherShareRole,
        HitVramRole,
    };
    Q_ENUM(Role)

    // One row's values (see the definitions above).
    struct Turn {
        int turn = 0;
        qint64 tokens = 0;
        double tokensPerSecond = 0, ttft = 0;
        bool tiered = false;
        double hitVram = 0, hitPinned = 0, hitCache = 0, hitInFlight = 0, hitDisk = 0;
        double mibPerToken = 0;
        double attention = 0, expertFfn = 0, expertWait = 0, sampling = 0, other = 0;
        double hitRate() const { return hitVram + hitPinned + hitCache; }
    };
    // The row of run `r`, numbered `turn`.
    static Turn turnOf(const storage::RunRecord& r, int turn);

    explicit TurnStatsModel(QObject* parent = nullptr);
    // Follows `sessions` (runsLoaded, runAdded, conversationCleared) and the live tok/s of
    // `controller` (either may be null).
    TurnStatsModel(SessionManager* sessions, EngineController* controller,
                   QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;

    // Replaces the rows with `runs` (one reset), numbered from 1. Leaves `live` alone unless an
    // answer is not streaming (then its samples belong to another conversation: cleared).
    void setRuns(const QVector<storage::RunRecord>& runs);
    // Appends the row of an answer that just ended (one insert).
    void appendRun(const storage::RunRecord& run);
    // No rows (and no live samples).
    void clear();

    const Turn& at(int row) const { return m_rows[row]; }
    LiveRateModel* live() { return &m_live; }
    QObject* liveObject() { return &m_live; }
    double maxTokensPerSecond() const { return m_maxRate; }
    double maxTtft() const { return m_maxTtft; }
    double maxMibPerToken() const { return m_maxMib; }
    bool tiered() const { return m_tiered; }
    bool vram() const { return m_vram; }

    // For QML charts: the values of the role named `role` (e.g. "ttft"), one per row in order;
    // an empty list for an unknown name.
    Q_INVOKABLE QVariantList column(const QString& role) const;
    // One row as {roleName: value}; empty for a row out of range.
    Q_INVOKABLE QVariantMap get(int row) const;

signals:
    void countChanged();

private:
    void recomputeMaxima();
    QVariant value(const Turn& t, int role) const;

    QVector<Turn> m_rows;
    LiveRateModel m_live;
    double m_maxRate = 0, m_maxTtft = 0, m_maxMib = 0;
    bool m_tiered = false, m_vram = false;
};

} // namespace coli::app
