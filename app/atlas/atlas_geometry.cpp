#include "atlas/atlas_geometry.h"

#include <QByteArray>
#include <QVector3D>

#include <cstdint>
#include <cstring>
#include <vector>

namespace coli::app {

AtlasPointGeometry::AtlasPointGeometry(Shape shape, QQuick3DObject* parent)
    : QQuick3DGeometry(parent) {
    // Shared vertices with the normal = the position (smooth shading: a rounded gem), drawn
    // through indices: the CPU renderer shades each vertex of an instance once instead of three
    // times (measured: docs/performance.md "Atlas view"). Faces are counter-clockwise seen from
    // outside (Quick 3D culls back faces).
    std::vector<QVector3D> v;
    std::vector<uint16_t> faces;
    if (shape == Shape::Octahedron) {
        v = {{1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0}, {0, 0, 1}, {0, 0, -1}};
        enum { px, nx, py, ny, pz, nz };
        faces = {px, py, pz, pz, py, nx, nx, py, nz, nz, py, px,
                 px, pz, ny, pz, nx, ny, nx, nz, ny, nz, px, ny};
    } else {
        const float k = 0.57735027f; // 1 / sqrt(3): the vertices on the unit sphere
        v = {{k, k, k}, {k, -k, -k}, {-k, k, -k}, {-k, -k, k}};
        faces = {0, 1, 2, 0, 3, 1, 0, 2, 3, 1, 3, 2};
    }
    QByteArray vertices(int(v.size() * 6 * sizeof(float)), '\0');
    float* f = reinterpret_cast<float*>(vertices.data());
    for (const QVector3D& p : v) {
        *f++ = p.x(), *f++ = p.y(), *f++ = p.z();
        *f++ = p.x(), *f++ = p.y(), *f++ = p.z();
    }
    QByteArray indices(int(faces.size() * sizeof(uint16_t)), '\0');
    std::memcpy(indices.data(), faces.data(), faces.size() * sizeof(uint16_t));
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
