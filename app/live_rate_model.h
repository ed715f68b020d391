#pragma once
// The live decode speed of the answer being written, for the Charts view: one row per sample of
// EngineController::liveTokensPerSecond (the engine thread's running average since the answer's
// first token, sampled at ~30 Hz), taken while an answer streams. The samples of the last answer
// stay until the next one starts, so its curve can still be read after it ended.
// Roles: seconds (since the answer was sent), tokensPerSecond.
// At most kMaxSamples rows: when full, every other sample is dropped (one model reset), so a long
// answer keeps its whole curve at a coarser step.
// Thread-safety: GUI thread only (QObject affinity).
#include <QAbstractListModel>
#include <QElapsedTimer>
#include <QPointF>
#include <QVariantList>
#include <QVector>

namespace coli::app {

class EngineController;

class LiveRateModel : public QAbstractListModel {
    Q_OBJECT
    Q_PROPERTY(int count READ rowCount NOTIFY countChanged)
    Q_PROPERTY(bool streaming READ streaming NOTIFY streamingChanged)
    // The largest seconds and tok/s of the samples (0 when none): for the chart's axis ranges.
    Q_PROPERTY(double maxSeconds READ maxSeconds NOTIFY countChanged)
    Q_PROPERTY(double maxTokensPerSecond READ maxTokensPerSecond NOTIFY countChanged)
    // The newest sample's tok/s (0 when none).
    Q_PROPERTY(double latest READ latest NOTIFY countChanged)
public:
    enum Role { SecondsRole = Qt::UserRole + 1, TokensPerSecondRole };
    Q_ENUM(Role)
    static constexpr int kMaxSamples = 1200;

    explicit LiveRateModel(QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;

    // An answer starts: the samples of the previous one are dropped; streaming becomes true.
    void start();
    // Appends a sample (seconds since start(), tok/s). Ignored when not streaming, when the rate
    // is not a positive finite number, or when `seconds` goes back in time.
    void add(double seconds, double tokensPerSecond);
    // The answer ended: streaming becomes false, the samples stay.
    void stop();
    // Drops every sample (New chat, another session); streaming becomes false.
    void clear();
    // Samples EngineController's live tok/s while it generates (start/stop follow `generating`;
    // seconds come from a monotonic clock started with the answer).
    void follow(EngineController* controller);

    bool streaming() const { return m_streaming; }
    double maxSeconds() const { return m_maxSeconds; }
    double maxTokensPerSecond() const { return m_maxRate; }
    double latest() const { return m_samples.isEmpty() ? 0.0 : m_samples.last().rate; }
    // The samples as [{x: seconds, y: tok/s}] (what a chart series appends).
    Q_INVOKABLE QVariantList points() const;
    // One sample as a point (x: seconds, y: tok/s); (0, 0) for a row out of range.
    Q_INVOKABLE QPointF sample(int row) const;

signals:
    void countChanged();
    void streamingChanged();

private:
    struct Sample {
        double seconds;
        double rate;
    };
    void setStreaming(bool on);
    void thin();

    QVector<Sample> m_samples;
    double m_maxSeconds = 0, m_maxRate = 0;
    bool m_streaming = false;
    QElapsedTimer m_clock; // since the followed answer started
};

} // namespace coli::app
