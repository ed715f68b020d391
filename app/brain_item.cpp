#include "brain_item.h"

#include <QElapsedTimer>
#include <QQuickWindow>
#include <QSGGeometryNode>
#include <QSGVertexColorMaterial>
#include <QtQml/qqml.h>

#include <algorithm>
#include <cmath>

namespace coli::app {

namespace {
// The vertex slot of each ExpertMap index (-1: a dense layer's entry, not drawn). Rebuilt with
// the geometry, read in the same sync.
void writeColour(QSGGeometry::ColoredPoint2D* quad, Rgba8 c) {
    for (int i = 0; i < 4; ++i) {
        quad[i].r = c.r;
        quad[i].g = c.g;
        quad[i].b = c.b;
        quad[i].a = c.a;
    }
}
} // namespace

BrainItem::BrainItem(QQuickItem* parent) : QQuickItem(parent) {
    setFlag(ItemHasContents, true);
}

void BrainItem::setMonitorObject(QObject* m) {
    auto* monitor = qobject_cast<BrainMonitor*>(m);
    if (monitor == m_monitor) return;
    if (m_monitor) disconnect(m_monitor, nullptr, this, nullptr);
    m_monitor = monitor;
    if (m_monitor) {
        connect(m_monitor, &BrainMonitor::changed, this, &QQuickItem::update);
        connect(m_monitor, &BrainMonitor::shapeChanged, this, &BrainItem::relayout);
    }
    relayout();
    emit monitorChanged();
}

void BrainItem::setDark(bool d) {
    if (d == m_dark) return;
    m_dark = d;
    m_recolour = true;
    emit darkChanged();
    update();
}

void BrainItem::geometryChange(const QRectF& newGeometry, const QRectF& oldGeometry) {
    QQuickItem::geometryChange(newGeometry, oldGeometry);
    if (newGeometry.size() != oldGeometry.size()) relayout();
}

void BrainItem::itemChange(ItemChange change, const ItemChangeData& value) {
    QQuickItem::itemChange(change, value);
    if (change != ItemSceneChange) return;
    disconnect(m_animConn);
    // Cells still fading need the next frame: asked for once per frame while any fades.
    if (value.window)
        m_animConn = connect(value.window, &QQuickWindow::afterAnimating, this,
                             &BrainItem::onAfterAnimating);
}

void BrainItem::onAfterAnimating() {
    if (m_monitor && m_monitor->cells().fadingCells() > 0) update();
}

void BrainItem::relayout() {
    m_sheet.reset();
    if (m_monitor && m_monitor->available() && width() > 1 && height() > 1)
        m_sheet = BrainSheet::make(m_monitor->shapeMap(), width() / height());
    if (m_sheet) {
        m_scale = float(std::min(width() / m_sheet->width(), height() / m_sheet->height()));
        m_dx = float((width() - m_sheet->width() * m_scale) / 2);
        m_dy = 0;
    }
    m_rebuild = true;
    emit layoutChanged();
    update();
}

QRectF BrainItem::sheetRect() const {
    if (!m_sheet) return {};
    return {m_dx, m_dy, m_sheet->width() * m_scale, m_sheet->height() * m_scale};
}

QVariantList BrainItem::layerLabels() const {
    QVariantList out;
    if (!m_sheet) return out;
    const std::vector<SheetLabel>& labels = m_sheet->labels();
    // The closest two labels of one column, in pixels: label every step-th layer so that
    // labels are at least a line apart.
    float minGap = 1e9f;
    for (size_t i = 1; i < labels.size(); ++i)
        if (std::abs(labels[i].x - labels[i - 1].x) < 1e-3f)
            minGap = std::min(minGap, std::abs(labels[i].y - labels[i - 1].y) * m_scale);
    int step = 1;
    for (const int s : {1, 2, 5, 10, 20, 50, 100}) {
        step = s;
        if (minGap * float(s) >= 14.f) break;
    }
    for (const SheetLabel& l : labels) {
        if (l.layer % step != 0) continue;
        out.append(QVariantMap{{"text", QString::number(l.layer)},
                               {"x", m_dx + l.x * m_scale},
                               {"y", m_dy + l.y * m_scale},
                               {"dense", l.dense}});
    }
    return out;
}

QVariantMap BrainItem::cellAt(double x, double y) const {
    if (!m_sheet || m_scale <= 0) return {};
    const int c = m_sheet->pick(float((x - m_dx) / m_scale), float((y - m_dy) / m_scale));
    if (c < 0) return {};
    return {{"layer", c / m_sheet->nExperts()}, {"expert", c % m_sheet->nExperts()}};
}

QRectF BrainItem::cellRect(int layer, int expert) const {
    if (!m_sheet || layer < 0 || expert < 0 || layer >= m_sheet->nLayers() ||
        expert >= m_sheet->nExperts())
        return {};
    const SheetRect& r = m_sheet->cells()[size_t(layer) * m_sheet->nExperts() + expert];
    if (r.w <= 0) return {};
    return {m_dx + r.x * m_scale, m_dy + r.y * m_scale, r.w * m_scale, r.h * m_scale};
}

void BrainItem::resetCounters() {
    m_rewritten = 0;
    m_lastRewritten = 0;
    m_builds = 0;
    m_frames = 0;
}

QSGNode* BrainItem::updatePaintNode(QSGNode* old, UpdatePaintNodeData*) {
    QElapsedTimer timer;
    timer.start();
    auto* node = static_cast<QSGGeometryNode*>(old);
    if (!m_monitor || !m_sheet) {
        delete node;
        return nullptr;
    }
    const BrainSheet& sheet = *m_sheet;
    BrainCells& cells = m_monitor->cells();
    if (cells.cellCount() != int(sheet.cells().size())) { // a new shape: the sheet follows
        delete node;
        return nullptr;
    }
    m_changed.clear();
    bool full = cells.advance(m_monitor->now(), &m_changed);

    if (!node || m_rebuild) {
        if (!node) {
            node = new QSGGeometryNode;
            node->setMaterial(new QSGVertexColorMaterial);
            node->setFlags(QSGNode::OwnsMaterial | QSGNode::OwnsGeometry);
        }
        int drawn = 0;
        for (const SheetRect& r : sheet.cells())
            drawn += r.w > 0;
        const int quads = drawn + int(sheet.denseBands().size());
        auto* g = new QSGGeometry(QSGGeometry::defaultAttributes_ColoredPoint2D(), 4 * quads,
                                  6 * quads, QSGGeometry::UnsignedIntType);
        g->setDrawingMode(QSGGeometry::DrawTriangles);
        g->setVertexDataPattern(QSGGeometry::DynamicPattern);
        g->setIndexDataPattern(QSGGeometry::StaticPattern);
        auto* v = g->vertexDataAsColoredPoint2D();
        auto* idx = g->indexDataAsUInt();
        m_slot.assign(sheet.cells().size(), -1);
        int q = 0;
        auto quad = [&](const SheetRect& r, Rgba8 c) {
            const float x0 = m_dx + r.x * m_scale, y0 = m_dy + r.y * m_scale;
            const float x1 = x0 + r.w * m_scale, y1 = y0 + r.h * m_scale;
            QSGGeometry::ColoredPoint2D* p = v + 4 * q;
            p[0].set(x0, y0, c.r, c.g, c.b, c.a);
            p[1].set(x1, y0, c.r, c.g, c.b, c.a);
            p[2].set(x0, y1, c.r, c.g, c.b, c.a);
            p[3].set(x1, y1, c.r, c.g, c.b, c.a);
            const unsigned b = unsigned(4 * q);
            unsigned* t = idx + 6 * q;
            t[0] = b;
            t[1] = b + 1;
            t[2] = b + 2;
            t[3] = b + 2;
            t[4] = b + 1;
            t[5] = b + 3;
            ++q;
        };
        for (size_t c = 0; c < sheet.cells().size(); ++c)
            if (sheet.cells()[c].w > 0) {
                m_slot[c] = q;
                quad(sheet.cells()[c], Rgba8{});
            }
        for (const SheetRect& r : sheet.denseBands())
            quad(r, denseBandColour(m_dark));
        node->setGeometry(g);
        m_rebuild = false;
        full = true;
        ++m_builds;
    }
    if (m_recolour && !full) {
        // The theme changed: every cell's colour (and the dense bands').
        auto* v = node->geometry()->vertexDataAsColoredPoint2D();
        int q = int(std::count_if(m_slot.begin(), m_slot.end(), [](int s) { return s >= 0; }));
        for (size_t i = 0; i < sheet.denseBands().size(); ++i)
            writeColour(v + 4 * (q + int(i)), denseBandColour(m_dark));
        full = true;
    }
    m_recolour = false;

    auto* v = node->geometry()->vertexDataAsColoredPoint2D();
    auto colour = [&](int c) {
        const BrainCells::Visual& vis = cells.visual(c);
        return cellColour(vis.state, cells.heat(vis), BrainCells::flash(vis), m_dark);
    };
    int written = 0;
    if (full) {
        for (size_t c = 0; c < m_slot.size(); ++c)
            if (m_slot[c] >= 0) {
                writeColour(v + 4 * m_slot[c], colour(int(c)));
                ++written;
            }
    } else {
        for (const int c : m_changed)
            if (m_slot[size_t(c)] >= 0) {
                writeColour(v + 4 * m_slot[size_t(c)], colour(c));
                ++written;
            }
    }
    if (written > 0) node->markDirty(QSGNode::DirtyGeometry); // once per frame at most
    m_rewritten += written;
    m_lastRewritten = written;
    ++m_frames;
    m_syncNanos = timer.nsecsElapsed();
    QMetaObject::invokeMethod(this, &BrainItem::framed, Qt::QueuedConnection);
    return node;
}

void registerBrainTypes() {
    static bool done = false;
    if (done) return;
    done = true;
    qmlRegisterType<BrainItem>("Colibri.Native", 1, 0, "BrainCells");
}

} // namespace coli::app
