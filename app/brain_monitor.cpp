#include "brain_monitor.h"

#include "brain_sheet.h"

#include <algorithm>
#include <numeric>

namespace coli::app {

namespace {
QString stateKey(uint8_t s) {
    switch (tiers::ExpertState(s & tiers::kExpertStateMask)) {
    case tiers::ExpertState::Vram:
        return QStringLiteral("vram");
    case tiers::ExpertState::Pinned:
        return QStringLiteral("pinned");
    case tiers::ExpertState::Cached:
        return QStringLiteral("cached");
    case tiers::ExpertState::Loading:
        return QStringLiteral("loading");
    case tiers::ExpertState::Disk:
        return QStringLiteral("disk");
    default:
        return QStringLiteral("none");
    }
}
} // namespace

BrainMonitor::BrainMonitor(QObject* parent) : QObject(parent) {
    m_elapsed.start();
}

void BrainMonitor::apply(const TierStatus& s) {
    if (s.serial == m_serial) return;
    QElapsedTimer t;
    t.start();
    m_serial = s.serial;
    m_expertReadBytes = s.expertReadBytes;
    const int layers = m_cells.nLayers(), experts = m_cells.nExperts();
    m_cells.ingest(s.experts, now());
    const bool reshaped = m_cells.nLayers() != layers || m_cells.nExperts() != experts;
    if (reshaped) {
        m_shape.nLayers = s.experts.nLayers;
        m_shape.nExperts = s.experts.nExperts;
        m_shape.state = m_cells.cellCount() > 0 ? s.experts.state : std::vector<uint8_t>{};
        m_shape.hits.clear();
        if (m_topicShares.size() !=
            size_t(m_cells.cellCount()) * size_t(std::max<qsizetype>(1, m_topicLabels.size()))) {
            m_topicShares.clear();
            m_topicLabels.clear();
            emit topicsChanged();
        }
    }
    ++m_snapshots;
    m_applyNanos = t.nsecsElapsed();
    if (reshaped) emit shapeChanged();
    emit changed();
}

void BrainMonitor::startTurn() {
    m_cells.startTurn();
    emit changed();
}

void BrainMonitor::setSynthetic(bool on) {
    if (on == m_synthetic) return;
    m_synthetic = on;
    emit shapeChanged();
}

QString BrainMonitor::mode() const {
    return m_cells.mode() == BrainCells::Mode::Turn ? QStringLiteral("turn")
                                                    : QStringLiteral("cumulative");
}

void BrainMonitor::setMode(const QString& m) {
    const auto want =
        m == QLatin1String("turn") ? BrainCells::Mode::Turn : BrainCells::Mode::Cumulative;
    if (want == m_cells.mode()) return;
    m_cells.setMode(want);
    emit modeChanged();
    emit changed();
}

QVariantMap BrainMonitor::cellInfo(int layer, int expert) const {
    if (layer < 0 || expert < 0 || layer >= m_cells.nLayers() || expert >= m_cells.nExperts())
        return {};
    const int c = layer * m_cells.nExperts() + expert;
    const uint8_t s = m_cells.state(c);
    static const QMap<QString, QString> names = {
        {QStringLiteral("vram"), tr("In VRAM (GPU)")},
        {QStringLiteral("pinned"), tr("Pinned (hot-store)")},
        {QStringLiteral("cached"), tr("Cached")},
        {QStringLiteral("loading"), tr("Being read")},
        {QStringLiteral("disk"), tr("On disk")},
        {QStringLiteral("none"), tr("Dense layer")}};
    const QString key = stateKey(s);
    QVariantList topics;
    const qsizetype nt = m_topicLabels.size();
    if (nt > 0) {
        const float* shares = m_topicShares.data() + size_t(c) * size_t(nt);
        std::vector<int> order(static_cast<size_t>(nt));
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(),
                         [&](int a, int b) { return shares[a] > shares[b]; });
        for (size_t i = 0; i < std::min<size_t>(3, order.size()); ++i)
            if (shares[order[i]] > 0)
                topics.append(QVariantMap{{"label", m_topicLabels[order[i]]},
                                          {"share", double(shares[order[i]])}});
    }
    return {{"layer", layer},
            {"expert", expert},
            {"state", key},
            {"stateName", names.value(key)},
            {"userPin", bool(s & tiers::kUserPinFlag)},
            {"heat", double(BrainCells::heatLevel(m_cells.modeHits(c))) / m_cells.heatCeiling()},
            {"hits", double(m_cells.modeHits(c))},
            {"turnHits", double(m_cells.turnHits(c))},
            {"totalHits", double(m_cells.totalHits(c))},
            {"bytes", double(m_expertReadBytes)},
            {"topics", topics}};
}

void BrainMonitor::requestPin(int layer, int expert) {
    if (layer < 0 || expert < 0 || layer >= m_cells.nLayers() || expert >= m_cells.nExperts())
        return;
    if (m_cells.state(layer * m_cells.nExperts() + expert) == 0) return; // a dense layer
    emit userPinRequested(layer, expert);
}

QColor BrainMonitor::swatch(const QString& key, double heat, double flash, bool dark) const {
    uint8_t s = uint8_t(tiers::ExpertState::Disk);
    if (key == QLatin1String("vram")) s = uint8_t(tiers::ExpertState::Vram);
    if (key == QLatin1String("pinned")) s = uint8_t(tiers::ExpertState::Pinned);
    if (key == QLatin1String("cached")) s = uint8_t(tiers::ExpertState::Cached);
    if (key == QLatin1String("loading")) s = uint8_t(tiers::ExpertState::Loading);
    if (key == QLatin1String("user")) s = uint8_t(tiers::ExpertState::Pinned) | tiers::kUserPinFlag;
    const Rgba8 c = cellColour(s, heat, flash, dark);
    return QColor(c.r, c.g, c.b, c.a);
}

QColor BrainMonitor::userPinMark(bool dark) const {
    const Rgba8 c = userPinColour(dark);
    return QColor(c.r, c.g, c.b, c.a);
}

bool BrainMonitor::setTopicShares(std::vector<float> shares, QStringList labels) {
    if (!labels.isEmpty() && shares.size() != size_t(m_cells.cellCount()) * size_t(labels.size()))
        return false;
    m_topicShares = labels.isEmpty() ? std::vector<float>{} : std::move(shares);
    m_topicLabels = std::move(labels);
    emit topicsChanged();
    return true;
}

} // namespace coli::app
