#include "viz/atlas_pick.h"

#include <cmath>

namespace coli::viz {

std::optional<Projected> project(const Vec3f& p, std::span<const float, 16> m, const Viewport& vp) {
    // clip = M * (x, y, z, 1); element (row r, column c) is m[c * 4 + r].
    const float cx = m[0] * p.x + m[4] * p.y + m[8] * p.z + m[12];
    const float cy = m[1] * p.x + m[5] * p.y + m[9] * p.z + m[13];
    const float cz = m[2] * p.x + m[6] * p.y + m[10] * p.z + m[14];
    const float cw = m[3] * p.x + m[7] * p.y + m[11] * p.z + m[15];
    if (!(cw > 0) || !std::isfinite(cw)) return std::nullopt;
    const float nx = cx / cw, ny = cy / cw, nz = cz / cw;
    if (!std::isfinite(nx) || !std::isfinite(ny) || !std::isfinite(nz)) return std::nullopt;
    return Projected{vp.x + (nx + 1.0f) * 0.5f * vp.width, vp.y + (1.0f - ny) * 0.5f * vp.height,
                     nz};
}

std::optional<int> pickNearest(std::span<const Vec3f> points, std::span<const uint8_t> mask,
                               std::span<const float, 16> m, const Viewport& vp, float px, float py,
                               float radiusPx) {
    if (!(radiusPx >= 0) || !std::isfinite(px) || !std::isfinite(py)) return std::nullopt;
    std::optional<int> best;
    float bestD2 = radiusPx * radiusPx;
    for (size_t i = 0; i < points.size(); ++i) {
        if (!mask.empty() && (i >= mask.size() || mask[i] == 0)) continue;
        const std::optional<Projected> q = project(points[i], m, vp);
        if (!q) continue;
        const float dx = q->x - px, dy = q->y - py;
        const float d2 = dx * dx + dy * dy;
        // Strictly nearer replaces: the lower index wins ties.
        if (d2 < bestD2 || (!best && d2 == bestD2)) {
            bestD2 = d2;
            best = static_cast<int>(i);
        }
    }
    return best;
}

} // namespace coli::viz
