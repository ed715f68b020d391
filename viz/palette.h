#pragma once
// The Brain's and the Atlas's colours (issue 12, docs/visualisation.md "Colours").
// Brain: a hue per expert state (coli::tiers::ExpertState), brightness from log heat, a flash
// towards a highlight for experts routed just now; for a light and a dark background. The state
// colours are chosen so that, under normal vision and under the Machado et al. 2009 protanopia and
// deuteranopia simulations (severity 1), every two states differ by CIEDE2000 >= 10 at the lowest
// (floor) and the highest brightness, and each state differs from the background (tested in
// tests/viz/test_palette.cpp, which prints the measured table).
// Colour model, in linear RGB: cell = mix(background, stateColour, brightness), then
// mix(cell, flashColour, flash). Output: 8-bit sRGB RGBA (vertex colours).
// Thread-safety: pure functions over constant tables.
#include <cstdint>

#include "tiers/tier_telemetry.h"
#include "viz/color_science.h"

namespace coli::viz {

enum class Theme { Light, Dark };

struct BrainPalette {
    Rgba8 background; // clear colour of the Brain view (the colours are tuned against it)
    // by ExpertState value: None (dense-layer band), Disk, Loading, Cached, Pinned, Vram
    Rgba8 states[6];
    Rgba8 userPinMark; // outline/marker the view draws around a user-pinned cell
    Rgba8 flash;  // highlight a just-routed cell mixes towards: the colour of most contrast with
                  // the background (white on dark, near-black on light; white would vanish there)
    Rgba8 label;  // layer labels and the legend's text
    double floor; // lowest brightness (a cell with no heat), in (0, 1]
};

// The palette of a theme (a static table; the reference stays valid).
const BrainPalette& brainPalette(Theme theme);

// Brightness from heat: floor + (1 - floor) * log1p(heat) / log1p(maxHeat), in [floor, 1].
// heat and maxHeat are counts (hits, or routings this turn), clamped to [0, maxHeat]; returns
// floor when maxHeat <= 0 or either value is not finite.
double heatBrightness(double heat, double maxHeat, double floor);

// A cell's colour: state byte as in coli::tiers::ExpertMap::state (kUserPinFlag ignored here: the
// view draws userPinMark; an unknown state draws as None), brightness in [0, 1] (clamped; usually
// from heatBrightness()), flash in [0, 1] (1 = routed just now, 0 = faded; clamped).
Rgba8 cellColour(Theme theme, uint8_t stateByte, double brightness, double flash = 0.0);
Rgba8 cellColour(Theme theme, tiers::ExpertState state, double brightness, double flash = 0.0);
// True when the state byte carries kUserPinFlag.
inline bool isUserPinned(uint8_t stateByte) {
    return (stateByte & tiers::kUserPinFlag) != 0;
}
// "disk", "loading", "cached", "pinned", "vram", "dense" (None): for legends and hover text.
const char* stateName(tiers::ExpertState state);

// Atlas: distinct colours for topics 0..kTopicColours-1 (pairwise CIEDE2000 >= 10, tested);
// topics beyond wrap around. The generalist colour is a neutral grey apart from all of them.
constexpr int kTopicColours = 16;
Rgba8 topicColour(int topic);
Rgba8 generalistColour();

} // namespace coli::viz
