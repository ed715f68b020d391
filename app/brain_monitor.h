#pragma once
// The Brain view's data (issue 12, docs/visualisation.md "Brain view"): the engine's per-expert
// states and cumulative hits (TierStatus::experts, sampled at ~30 Hz with the tier status) turned
// into what each cell shows (BrainCells: hue = state, brightness = log heat, a flash for experts
// routed since the previous sample), the mode ("turn": hits since the current answer started;
// "cumulative": since the model was loaded), the hover details of one cell, and a click's pin
// request (userPinRequested, wired to the engine's user pins).
// Fed by EngineController (the tier status) or by the synthetic generator (SyntheticDriver).
// The Brain item (brain_item.h) draws it and advances the cells once per frame.
// Thread-safety: GUI thread only (QObject affinity); the item reads it in updatePaintNode while
// the GUI thread is blocked (Qt Quick's sync phase).
#include "brain_cells.h"
#include "tier_status.h"

#include <QColor>
#include <QElapsedTimer>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QVariantMap>

#include <functional>
#include <vector>

namespace coli::app {

class BrainMonitor : public QObject {
    Q_OBJECT
    // The snapshot has per-expert telemetry (a model whose experts stream, or the generator).
    Q_PROPERTY(bool available READ available NOTIFY shapeChanged)
    Q_PROPERTY(int nLayers READ nLayers NOTIFY shapeChanged)
    Q_PROPERTY(int nExperts READ nExperts NOTIFY shapeChanged)
    // "turn" or "cumulative".
    Q_PROPERTY(QString mode READ mode WRITE setMode NOTIFY modeChanged)
    // Fed by the synthetic generator (--synthetic-telemetry), not the engine.
    Q_PROPERTY(bool synthetic READ synthetic NOTIFY shapeChanged)
    Q_PROPERTY(int snapshots READ snapshots NOTIFY changed) // snapshots applied
    Q_PROPERTY(bool topicsAvailable READ topicsAvailable NOTIFY topicsChanged)
public:
    explicit BrainMonitor(QObject* parent = nullptr);

    // A new status (the 30 Hz sample); ignored when its serial was already applied. O(cells).
    void apply(const TierStatus& s);
    // An answer started: "this turn" counts from here.
    Q_INVOKABLE void startTurn();
    // The engine's samples are ignored from now on (the synthetic generator feeds apply()).
    void setSynthetic(bool on);
    bool synthetic() const { return m_synthetic; }

    bool available() const { return m_cells.cellCount() > 0; }
    int nLayers() const { return m_cells.nLayers(); }
    int nExperts() const { return m_cells.nExperts(); }
    QString mode() const;
    void setMode(const QString& m);
    int snapshots() const { return m_snapshots; }

    // The hover panel's details of (layer, expert): {layer, expert, state ("vram", "pinned",
    // "cached", "loading", "disk", "none"), stateName, userPin, heat (0..1), hits (the mode's),
    // turnHits, totalHits, bytes (read from disk per expert), topics: [{label, share}] (top 3,
    // shares in [0, 1]; empty without a topic probe)}. Empty map when out of range.
    Q_INVOKABLE QVariantMap cellInfo(int layer, int expert) const;
    // A click on a cell: asks for a user pin (or unpin) of (layer, expert).
    Q_INVOKABLE void requestPin(int layer, int expert);
    // The legend's swatches: `key` is a state ("vram", "pinned", "cached", "loading", "disk",
    // "user") at heat 0..1 and flash 0..1, for the light or dark theme (viz palette, via
    // brain_sheet.h).
    Q_INVOKABLE QColor swatch(const QString& key, double heat, double flash, bool dark) const;
    // The mark drawn in the middle of a user-pinned cell.
    Q_INVOKABLE QColor userPinMark(bool dark) const;

    // Topic shares from the topic probe: shares[(layer * nExperts + expert) * labels.size() + t],
    // each expert's shares over the topics (summing to 1, or all 0 when never routed). An empty
    // `labels` removes them. Sizes that do not match the shape are refused (false).
    bool setTopicShares(std::vector<float> shares, QStringList labels);
    bool topicsAvailable() const { return !m_topicLabels.isEmpty(); }

    // The cells (the item advances them each frame) and the clock both use (seconds).
    BrainCells& cells() { return m_cells; }
    const BrainCells& cells() const { return m_cells; }
    double now() const { return m_clock ? m_clock() : double(m_elapsed.nsecsElapsed()) * 1e-9; }
    // Tests: a clock of their own (seconds); null: the monotonic clock.
    void setClock(std::function<double()> clock) { m_clock = std::move(clock); }
    // The latest ExpertMap's shape, for the sheet (state bytes tell dense layers).
    const tiers::ExpertMap& shapeMap() const { return m_shape; }
    // Nanoseconds the last apply() took on the GUI thread (the benchmark's figure).
    qint64 lastApplyNanos() const { return m_applyNanos; }

signals:
    void changed();      // a snapshot was applied (cells may have changed)
    void shapeChanged(); // another model or the first snapshot with experts
    void modeChanged();
    void topicsChanged();
    void userPinRequested(int layer, int expert);

private:
    BrainCells m_cells;
    tiers::ExpertMap m_shape; // states of the first snapshot of this shape (hits dropped)
    uint64_t m_serial = 0;
    uint64_t m_expertReadBytes = 0;
    int m_snapshots = 0;
    bool m_synthetic = false;
    std::vector<float> m_topicShares;
    QStringList m_topicLabels;
    QElapsedTimer m_elapsed;
    std::function<double()> m_clock;
    qint64 m_applyNanos = 0;
};

} // namespace coli::app
