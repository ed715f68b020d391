#pragma once
// The Brain's cells in one draw (issue 12): a QQuickItem with a single scene-graph geometry node,
// two triangles per (layer, expert) cell with per-vertex colours (QSGVertexColorMaterial). Qt
// uploads a geometry's whole vertex buffer when it is marked dirty, so the item keeps the vertex
// table on the CPU (the QSGGeometry's own), rewrites only the cells whose Visual changed
// (BrainCells::advance) and marks the geometry dirty at most once per frame. The geometry is
// rebuilt only when the shape or the item's size changes (or the user pins outgrow the pool of
// mark quads, which then doubles).
// Coordinates: the sheet (brain_sheet.h) scaled uniformly to fit the item, centred.
// Thread-safety: a QQuickItem: properties on the GUI thread; updatePaintNode on the render
// thread while the GUI thread is blocked (the only place the vertex table is written).
#include "brain_monitor.h"
#include "brain_sheet.h"

#include <QColor>
#include <QPointer>
#include <QQuickItem>
#include <QRectF>
#include <QSGGeometry>
#include <QVariantList>

#include <atomic>
#include <optional>

namespace coli::app {

class BrainItem : public QQuickItem {
    Q_OBJECT
    Q_PROPERTY(QObject* monitor READ monitorObject WRITE setMonitorObject NOTIFY monitorChanged)
    Q_PROPERTY(bool dark READ dark WRITE setDark NOTIFY darkChanged)
    // Layer labels in item coordinates: [{text, x, y, dense}], every `labelStep`-th layer.
    Q_PROPERTY(QVariantList layerLabels READ layerLabels NOTIFY layoutChanged)
    // The gap between layers in pixels (the room for a label), and the sheet's background colour
    // (the palette's, for the theme).
    Q_PROPERTY(double gapPixels READ gapPixels NOTIFY layoutChanged)
    Q_PROPERTY(QColor sheetColor READ sheetColor NOTIFY darkChanged)
    // The sheet's drawn area in item coordinates.
    Q_PROPERTY(QRectF sheetRect READ sheetRect NOTIFY layoutChanged)
    // Counters for tests and benchmarks (read on the GUI thread between frames):
    Q_PROPERTY(double rewrittenCells READ rewrittenCells NOTIFY framed) // cells rewritten, total
    Q_PROPERTY(int lastRewritten READ lastRewritten NOTIFY framed)      // in the last frame
    Q_PROPERTY(int geometryBuilds READ geometryBuilds NOTIFY framed)    // full rebuilds
    Q_PROPERTY(int frames READ frames NOTIFY framed)                    // updatePaintNode calls
public:
    explicit BrainItem(QQuickItem* parent = nullptr);

    QObject* monitorObject() const { return m_monitor; }
    void setMonitorObject(QObject* m);
    bool dark() const { return m_dark; }
    void setDark(bool d);
    QVariantList layerLabels() const;
    QRectF sheetRect() const;
    double gapPixels() const { return m_sheet ? m_sheet->layerGap() * m_scale : 0; }
    QColor sheetColor() const;

    // The cell under (x, y) (item coordinates): {layer, expert}, or an empty map.
    Q_INVOKABLE QVariantMap cellAt(double x, double y) const;
    // The cell's rectangle in item coordinates (an empty rect when it has none).
    Q_INVOKABLE QRectF cellRect(int layer, int expert) const;
    // Resets the counters (tests).
    Q_INVOKABLE void resetCounters();

    double rewrittenCells() const { return double(m_rewritten.load()); }
    int lastRewritten() const { return m_lastRewritten.load(); }
    int geometryBuilds() const { return m_builds.load(); }
    int frames() const { return m_frames.load(); }
    // Nanoseconds the last updatePaintNode took (GUI thread blocked; the benchmark's figure).
    qint64 lastSyncNanos() const { return m_syncNanos.load(); }

signals:
    void monitorChanged();
    void darkChanged();
    void layoutChanged();
    void framed(); // a frame's updatePaintNode ran (queued to the GUI thread)

protected:
    QSGNode* updatePaintNode(QSGNode* old, UpdatePaintNodeData*) override;
    void geometryChange(const QRectF& newGeometry, const QRectF& oldGeometry) override;

private:
    void relayout();
    // The pixels (item coordinates) a cell's quad covers: size 1 = the cell, snapped to whole
    // pixels; size < 1 = a centred mark of that share of the cell.
    QRectF drawnRect(const SheetRect& r, float size) const;
    // Positions a quad's 4 vertices on `r` (sheet units), scaled by `size` about its centre.
    void placeQuad(QSGGeometry::ColoredPoint2D* p, const SheetRect& r, float size) const;

    QPointer<BrainMonitor> m_monitor;
    bool m_dark = false;
    std::optional<BrainSheet> m_sheet; // GUI thread writes it only in relayout(); read in sync
    float m_scale = 1, m_dx = 0, m_dy = 0;
    bool m_rebuild = true;   // the geometry must be rebuilt at the next sync
    bool m_recolour = false; // every cell's colour must be rewritten (theme change)
    std::atomic<qint64> m_rewritten{0};
    std::atomic<int> m_lastRewritten{0}, m_builds{0}, m_frames{0};
    std::atomic<qint64> m_syncNanos{0};
    std::vector<int> m_changed; // scratch of updatePaintNode
    std::vector<int> m_slot;    // quad of each ExpertMap index (-1: not drawn); with the geometry
    std::vector<uint8_t> m_pinned; // per index: drawn with a user-pin mark
    std::vector<int> m_marks;      // the user-pinned indices, in order
    std::vector<Rgba8> m_lut; // colour by (state, heat level, flash level); see updatePaintNode
    int m_lutCeiling = -1;
    bool m_lutDark = false;
    int m_markCap = 0, m_firstBand = 0, m_firstMark = 0; // quad ranges of the geometry
};

// Registers BrainItem with QML as Colibri.Native 1.0 "BrainCells" (once per process).
void registerBrainTypes();

} // namespace coli::app
