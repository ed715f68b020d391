// Colour science: sRGB/XYZ/CIELAB round trips, CIEDE2000 against Sharma, Wu, Dalal (2005)
// Table 1, and the Machado et al. (2009) severity-1 simulations.
#include "viz/color_science.h"

#include <gtest/gtest.h>

#include <random>

using namespace coli::viz;

TEST(ColorScience, Ciede2000MatchesSharmaTestPairs) {
    struct Pair {
        int n;
        Lab a, b;
        double de;
    };
    // Sharma, Wu, Dalal 2005, Table 1 (pair number, Lab 1, Lab 2, ΔE00 to 4 decimals).
    const Pair pairs[] = {
        {1, {50, 2.6772, -79.7751}, {50, 0, -82.7485}, 2.0425},
        {2, {50, 3.1571, -77.2803}, {50, 0, -82.7485}, 2.8615},
        {3, {50, 2.8361, -74.0200}, {50, 0, -82.7485}, 3.4412},
        {4, {50, -1.3802, -84.2814}, {50, 0, -82.7485}, 1.0000},
        {7, {50, 0, 0}, {50, -1, 2}, 2.3669},
        {8, {50, -1, 2}, {50, 0, 0}, 2.3669},
        {9, {50, 2.4900, -0.0010}, {50, -2.4900, 0.0009}, 7.1792},
        {11, {50, 2.4900, -0.0010}, {50, -2.4900, 0.0011}, 7.2195},
        {13, {50, -0.0010, 2.4900}, {50, 0.0009, -2.4900}, 4.8045},
        {15, {50, -0.0010, 2.4900}, {50, 0.0011, -2.4900}, 4.7461},
        {16, {50, 2.5, 0}, {50, 0, -2.5}, 4.3065},
        {17, {50, 2.5, 0}, {73, 25, -18}, 27.1492},
        {18, {50, 2.5, 0}, {61, -5, 29}, 22.8977},
        {19, {50, 2.5, 0}, {56, -27, -3}, 31.9030},
        {20, {50, 2.5, 0}, {58, 24, 15}, 19.4535},
        {25, {60.2574, -34.0099, 36.2677}, {60.4626, -34.1751, 39.4387}, 1.2644},
    };
    for (const Pair& p : pairs) {
        EXPECT_NEAR(ciede2000(p.a, p.b), p.de, 5e-5) << "pair " << p.n;
        EXPECT_NEAR(ciede2000(p.b, p.a), p.de, 5e-5) << "pair " << p.n << " swapped";
    }
}

TEST(ColorScience, Ciede2000Properties) {
    std::mt19937 rng(3);
    std::uniform_real_distribution<double> L(0, 100), ab(-100, 100);
    for (int i = 0; i < 2000; ++i) {
        const Lab a{L(rng), ab(rng), ab(rng)}, b{L(rng), ab(rng), ab(rng)};
        EXPECT_EQ(ciede2000(a, a), 0.0);
        EXPECT_NEAR(ciede2000(a, b), ciede2000(b, a), 1e-9);
        EXPECT_GE(ciede2000(a, b), 0.0);
    }
}

TEST(ColorScience, KnownConversions) {
    // D65 white -> L* 100, a* = b* = 0; black -> 0.
    const Lab white = srgb8ToLab({255, 255, 255, 255});
    EXPECT_NEAR(white.l, 100, 1e-3);
    EXPECT_NEAR(white.a, 0, 1e-2);
    EXPECT_NEAR(white.b, 0, 1e-2);
    EXPECT_NEAR(srgb8ToLab({0, 0, 0, 255}).l, 0, 1e-9);
    // sRGB red (IEC 61966-2-1 primaries): L* 53.24, a* 80.09, b* 67.20.
    const Lab red = srgb8ToLab({255, 0, 0, 255});
    EXPECT_NEAR(red.l, 53.24, 0.01);
    EXPECT_NEAR(red.a, 80.09, 0.02);
    EXPECT_NEAR(red.b, 67.20, 0.02);
    EXPECT_NEAR(srgbToLinear(0.5), 0.21404, 1e-5);
}

TEST(ColorScience, RoundTrips) {
    for (int v = 0; v < 256; v += 5) {
        const Rgba8 c{uint8_t(v), uint8_t(255 - v), uint8_t((v * 7) % 256), 200};
        EXPECT_EQ(toSrgb8(srgb8ToLinear(c), 200), c);
        const Lab lab = srgb8ToLab(c);
        EXPECT_EQ(toSrgb8(xyzToLinear(labToXyz(lab)), 200), c) << v;
    }
}

TEST(ColorScience, CvdSimulation) {
    // Normal vision is the identity; greys stay grey (each Machado matrix row sums to 1).
    const Rgb c{0.2, 0.5, 0.8};
    const Rgb n = simulateCvd(c, Vision::Normal);
    EXPECT_EQ(n.r, c.r);
    EXPECT_EQ(n.b, c.b);
    for (Vision v : {Vision::Protanopia, Vision::Deuteranopia}) {
        const Rgb g = simulateCvd(Rgb{0.4, 0.4, 0.4}, v);
        EXPECT_NEAR(g.r, 0.4, 1e-5);
        EXPECT_NEAR(g.g, 0.4, 1e-5);
        EXPECT_NEAR(g.b, 0.4, 1e-5);
    }
    // Protanopia, pure red: the first column of the published matrix, clamped.
    const Rgb pr = simulateCvd(Rgb{1, 0, 0}, Vision::Protanopia);
    EXPECT_NEAR(pr.r, 0.152286, 1e-9);
    EXPECT_NEAR(pr.g, 0.114503, 1e-9);
    EXPECT_EQ(pr.b, 0.0); // -0.003882 clamped
    const Rgb dg = simulateCvd(Rgb{0, 1, 0}, Vision::Deuteranopia);
    EXPECT_NEAR(dg.r, 0.860646, 1e-9);
    EXPECT_NEAR(dg.g, 0.672501, 1e-9);
    EXPECT_NEAR(dg.b, 0.042940, 1e-9);
    // Red and green, far apart normally, come close under both simulations.
    const Rgba8 red{200, 40, 40, 255}, green{60, 160, 40, 255};
    const double normal = ciede2000(srgb8ToLab(red), srgb8ToLab(green));
    for (Vision v : {Vision::Protanopia, Vision::Deuteranopia}) {
        const double sim =
            ciede2000(srgb8ToLab(simulateCvd(red, v)), srgb8ToLab(simulateCvd(green, v)));
        EXPECT_LT(sim, normal / 2) << visionName(v);
    }
}
