#include "atlas/atlas_geometry.h"

#include <QByteArray>
#include <QVector3D>

#include <cstdint>
#include <cstring>

namespace coli::app {

AtlasPointGeometry::AtlasPointGeometry(QQuick3DObject* parent) : QQuick3DGeometry(parent) {
    // Six shared vertices with the normal = the position (smooth shading: a rounded gem), drawn
    // through 24 indices: the CPU renderer shades each vertex of an instance once instead of
    // three times (measured: docs/performance.md "Atlas view").
    const QVector3D v[6] = {{1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0}, {0, 0, 1}, {0, 0, -1}};
    enum { px, nx, py, ny, pz, nz };
    // Counter-clockwise seen from outside (Quick 3D culls back faces).
    const uint16_t faces[8][3] = {{px, py, pz}, {pz, py, nx}, {nx, py, nz}, {nz, py, px},
                                  {px, pz, ny}, {pz, nx, ny}, {nx, nz, ny}, {nz, px, ny}};
    QByteArray vertices(6 * 6 * int(sizeof(float)), '\0');
    float* f = reinterpret_cast<float*>(vertices.data());
    for (const QVector3D& p : v) {
        *f++ = p.x(), *f++ = p.y(), *f++ = p.z();
        *f++ = p.x(), *f++ = p.y(), *f++ = p.z();
    }
    QByteArray indices(int(sizeof faces), '\0');
    std::memcpy(indices.data(), faces, sizeof faces);
    setVertexData(vertices);
    setIndexData(indices);
    setStride(6 * sizeof(float));
    setPrimitiveType(PrimitiveType::Triangles);
    setBounds(QVector3D(-1, -1, -1), QVector3D(1, 1, 1));
    addAttribute(Attribute::PositionSemantic, 0, Attribute::F32Type);
    addAttribute(Attribute::NormalSemantic, 3 * sizeof(float), Attribute::F32Type);
    addAttribute(Attribute::IndexSemantic, 0, Attribute::U16Type);
}

} // namespace coli::app
