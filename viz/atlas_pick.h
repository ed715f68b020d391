#pragma once
// Atlas picking on the CPU (issue 12, docs/visualisation.md "Picking"): project 3D points with a
// view-projection matrix to the viewport and find the nearest visible one under the cursor.
// Conventions: the matrix is 4x4, column-major floats (as QMatrix4x4::constData() gives, OpenGL
// clip space: a point is in front of the camera when clip w > 0); the viewport is in pixels with
// its origin at the top-left and y growing downwards (Qt's item coordinates), NDC y = +1 at the
// top. Thread-safety: pure functions.
#include <cstdint>
#include <optional>
#include <span>

namespace coli::viz {

struct Vec3f {
    float x = 0, y = 0, z = 0;
};

struct Viewport {
    float x = 0, y = 0;          // top-left corner, pixels
    float width = 0, height = 0; // pixels
};

struct Projected {
    float x = 0, y = 0; // pixels, viewport coordinates as above
    float depth = 0;    // NDC z in [-1, 1] for points inside the frustum's depth range
};

// The point in pixels; nullopt when it is behind the camera (clip w <= 0) or not finite.
// `m` holds 16 floats, column-major.
std::optional<Projected> project(const Vec3f& p, std::span<const float, 16> m, const Viewport& vp);

// Index of the point whose projection is nearest to (px, py) within radiusPx (inclusive);
// points behind the camera, with mask[i] == 0 (a hidden topic), or not finite are ignored; ties
// go to the lower index. `mask` may be empty (all visible); otherwise it has points.size()
// entries (a shorter mask hides the points beyond it). nullopt when none qualifies. O(n).
std::optional<int> pickNearest(std::span<const Vec3f> points, std::span<const uint8_t> mask,
                               std::span<const float, 16> m, const Viewport& vp, float px, float py,
                               float radiusPx);

} // namespace coli::viz
