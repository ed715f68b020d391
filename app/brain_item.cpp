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

void BrainItem::relayout() {
    m_sheet.reset();
    if (m_monitor && m_monitor->available() && width() > 1 && height() > 1)
        m_sheet = BrainSheet::make(m_monitor->shapeMap(), width() / height());
    if (m_sheet) {
        m_scale = float(std::min(width() / m_sheet->width(), height() / m_sheet->height()));
        m_dx = std::round(float((width() - m_sheet->width() * m_scale) / 2));
        m_dy = 0;
    }
    m_rebuild = true;
    emit layoutChanged();
    update();
}

QColor BrainItem::sheetColor() const {
    const Rgba8 c = sheetColour(m_dark);
    return QColor(c.r, c.g, c.b);
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
    return drawnRect(r, 1.0f);
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

    // User pins: a mark on the cell (kept in a pool of quads after the cells).
    bool marksChanged = full || m_recolour;
    auto pinned = [&](int c) {
        return uint8_t((cells.visual(c).state & tiers::kUserPinFlag) != 0);
    };
    if (m_pinned.size() != sheet.cells().size()) m_pinned.assign(sheet.cells().size(), 0);
    if (full) {
        for (size_t c = 0; c < m_pinned.size(); ++c)
            m_pinned[c] = pinned(int(c));
    } else {
        for (const int c : m_changed)
            if (pinned(c) != m_pinned[size_t(c)]) {
                m_pinned[size_t(c)] = pinned(c);
                marksChanged = true;
            }
    }
    if (marksChanged) {
        m_marks.clear();
        for (size_t c = 0; c < m_pinned.size(); ++c)
            if (m_pinned[c]) m_marks.push_back(int(c));
    }

    int drawn = 0;
    if (!node || m_rebuild || int(m_marks.size()) > m_markCap) {
        if (!node) {
            node = new QSGGeometryNode;
            node->setMaterial(new QSGVertexColorMaterial);
            node->setFlags(QSGNode::OwnsMaterial | QSGNode::OwnsGeometry);
        }
        for (const SheetRect& r : sheet.cells())
            drawn += r.w > 0;
        m_markCap = std::max(64, int(2 * m_marks.size()));
        m_firstBand = drawn;
        m_firstMark = drawn + int(sheet.denseBands().size());
        const int quads = m_firstMark + m_markCap;
        auto* g = new QSGGeometry(QSGGeometry::defaultAttributes_ColoredPoint2D(), 4 * quads,
                                  6 * quads, QSGGeometry::UnsignedIntType);
        g->setDrawingMode(QSGGeometry::DrawTriangles);
        g->setVertexDataPattern(QSGGeometry::DynamicPattern);
        g->setIndexDataPattern(QSGGeometry::StaticPattern);
        auto* idx = g->indexDataAsUInt();
        for (int q = 0; q < quads; ++q) {
            const unsigned b = unsigned(4 * q);
            unsigned* t = idx + 6 * q;
            t[0] = b;
            t[1] = b + 1;
            t[2] = b + 2;
            t[3] = b + 2;
            t[4] = b + 1;
            t[5] = b + 3;
        }
        auto* v = g->vertexDataAsColoredPoint2D();
        m_slot.assign(sheet.cells().size(), -1);
        int q = 0;
        for (size_t c = 0; c < sheet.cells().size(); ++c)
            if (sheet.cells()[c].w > 0) {
                m_slot[c] = q;
                placeQuad(v + 4 * q++, sheet.cells()[c], 1.0f);
            }
        for (const SheetRect& r : sheet.denseBands()) {
            const float x0 = std::round(m_dx + r.x * m_scale),
                        y0 = std::round(m_dy + r.y * m_scale);
            QSGGeometry::ColoredPoint2D* p = v + 4 * q++;
            const float x1 = std::round(m_dx + (r.x + r.w) * m_scale);
            const float y1 = std::max(y0 + 1, std::round(m_dy + (r.y + r.h) * m_scale));
            p[0].set(x0, y0, 0, 0, 0, 255);
            p[1].set(x1, y0, 0, 0, 0, 255);
            p[2].set(x0, y1, 0, 0, 0, 255);
            p[3].set(x1, y1, 0, 0, 0, 255);
        }
        node->setGeometry(g);
        m_rebuild = false;
        full = true;
        marksChanged = true;
        m_recolour = true; // the bands' colours
        ++m_builds;
    }
    auto* v = node->geometry()->vertexDataAsColoredPoint2D();
    if (m_recolour) {
        for (int i = 0; i < int(sheet.denseBands().size()); ++i)
            writeColour(v + 4 * (m_firstBand + i), denseBandColour(m_dark));
        full = true;
    }
    m_recolour = false;

    // Colours through a lookup table by (state, heat level, flash level): the palette's
    // linear-light mixing is costly per cell; the table is valid for one heat scale and theme.
    constexpr int kFlashSteps = BrainCells::kFlashLevels + 1;
    constexpr int kStates = int(tiers::ExpertState::Vram) + 1;
    if (m_lutCeiling != cells.heatCeiling() || m_lutDark != m_dark) {
        m_lut.assign(size_t(kStates * 256 * kFlashSteps), Rgba8{0, 0, 0, 0}); // alpha 0: not filled
        m_lutCeiling = cells.heatCeiling();
        m_lutDark = m_dark;
    }
    auto colour = [&](int c) {
        const BrainCells::Visual& vis = cells.visual(c);
        // An unknown state draws as None (viz::cellColour): its entry must be None's too.
        int st = int(vis.state & tiers::kExpertStateMask);
        if (st >= kStates) st = 0;
        Rgba8& e = m_lut[size_t((st * 256 + vis.heat) * kFlashSteps + vis.flash)];
        if (e.a == 0) e = cellColour(vis.state, cells.heat(vis), BrainCells::flash(vis), m_dark);
        return e;
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
    if (marksChanged) {
        // A dot in the middle of each user-pinned cell; unused quads collapse.
        for (int i = 0; i < m_markCap; ++i) {
            QSGGeometry::ColoredPoint2D* p = v + 4 * (m_firstMark + i);
            if (i < int(m_marks.size())) {
                placeQuad(p, sheet.cells()[size_t(m_marks[size_t(i)])], 0.55f);
                writeColour(p, userPinColour(m_dark));
            } else {
                for (int k = 0; k < 4; ++k)
                    p[k].set(0, 0, 0, 0, 0, 0);
            }
        }
    }
    if (written > 0 || marksChanged) node->markDirty(QSGNode::DirtyGeometry); // once a frame
    m_rewritten += written;
    m_lastRewritten = written;
    ++m_frames;
    m_syncNanos = timer.nsecsElapsed();
    QMetaObject::invokeMethod(this, &BrainItem::framed, Qt::QueuedConnection);
    // Cells still fading need the next frame too: asked for from the GUI thread (update() is
    // the GUI thread's), once per frame while any fades.
    if (cells.fadingCells() > 0)
        QMetaObject::invokeMethod(this, &QQuickItem::update, Qt::QueuedConnection);
    return node;
}

QRectF BrainItem::drawnRect(const SheetRect& r, float size) const {
    if (size >= 1) {
        // A cell fills its pitch on whole pixels (no half-covered columns, which made stripes),
        // less a one-pixel gutter when the pitch has room for it (>= 4 px).
        const float in = viz::BrainLayout::kCellInset;
        const float px0 = m_dx + (r.x - in) * m_scale, px1 = m_dx + (r.x + r.w + in) * m_scale;
        const float py0 = m_dy + (r.y - in) * m_scale, py1 = m_dy + (r.y + r.h + in) * m_scale;
        const float gutter = px1 - px0 >= 4 ? 1 : 0;
        const float x0 = std::round(px0), y0 = std::round(py0);
        const float x1 = std::max(x0 + 1, std::round(px1) - gutter);
        const float y1 = std::max(y0 + 1, std::round(py1) - gutter);
        return {x0, y0, x1 - x0, y1 - y0};
    }
    // A mark: at least 2 px when the cell has room for it (>= 3 px), so that it shows.
    const float least = r.w * m_scale >= 3 ? 2.f : 1.f;
    const float w = std::max(least, std::round(r.w * size * m_scale));
    const float h = std::max(least, std::round(r.h * size * m_scale));
    return {std::round(m_dx + (r.x + r.w / 2) * m_scale - w / 2),
            std::round(m_dy + (r.y + r.h / 2) * m_scale - h / 2), w, h};
}

void BrainItem::placeQuad(QSGGeometry::ColoredPoint2D* p, const SheetRect& r, float size) const {
    const QRectF d = drawnRect(r, size);
    const float x0 = float(d.left()), y0 = float(d.top());
    const float x1 = float(d.right()), y1 = float(d.bottom());
    p[0].set(x0, y0, 0, 0, 0, 255);
    p[1].set(x1, y0, 0, 0, 0, 255);
    p[2].set(x0, y1, 0, 0, 0, 255);
    p[3].set(x1, y1, 0, 0, 0, 255);
}

void registerBrainTypes() {
    static bool done = false;
    if (done) return;
    done = true;
    qmlRegisterType<BrainItem>("Colibri.Native", 1, 0, "BrainCells");
}

} // namespace coli::app
