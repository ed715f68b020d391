#include "brain_sheet.h"

#include <algorithm>
#include <cmath>

namespace coli::app {

// TEMPORARY until viz/brain_layout.h and viz/palette.h land: one row of cells per layer.
std::optional<BrainSheet> BrainSheet::make(const tiers::ExpertMap& map, double) {
    if (map.nLayers < 1 || map.nExperts < 1 ||
        map.state.size() != size_t(map.nLayers) * size_t(map.nExperts))
        return std::nullopt;
    BrainSheet s;
    s.m_nLayers = map.nLayers;
    s.m_nExperts = map.nExperts;
    s.m_dense.assign(size_t(map.nLayers), 1);
    for (int l = 0; l < map.nLayers; ++l)
        for (int e = 0; e < map.nExperts; ++e)
            if (map.state[size_t(l) * map.nExperts + e] != 0) s.m_dense[size_t(l)] = 0;
    s.m_width = float(map.nExperts);
    s.m_height = float(map.nLayers);
    s.m_cells.resize(map.state.size());
    for (int l = 0; l < map.nLayers; ++l) {
        if (s.m_dense[size_t(l)]) {
            s.m_bands.push_back({0, float(l) + 0.4f, s.m_width, 0.2f});
        } else {
            for (int e = 0; e < map.nExperts; ++e)
                s.m_cells[size_t(l) * map.nExperts + e] = {float(e) + 0.08f, float(l) + 0.08f,
                                                           0.84f, 0.84f};
        }
        s.m_labels.push_back({l, 0, float(l) + 0.8f, bool(s.m_dense[size_t(l)])});
    }
    return s;
}

int BrainSheet::pick(float x, float y) const {
    if (x < 0 || y < 0 || x >= m_width || y >= m_height) return -1;
    const int l = int(y), e = int(x);
    if (m_dense[size_t(l)]) return -1;
    return l * m_nExperts + e;
}

namespace {
Rgba8 hex(uint32_t v) {
    return {uint8_t(v >> 16), uint8_t(v >> 8), uint8_t(v), 255};
}
Rgba8 mix(Rgba8 a, Rgba8 b, double t) {
    auto m = [t](uint8_t x, uint8_t y) { return uint8_t(std::lround(x + (y - x) * t)); };
    return {m(a.r, b.r), m(a.g, b.g), m(a.b, b.b), 255};
}
} // namespace

Rgba8 cellColour(uint8_t state, double heat, double flash, bool dark) {
    Rgba8 hue;
    if (state & tiers::kUserPinFlag) {
        hue = hex(0xe8590c);
    } else {
        switch (tiers::ExpertState(state & tiers::kExpertStateMask)) {
        case tiers::ExpertState::Pinned:
            hue = hex(0x8250df);
            break;
        case tiers::ExpertState::Cached:
            hue = hex(0x2f6feb);
            break;
        case tiers::ExpertState::Loading:
            hue = hex(0xd4a72c);
            break;
        default:
            hue = hex(0x8c959f);
            break;
        }
    }
    const Rgba8 bg = dark ? hex(0x1f2227) : hex(0xffffff);
    const Rgba8 c = mix(bg, hue, 0.3 + 0.7 * std::clamp(heat, 0.0, 1.0));
    return mix(c, dark ? hex(0xffffff) : hex(0x111111), 0.85 * std::clamp(flash, 0.0, 1.0));
}

Rgba8 denseBandColour(bool dark) {
    return dark ? hex(0x363a42) : hex(0xd9dce1);
}

} // namespace coli::app
