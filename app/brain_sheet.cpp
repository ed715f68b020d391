#include "brain_sheet.h"

#include <algorithm>

namespace coli::app {

namespace {
SheetRect toSheet(const viz::Rect& r) {
    return {r.x, r.y, r.w, r.h};
}
viz::Theme theme(bool dark) {
    return dark ? viz::Theme::Dark : viz::Theme::Light;
}
} // namespace

std::optional<BrainSheet> BrainSheet::make(const tiers::ExpertMap& map, double aspect) {
    if (map.nLayers < 1 || map.nExperts < 1 ||
        map.state.size() != size_t(map.nLayers) * size_t(map.nExperts))
        return std::nullopt;
    // A layer whose entries are all None has no routed experts: a dense layer.
    viz::ModelShape shape;
    shape.nExperts = map.nExperts;
    for (int l = 0; l < map.nLayers; ++l) {
        const auto first = map.state.begin() + std::ptrdiff_t(l) * map.nExperts;
        const bool dense = std::all_of(first, first + map.nExperts, [](uint8_t s) {
            return (s & tiers::kExpertStateMask) == uint8_t(tiers::ExpertState::None);
        });
        shape.layers.push_back(dense ? viz::LayerKind::Dense : viz::LayerKind::Moe);
    }
    Result<viz::BrainLayout> layout = viz::BrainLayout::make(shape, std::clamp(aspect, 0.05, 20.0));
    if (!layout.isOk()) return std::nullopt; // only a map without MoE layers gets here
    BrainSheet s(std::move(layout).value());
    s.m_nLayers = map.nLayers;
    s.m_nExperts = map.nExperts;
    s.m_cells.assign(map.state.size(), SheetRect{});
    for (const viz::CellPlacement& c : s.m_layout.cells())
        s.m_cells[size_t(c.index)] = toSheet(c.rect);
    for (const viz::LayerPlacement& l : s.m_layout.layers()) {
        const bool dense = l.kind == viz::LayerKind::Dense;
        if (dense) s.m_bands.push_back(toSheet(l.rect));
        s.m_labels.push_back({l.layer, l.labelX, l.labelY, dense});
    }
    return s;
}

float BrainSheet::width() const {
    return m_layout.width();
}

float BrainSheet::height() const {
    return m_layout.height();
}

int BrainSheet::pick(float x, float y) const {
    const std::optional<viz::CellRef> c = m_layout.pick(x, y);
    return c ? m_layout.cellIndex(c->layer, c->expert) : -1;
}

Rgba8 cellColour(uint8_t state, double heat, double flash, bool dark) {
    const viz::BrainPalette& p = viz::brainPalette(theme(dark));
    return viz::cellColour(theme(dark), state,
                           p.floor + (1.0 - p.floor) * std::clamp(heat, 0.0, 1.0), flash);
}

Rgba8 denseBandColour(bool dark) {
    return viz::brainPalette(theme(dark)).states[0];
}

Rgba8 userPinColour(bool dark) {
    return viz::brainPalette(theme(dark)).userPinMark;
}

} // namespace coli::app

namespace coli::app {
Rgba8 sheetColour(bool dark) {
    return viz::brainPalette(theme(dark)).background;
}
} // namespace coli::app
