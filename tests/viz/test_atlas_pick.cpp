// Atlas picking: the nearest projected visible point within a radius (issue 12).
#include "viz/atlas_pick.h"

#include <gtest/gtest.h>

#include <array>
#include <vector>

using namespace coli::viz;

namespace {

// A perspective projection looking down -z from the origin (OpenGL convention), column-major:
// x_ndc = x / -z, y_ndc = y / -z (a 90-degree field of view, aspect 1).
std::array<float, 16> perspective() {
    const float n = 0.1f, f = 100.0f;
    std::array<float, 16> m{};
    m[0] = 1;
    m[5] = 1;
    m[10] = -(f + n) / (f - n);
    m[11] = -1;
    m[14] = -2 * f * n / (f - n);
    return m;
}
const Viewport kVp{0, 0, 200, 100};

} // namespace

TEST(AtlasPick, ProjectsToPixels) {
    const auto m = perspective();
    const auto c = project({0, 0, -5}, m, kVp);
    ASSERT_TRUE(c);
    EXPECT_FLOAT_EQ(c->x, 100);
    EXPECT_FLOAT_EQ(c->y, 50);
    // x/-z = 0.5 -> three quarters across; y/-z = 0.5 -> a quarter down (y up in NDC).
    const auto q = project({1, 1, -2}, m, kVp);
    ASSERT_TRUE(q);
    EXPECT_FLOAT_EQ(q->x, 150);
    EXPECT_FLOAT_EQ(q->y, 25);
    EXPECT_FALSE(project({0, 0, 5}, m, kVp)); // behind the camera
    // The viewport offset shifts pixels.
    const auto o = project({0, 0, -5}, m, Viewport{10, 20, 200, 100});
    EXPECT_FLOAT_EQ(o->x, 110);
    EXPECT_FLOAT_EQ(o->y, 70);
}

TEST(AtlasPick, NearestWithinRadius) {
    const auto m = perspective();
    const std::vector<Vec3f> pts = {{0, 0, -5}, {1, 1, -2}, {1.02f, 1, -2}, {-1, -1, -2}};
    EXPECT_EQ(pickNearest(pts, {}, m, kVp, 101, 50, 5), std::optional<int>(0));
    EXPECT_EQ(pickNearest(pts, {}, m, kVp, 149, 25, 5), std::optional<int>(1));
    EXPECT_EQ(pickNearest(pts, {}, m, kVp, 152, 25, 5), std::optional<int>(2));
    EXPECT_EQ(pickNearest(pts, {}, m, kVp, 50, 75, 5), std::optional<int>(3));
    // Radius respected (inclusive): 10 px away.
    EXPECT_FALSE(pickNearest(pts, {}, m, kVp, 100, 60, 9.9f));
    EXPECT_EQ(pickNearest(pts, {}, m, kVp, 100, 60, 10), std::optional<int>(0));
    EXPECT_FALSE(pickNearest(pts, {}, m, kVp, 10, 10, 5));
}

TEST(AtlasPick, TiesGoToLowerIndex) {
    const auto m = perspective();
    const std::vector<Vec3f> pts = {{0, 0, -5}, {0, 0, -5}, {0, 0, -10}};
    EXPECT_EQ(pickNearest(pts, {}, m, kVp, 100, 50, 3), std::optional<int>(0));
}

TEST(AtlasPick, IgnoresBehindCameraAndMasked) {
    const auto m = perspective();
    // Point 0 is behind the camera: x/-z = -0.5 would land at (50, 75) if w were not checked.
    const std::vector<Vec3f> pts = {{1, 1, 2}, {-1, -1, -2}, {-1.04f, -1, -2}};
    EXPECT_EQ(pickNearest(pts, {}, m, kVp, 50, 75, 5), std::optional<int>(1));
    const std::vector<uint8_t> hideOne = {1, 0, 1};
    EXPECT_EQ(pickNearest(pts, hideOne, m, kVp, 50, 75, 5), std::optional<int>(2));
    const std::vector<uint8_t> hideAll = {1, 0, 0};
    EXPECT_FALSE(pickNearest(pts, hideAll, m, kVp, 50, 75, 5));
    const std::vector<uint8_t> shortMask = {1, 1};
    EXPECT_EQ(pickNearest(pts, shortMask, m, kVp, 48, 75, 5), std::optional<int>(1));
    EXPECT_FALSE(pickNearest(pts, {}, m, kVp, 50, 75, -1));
}
