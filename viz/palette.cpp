#include "viz/palette.h"

#include <algorithm>
#include <cmath>

namespace coli::viz {
namespace {

constexpr Rgba8 rgb(uint32_t hex) {
    return {uint8_t(hex >> 16), uint8_t(hex >> 8), uint8_t(hex), 255};
}

// State colours found by a local search (max-min CIEDE2000 over normal, protanopia and
// deuteranopia at floor and full brightness) from hand-picked hues: olive for disk, yellow for
// loading, blue for cached, magenta for pinned, the same hue family in both themes. The light
// theme needs a higher floor: mixing towards a near-white background washes hues out faster.
// Vram came later, so the other five stayed and its colour alone was searched (a 5-step sRGB
// grid, the same max-min rule, kept >= 30 from the flash and the dense band so that a VRAM cell
// never reads as "routed just now"; light L* <= 76, dark L* >= 55, to sit among the others):
// violet on dark, periwinkle on light; the measured minima are in tests/viz/test_palette.cpp.
constexpr BrainPalette kDark = {
    rgb(0x1e1f24),
    {rgb(0x3a3d46), rgb(0x97af66), rgb(0xeff366), rgb(0x1fcaff), rgb(0xfe58ac), rgb(0x9b64ff)},
    rgb(0xffffff),
    rgb(0xffffff),
    rgb(0xd8dae0),
    0.35,
};
constexpr BrainPalette kLight = {
    rgb(0xfafafb),
    {rgb(0xdfe1e6), rgb(0x756a1e), rgb(0xe5ce39), rgb(0x193cfd), rgb(0x943588), rgb(0xb4b4ff)},
    rgb(0x000000),
    rgb(0x111111),
    rgb(0x33363d),
    0.6,
};

// Greedy max-min CIEDE2000 selection from the Tableau 10/20 and Kelly (1965) sets, kept apart from
// the generalist grey and both backgrounds.
constexpr uint32_t kTopics[kTopicColours] = {
    0x4e79a7, 0xf28e2b, 0x2ca02c, 0x9467bd, 0x17becf, 0xbcbd22, 0xe377c2, 0x9c755f,
    0xbe0032, 0x008856, 0xf99379, 0xe25822, 0xb3446c, 0x98df8a, 0x882d17, 0xe15759,
};
constexpr uint32_t kGeneralist = 0x9a9a9a;

Rgb mix(const Rgb& a, const Rgb& b, double t) {
    return {a.r + (b.r - a.r) * t, a.g + (b.g - a.g) * t, a.b + (b.b - a.b) * t};
}

} // namespace

const BrainPalette& brainPalette(Theme theme) {
    return theme == Theme::Dark ? kDark : kLight;
}

double heatBrightness(double heat, double maxHeat, double floor) {
    if (!(maxHeat > 0) || !std::isfinite(maxHeat) || !std::isfinite(heat)) return floor;
    const double h = std::clamp(heat, 0.0, maxHeat);
    return floor + (1.0 - floor) * std::log1p(h) / std::log1p(maxHeat);
}

Rgba8 cellColour(Theme theme, uint8_t stateByte, double brightness, double flash) {
    const BrainPalette& p = brainPalette(theme);
    int s = stateByte & tiers::kExpertStateMask;
    if (s > static_cast<int>(tiers::ExpertState::Vram)) s = 0;
    const double b = std::isfinite(brightness) ? std::clamp(brightness, 0.0, 1.0) : 0.0;
    const double f = std::isfinite(flash) ? std::clamp(flash, 0.0, 1.0) : 0.0;
    Rgb c = mix(srgb8ToLinear(p.background), srgb8ToLinear(p.states[s]), b);
    if (f > 0) c = mix(c, srgb8ToLinear(p.flash), f);
    return toSrgb8(c);
}

Rgba8 cellColour(Theme theme, tiers::ExpertState state, double brightness, double flash) {
    return cellColour(theme, static_cast<uint8_t>(state), brightness, flash);
}

const char* stateName(tiers::ExpertState state) {
    switch (state) {
    case tiers::ExpertState::None:
        return "dense";
    case tiers::ExpertState::Disk:
        return "disk";
    case tiers::ExpertState::Loading:
        return "loading";
    case tiers::ExpertState::Cached:
        return "cached";
    case tiers::ExpertState::Pinned:
        return "pinned";
    case tiers::ExpertState::Vram:
        return "vram";
    }
    return "dense";
}

Rgba8 topicColour(int topic) {
    const int i = ((topic % kTopicColours) + kTopicColours) % kTopicColours;
    return rgb(kTopics[i]);
}
Rgba8 generalistColour() {
    return rgb(kGeneralist);
}

} // namespace coli::viz
