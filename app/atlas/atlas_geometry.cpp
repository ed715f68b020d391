#include "atlas/atlas_geometry.h"

#include <QByteArray>
#include <QVector3D>

namespace coli::app {

AtlasPointGeometry::AtlasPointGeometry(QQuick3DObject* parent) : QQuick3DGeometry(parent) {
    const QVector3D px(1, 0, 0), nx(-1, 0, 0), py(0, 1, 0), ny(0, -1, 0), pz(0, 0, 1), nz(0, 0, -1);
    // Counter-clockwise seen from outside (Quick 3D culls back faces).
    const QVector3D faces[8][3] = {{px, py, pz}, {pz, py, nx}, {nx, py, nz}, {nz, py, px},
                                   {px, pz, ny}, {pz, nx, ny}, {nx, nz, ny}, {nz, px, ny}};
    QByteArray v;
    v.resize(8 * 3 * 6 * sizeof(float));
    float* f = reinterpret_cast<float*>(v.data());
    for (const auto& tri : faces) {
        const QVector3D n = QVector3D::normal(tri[0], tri[1], tri[2]);
        for (const QVector3D& p : tri) {
            *f++ = p.x(), *f++ = p.y(), *f++ = p.z();
            *f++ = n.x(), *f++ = n.y(), *f++ = n.z();
        }
    }
    setVertexData(v);
    setStride(6 * sizeof(float));
    setPrimitiveType(PrimitiveType::Triangles);
    setBounds(QVector3D(-1, -1, -1), QVector3D(1, 1, 1));
    addAttribute(Attribute::PositionSemantic, 0, Attribute::F32Type);
    addAttribute(Attribute::NormalSemantic, 3 * sizeof(float), Attribute::F32Type);
}

} // namespace coli::app
