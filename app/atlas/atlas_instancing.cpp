#include "atlas/atlas_instancing.h"

#include <cstring>
#include <utility>

namespace coli::app {

AtlasInstancing::AtlasInstancing(QQuick3DObject* parent) : QQuick3DInstancing(parent) {}

void AtlasInstancing::resize(int count) {
    m_count = count < 0 ? 0 : count;
    m_table = QByteArray(qsizetype(m_count) * qsizetype(sizeof(InstanceTableEntry)), '\0');
    m_pending = 0;
    m_resized = true;
}

AtlasInstancing::InstanceTableEntry* AtlasInstancing::entry(int i) {
    return reinterpret_cast<InstanceTableEntry*>(m_table.data()) + i; // detaches once if shared
}
const AtlasInstancing::InstanceTableEntry* AtlasInstancing::entry(int i) const {
    return reinterpret_cast<const InstanceTableEntry*>(m_table.constData()) + i;
}

bool AtlasInstancing::setEntry(int i, const QVector3D& p, float s, const QVector4D& c) {
    if (i < 0 || i >= m_count) return false;
    InstanceTableEntry e;
    // A translation + uniform scale, no rotation: the rows of the 3x4 model matrix.
    e.row0 = QVector4D(s, 0, 0, p.x());
    e.row1 = QVector4D(0, s, 0, p.y());
    e.row2 = QVector4D(0, 0, s, p.z());
    e.color = c;
    e.instanceData = QVector4D();
    const InstanceTableEntry* now = std::as_const(*this).entry(i); // no detach
    if (std::memcmp(now, &e, sizeof e) == 0) return false;
    *entry(i) = e;
    ++m_pending;
    return true;
}

QVector3D AtlasInstancing::position(int i) const {
    const auto* e = entry(i);
    return QVector3D(e->row0.w(), e->row1.w(), e->row2.w());
}
float AtlasInstancing::scale(int i) const {
    return entry(i)->row0.x();
}
QVector4D AtlasInstancing::color(int i) const {
    return entry(i)->color;
}

int AtlasInstancing::commit() {
    m_last = m_pending;
    m_total += m_pending;
    if (m_pending > 0 || m_resized) {
        ++m_commits;
        markDirty();
    }
    m_pending = 0;
    m_resized = false;
    return m_last;
}

QByteArray AtlasInstancing::getInstanceBuffer(int* instanceCount) {
    if (instanceCount) *instanceCount = m_count;
    return m_table;
}

} // namespace coli::app
