#pragma once
// The mesh of one Atlas point, radius 1, smooth normals, indexed: a regular octahedron (8
// triangles over 6 vertices) or, for big atlases, a regular tetrahedron (4 triangles over 4
// vertices). Low-poly on purpose: Mesa's CPU renderer draws about 4-6 M triangles/s, so 40,000
// octahedra cost ~320 k triangles per frame (a sphere would cost 10x); the tetrahedron takes
// about 20 % off the frame at 40,000 experts (docs/performance.md "Atlas view").
// Thread-safety: GUI thread only (a Quick 3D object).
#include <QtQuick3D/QQuick3DGeometry>

namespace coli::app {

class AtlasPointGeometry : public QQuick3DGeometry {
    Q_OBJECT
public:
    enum class Shape { Octahedron, Tetrahedron };
    explicit AtlasPointGeometry(Shape shape = Shape::Octahedron, QQuick3DObject* parent = nullptr);
};

} // namespace coli::app
