#pragma once
// The Atlas's one instanced draw: a CPU-side instance table (one entry per expert: position,
// uniform scale, colour) handed to Quick 3D. Qt 6.4 uploads the whole table again after every
// markDirty(), so callers rewrite only the entries that changed (setEntry compares and skips
// equal ones) and commit() marks the table dirty at most once per call; the owner calls it once
// per frame tick. rewrittenLast()/rewrittenTotal() count the entries actually rewritten (tests).
// Thread-safety: GUI thread only. Quick 3D reads the table through getInstanceBuffer() during the
// scene graph's sync (GUI thread blocked); the returned QByteArray is an implicitly shared copy,
// so the next rewrite detaches instead of racing the render thread.
#include <QByteArray>
#include <QColor>
#include <QVector3D>
#include <QtQuick3D/QQuick3DInstancing>

namespace coli::app {

class AtlasInstancing : public QQuick3DInstancing {
    Q_OBJECT
public:
    explicit AtlasInstancing(QQuick3DObject* parent = nullptr);

    // Sets the number of entries (new ones are zero: invisible); marks the table for upload.
    void resize(int count);
    int count() const { return m_count; }
    // Entry `i` (0 <= i < count) at `position` with uniform `scale` (0: not drawn) in `color`
    // (RGBA in 0..1). Returns whether the entry changed; an unchanged entry is not counted.
    bool setEntry(int i, const QVector3D& position, float scale, const QVector4D& color);
    QVector3D position(int i) const;
    float scale(int i) const;
    QVector4D color(int i) const;

    // Hands the changed entries to Quick 3D (one markDirty) when any changed since the last
    // commit; returns how many entries were rewritten since then.
    int commit();
    int rewrittenLast() const { return m_last; }
    qint64 rewrittenTotal() const { return m_total; }
    int commits() const { return m_commits; } // commits that marked the table dirty

protected:
    QByteArray getInstanceBuffer(int* instanceCount) override;

private:
    InstanceTableEntry* entry(int i);
    const InstanceTableEntry* entry(int i) const;

    QByteArray m_table; // m_count entries
    int m_count = 0;
    int m_pending = 0; // entries rewritten since the last commit
    bool m_resized = false;
    int m_last = 0;
    qint64 m_total = 0;
    int m_commits = 0;
};

} // namespace coli::app
