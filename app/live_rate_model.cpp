#include "live_rate_model.h"

#include "engine_controller.h"

#include <QVariantMap>

#include <cmath>

namespace coli::app {

LiveRateModel::LiveRateModel(QObject* parent) : QAbstractListModel(parent) {}

int LiveRateModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(m_samples.size());
}

QVariant LiveRateModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const Sample& s = m_samples[index.row()];
    switch (role) {
    case SecondsRole:
        return s.seconds;
    case TokensPerSecondRole:
        return s.rate;
    default:
        return {};
    }
}

QHash<int, QByteArray> LiveRateModel::roleNames() const {
    return {{SecondsRole, "seconds"}, {TokensPerSecondRole, "tokensPerSecond"}};
}

void LiveRateModel::start() {
    clear();
    setStreaming(true);
}

void LiveRateModel::add(double seconds, double tokensPerSecond) {
    if (!m_streaming || !std::isfinite(tokensPerSecond) || tokensPerSecond <= 0 ||
        !std::isfinite(seconds) || (!m_samples.isEmpty() && seconds < m_samples.last().seconds))
        return;
    if (m_samples.size() >= kMaxSamples) thin();
    const int row = int(m_samples.size());
    beginInsertRows({}, row, row);
    m_samples.append({seconds, tokensPerSecond});
    m_maxSeconds = std::max(m_maxSeconds, seconds);
    m_maxRate = std::max(m_maxRate, tokensPerSecond);
    endInsertRows();
    emit countChanged();
}

void LiveRateModel::thin() {
    // Keeps the even rows (the first sample stays); the maxima are recomputed over what is kept.
    beginResetModel();
    QVector<Sample> kept;
    kept.reserve(m_samples.size() / 2 + 1);
    for (qsizetype i = 0; i < m_samples.size(); i += 2)
        kept.append(m_samples[i]);
    m_samples = std::move(kept);
    m_maxSeconds = m_maxRate = 0;
    for (const Sample& s : m_samples) {
        m_maxSeconds = std::max(m_maxSeconds, s.seconds);
        m_maxRate = std::max(m_maxRate, s.rate);
    }
    endResetModel();
}

void LiveRateModel::stop() {
    setStreaming(false);
}

void LiveRateModel::clear() {
    setStreaming(false);
    if (m_samples.isEmpty()) return;
    beginResetModel();
    m_samples.clear();
    m_maxSeconds = m_maxRate = 0;
    endResetModel();
    emit countChanged();
}

void LiveRateModel::setStreaming(bool on) {
    if (on == m_streaming) return;
    m_streaming = on;
    emit streamingChanged();
}

QVariantList LiveRateModel::points() const {
    QVariantList out;
    out.reserve(m_samples.size());
    for (const Sample& s : m_samples)
        out.append(QVariantMap{{QStringLiteral("x"), s.seconds}, {QStringLiteral("y"), s.rate}});
    return out;
}

QPointF LiveRateModel::sample(int row) const {
    if (row < 0 || row >= m_samples.size()) return {};
    return {m_samples[row].seconds, m_samples[row].rate};
}

void LiveRateModel::follow(EngineController* controller) {
    connect(controller, &EngineController::generatingChanged, this, [this, controller] {
        if (controller->generating()) {
            m_clock.start();
            start();
        } else {
            stop();
        }
    });
    connect(controller, &EngineController::liveTokensPerSecondChanged, this, [this, controller] {
        if (controller->generating() && m_clock.isValid())
            add(double(m_clock.nsecsElapsed()) / 1e9, controller->liveTokensPerSecond());
    });
}

} // namespace coli::app
