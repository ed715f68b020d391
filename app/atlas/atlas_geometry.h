#pragma once
// The mesh of one Atlas point: a regular octahedron of radius 1 (8 triangles over 6 shared
// vertices, smooth normals, 24 indices). Low-poly on purpose: Mesa's CPU renderer draws about 4-6 M
// triangles/s, so 40,000 points cost ~320 k triangles per frame (a sphere would cost 10x).
// Thread-safety: GUI thread only (a Quick 3D object).
#include <QtQuick3D/QQuick3DGeometry>

namespace coli::app {

class AtlasPointGeometry : public QQuick3DGeometry {
    Q_OBJECT
public:
    explicit AtlasPointGeometry(QQuick3DObject* parent = nullptr);
};

} // namespace coli::app
