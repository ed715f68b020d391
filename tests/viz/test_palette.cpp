// The Brain's state colours are colour-blind safe (issue 12): pairwise CIEDE2000 >= 10 between
// Disk, Loading, Cached, Pinned and Vram under normal vision and the Machado et al. 2009 protanopia
// and deuteranopia simulations (severity 1), at the floor and at full brightness, on the light and
// the dark palette; each state stands clear of the background. Prints the measured minima (the
// table in docs/visualisation.md).
#include "viz/palette.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>

using namespace coli::viz;
using coli::tiers::ExpertState;

namespace {

constexpr ExpertState kStates[] = {ExpertState::Disk, ExpertState::Loading, ExpertState::Cached,
                                   ExpertState::Pinned, ExpertState::Vram};
constexpr int kNStates = int(std::size(kStates));
constexpr double kMinPairDe = 10;
constexpr double kMinBackgroundDe = 15;

Lab seen(const Rgba8& c, Vision v) {
    return srgb8ToLab(simulateCvd(c, v));
}

} // namespace

TEST(Palette, StatesColourBlindSafe) {
    std::printf(
        "| theme | vision | brightness | min ΔE00 between states | min ΔE00 to background |\n");
    std::printf("|---|---|---|---|---|\n");
    for (Theme theme : {Theme::Light, Theme::Dark}) {
        const BrainPalette& p = brainPalette(theme);
        for (Vision v : {Vision::Normal, Vision::Deuteranopia, Vision::Protanopia}) {
            for (double b : {p.floor, 1.0}) {
                double pairMin = 1e9, bgMin = 1e9;
                for (int i = 0; i < kNStates; ++i) {
                    const Lab li = seen(cellColour(theme, kStates[i], b), v);
                    bgMin = std::min(bgMin, ciede2000(li, seen(p.background, v)));
                    for (int j = i + 1; j < kNStates; ++j) {
                        const double de = ciede2000(li, seen(cellColour(theme, kStates[j], b), v));
                        pairMin = std::min(pairMin, de);
                        EXPECT_GE(de, kMinPairDe)
                            << (theme == Theme::Dark ? "dark" : "light") << " " << visionName(v)
                            << " brightness " << b << ": " << stateName(kStates[i]) << " vs "
                            << stateName(kStates[j]);
                    }
                }
                EXPECT_GE(bgMin, kMinBackgroundDe)
                    << (theme == Theme::Dark ? "dark" : "light") << " " << visionName(v);
                std::printf("| %s | %s | %.2f | %.1f | %.1f |\n",
                            theme == Theme::Dark ? "dark" : "light", visionName(v), b, pairMin,
                            bgMin);
            }
        }
    }
}

TEST(Palette, DenseBandVisibleAndMarksContrast) {
    for (Theme theme : {Theme::Light, Theme::Dark}) {
        const BrainPalette& p = brainPalette(theme);
        const Lab bg = srgb8ToLab(p.background);
        EXPECT_GE(ciede2000(srgb8ToLab(cellColour(theme, ExpertState::None, 1.0)), bg), 5);
        EXPECT_GE(ciede2000(srgb8ToLab(p.userPinMark), bg), 40);
        EXPECT_GE(ciede2000(srgb8ToLab(p.flash), bg), 40);
        EXPECT_GE(ciede2000(srgb8ToLab(p.label), bg), 40);
        EXPECT_GT(p.floor, 0.0);
        EXPECT_LT(p.floor, 1.0);
    }
}

// A VRAM cell must not read as a flash (routed just now) nor as the dense band, in any of the
// three visions: the margin its colour was searched with (viz/palette.cpp).
TEST(Palette, VramApartFromFlashAndDenseBand) {
    for (Theme theme : {Theme::Light, Theme::Dark}) {
        const BrainPalette& p = brainPalette(theme);
        for (Vision v : {Vision::Normal, Vision::Deuteranopia, Vision::Protanopia}) {
            const Lab vram = seen(p.states[int(ExpertState::Vram)], v);
            EXPECT_GE(ciede2000(vram, seen(p.flash, v)), 30) << visionName(v);
            EXPECT_GE(ciede2000(vram, seen(p.states[int(ExpertState::None)], v)), 15)
                << visionName(v);
        }
    }
    EXPECT_STREQ(stateName(ExpertState::Vram), "vram");
    EXPECT_STREQ(stateName(ExpertState::Pinned), "pinned");
}

