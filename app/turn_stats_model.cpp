#include "turn_stats_model.h"

#include "place_shares.h"

#include "engine_controller.h"
#include "session_manager.h"

#include <algorithm>

namespace coli::app {

namespace {
double ratio(double part, double whole) {
    return whole > 0 ? part / whole : 0.0;
}
} // namespace

TurnStatsModel::Turn TurnStatsModel::turnOf(const storage::RunRecord& r, int turn) {
    Turn t;
    t.turn = turn;
    t.tokens = r.generatedTokens;
    t.tokensPerSecond = r.tokensPerSecond;
    t.ttft = r.ttftSeconds;
    const storage::RunTierCounters& c = r.tiers;
    const std::optional<PlaceShares> shares = placeShares(c);
    t.tiered = shares.has_value();
    if (shares) {
        t.hitVram = shares->vram;
        t.hitPinned = shares->pinned;
        t.hitCache = shares->cache;
        t.hitInFlight = shares->inFlight;
        t.hitDisk = shares->disk;
    }
    t.mibPerToken = r.mibReadPerDecodeToken();
    const storage::TimeSplit& s = r.split;
    const double total = s.attentionS + s.expertFfnS + s.expertWaitS + s.samplingS + s.otherS;
    t.attention = ratio(s.attentionS, total);
    t.expertFfn = ratio(s.expertFfnS, total);
    t.expertWait = ratio(s.expertWaitS, total);
    t.sampling = ratio(s.samplingS, total);
    t.other = ratio(s.otherS, total);
    return t;
}

TurnStatsModel::TurnStatsModel(QObject* parent) : QAbstractListModel(parent) {}

TurnStatsModel::TurnStatsModel(SessionManager* sessions, EngineController* controller,
                               QObject* parent)
    : TurnStatsModel(parent) {
    if (sessions) {
        connect(sessions, &SessionManager::runsLoaded, this, &TurnStatsModel::setRuns);
        connect(sessions, &SessionManager::runAdded, this, &TurnStatsModel::appendRun);
        connect(sessions, &SessionManager::conversationCleared, this, &TurnStatsModel::clear);
    }
    if (controller) m_live.follow(controller);
}

int TurnStatsModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(m_rows.size());
}

QHash<int, QByteArray> TurnStatsModel::roleNames() const {
    return {{TurnRole, "turn"},
            {TokensRole, "tokens"},
            {TokensPerSecondRole, "tokensPerSecond"},
            {TtftRole, "ttft"},
            {TieredRole, "tiered"},
            {HitVramRole, "hitVram"},
            {HitPinnedRole, "hitPinned"},
            {HitCacheRole, "hitCache"},
            {HitInFlightRole, "hitInFlight"},
            {HitDiskRole, "hitDisk"},
            {HitRateRole, "hitRate"},
            {MibPerTokenRole, "mibPerToken"},
            {AttentionShareRole, "attentionShare"},
            {ExpertFfnShareRole, "expertFfnShare"},
            {ExpertWaitShareRole, "expertWaitShare"},
            {SamplingShareRole, "samplingShare"},
            {OtherShareRole, "otherShare"}};
}

QVariant TurnStatsModel::value(const Turn& t, int role) const {
    switch (role) {
    case TurnRole:
        return t.turn;
    case TokensRole:
        return t.tokens;
    case TokensPerSecondRole:
        return t.tokensPerSecond;
    case TtftRole:
        return t.ttft;
    case TieredRole:
        return t.tiered;
    case HitVramRole:
        return t.hitVram;
    case HitPinnedRole:
        return t.hitPinned;
    case HitCacheRole:
        return t.hitCache;
    case HitInFlightRole:
        return t.hitInFlight;
    case HitDiskRole:
        return t.hitDisk;
    case HitRateRole:
        return t.hitRate();
    case MibPerTokenRole:
        return t.mibPerToken;
    case AttentionShareRole:
        return t.attention;
    case ExpertFfnShareRole:
        return t.expertFfn;
    case ExpertWaitShareRole:
        return t.expertWait;
    case SamplingShareRole:
        return t.sampling;
    case OtherShareRole:
        return t.other;
    default:
        return {};
    }
}

QVariant TurnStatsModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    return value(m_rows[index.row()], role);
}

void TurnStatsModel::setRuns(const QVector<storage::RunRecord>& runs) {
    if (!m_live.streaming()) m_live.clear();
    beginResetModel();
    m_rows.clear();
    m_rows.reserve(runs.size());
    for (const storage::RunRecord& r : runs)
        m_rows.append(turnOf(r, int(m_rows.size()) + 1));
    recomputeMaxima();
    endResetModel();
    emit countChanged();
}

void TurnStatsModel::appendRun(const storage::RunRecord& run) {
    const int row = int(m_rows.size());
    beginInsertRows({}, row, row);
    m_rows.append(turnOf(run, row + 1));
    const Turn& t = m_rows.last();
    m_maxRate = std::max(m_maxRate, t.tokensPerSecond);
    m_maxTtft = std::max(m_maxTtft, t.ttft);
    m_maxMib = std::max(m_maxMib, t.mibPerToken);
    m_tiered = m_tiered || t.tiered;
    m_vram = m_vram || t.hitVram > 0;
    endInsertRows();
    emit countChanged();
}

void TurnStatsModel::clear() {
    m_live.clear();
    if (m_rows.isEmpty()) return;
    beginResetModel();
    m_rows.clear();
    recomputeMaxima();
    endResetModel();
    emit countChanged();
}

void TurnStatsModel::recomputeMaxima() {
    m_maxRate = m_maxTtft = m_maxMib = 0;
    m_tiered = m_vram = false;
    for (const Turn& t : m_rows) {
        m_maxRate = std::max(m_maxRate, t.tokensPerSecond);
        m_maxTtft = std::max(m_maxTtft, t.ttft);
        m_maxMib = std::max(m_maxMib, t.mibPerToken);
        m_tiered = m_tiered || t.tiered;
        m_vram = m_vram || t.hitVram > 0;
    }
}

QVariantList TurnStatsModel::column(const QString& role) const {
    const int r = roleNames().key(role.toUtf8(), -1);
    if (r < 0) return {};
    QVariantList out;
    out.reserve(m_rows.size());
    for (const Turn& t : m_rows)
        out.append(value(t, r));
    return out;
}

QVariantMap TurnStatsModel::get(int row) const {
    if (row < 0 || row >= m_rows.size()) return {};
    QVariantMap out;
    const auto names = roleNames();
    for (auto it = names.begin(); it != names.end(); ++it)
        out.insert(QString::fromUtf8(it.value()), value(m_rows[row], it.key()));
    return out;
}

} // namespace coli::app