TEST(Palette, HeatBrightness) {
    EXPECT_DOUBLE_EQ(heatBrightness(0, 100, 0.3), 0.3);
    EXPECT_DOUBLE_EQ(heatBrightness(100, 100, 0.3), 1.0);
    EXPECT_DOUBLE_EQ(heatBrightness(500, 100, 0.3), 1.0); // clamped
    EXPECT_DOUBLE_EQ(heatBrightness(-1, 100, 0.3), 0.3);
    EXPECT_DOUBLE_EQ(heatBrightness(5, 0, 0.3), 0.3);
    EXPECT_DOUBLE_EQ(heatBrightness(NAN, 10, 0.3), 0.3);
    EXPECT_NEAR(heatBrightness(9, 99, 0.0), std::log(10.0) / std::log(100.0), 1e-12);
    double prev = 0;
    for (int h = 0; h <= 1000; ++h) {
        const double b = heatBrightness(h, 1000, 0.35);
        EXPECT_GE(b, prev);
        prev = b;
    }
}

TEST(Palette, CellColourEnds) {
    for (Theme theme : {Theme::Light, Theme::Dark}) {
        const BrainPalette& p = brainPalette(theme);
        for (ExpertState s : kStates) {
            EXPECT_EQ(cellColour(theme, s, 1.0), p.states[int(s)]);
            EXPECT_EQ(cellColour(theme, s, 0.0), p.background);
            EXPECT_EQ(cellColour(theme, s, 0.5, 1.0), p.flash);
            // The user-pin flag does not change the fill (the view draws userPinMark).
            const uint8_t pinned = uint8_t(s) | coli::tiers::kUserPinFlag;
            EXPECT_EQ(cellColour(theme, pinned, 0.7, 0.2), cellColour(theme, s, 0.7, 0.2));
            EXPECT_TRUE(isUserPinned(pinned));
            EXPECT_FALSE(isUserPinned(uint8_t(s)));
        }
        // A flash moves the colour towards the highlight, monotonically.
        const Lab flash = srgb8ToLab(p.flash);
        double prev = 1e9;
        for (double f = 0; f <= 1.0001; f += 0.1) {
            const double d =
                ciede2000(srgb8ToLab(cellColour(theme, ExpertState::Cached, 0.6, f)), flash);
            EXPECT_LE(d, prev + 1e-9);
            prev = d;
        }
        EXPECT_EQ(cellColour(theme, uint8_t(9), 1.0), p.states[0]); // unknown -> None
    }
}

TEST(Palette, TopicColoursDistinct) {
    double minDe = 1e9;
    for (int i = 0; i < kTopicColours; ++i) {
        const Lab a = srgb8ToLab(topicColour(i));
        EXPECT_GE(ciede2000(a, srgb8ToLab(generalistColour())), 10) << "topic " << i;
        for (Theme theme : {Theme::Light, Theme::Dark})
            EXPECT_GE(ciede2000(a, srgb8ToLab(brainPalette(theme).background)), 15) << i;
        for (int j = i + 1; j < kTopicColours; ++j) {
            const double de = ciede2000(a, srgb8ToLab(topicColour(j)));
            minDe = std::min(minDe, de);
            EXPECT_GE(de, 10) << "topics " << i << " and " << j;
        }
    }
    std::printf("topic colours: min pairwise CIEDE2000 %.1f\n", minDe);
    EXPECT_EQ(topicColour(kTopicColours), topicColour(0));
    EXPECT_EQ(topicColour(-1), topicColour(kTopicColours - 1));
}
