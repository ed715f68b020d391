#pragma once
// The Brain item's view of viz/: where each (layer, expert) cell is drawn, which cell a point
// picks, where the layer labels go, and each cell's colour. A thin adapter so that the item
// (brain_item.h) draws from plain rectangles and RGBA bytes; the maths lives in viz/.
// Units: layout units (viz/brain_layout.h); the item scales them uniformly into pixels.
// Thread-safety: an immutable value after make(); colour functions are pure.
#include "tiers/tier_telemetry.h"
#include "viz/brain_layout.h"
#include "viz/palette.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace coli::app {

struct SheetRect {
    float x = 0, y = 0, w = 0, h = 0;
};

struct SheetLabel {
    int layer = 0;
    float x = 0, y = 0; // the label's anchor: left edge, baseline (layout units)
    bool dense = false; // a dense layer (no routed experts, a band without cells)
};

class BrainSheet {
public:
    // The sheet of `map`'s shape for a view of aspect `aspect` (width / height). Layers whose
    // entries are all ExpertState::None are dense. nullopt when the map has no cells.
    static std::optional<BrainSheet> make(const tiers::ExpertMap& map, double aspect);

    float width() const;
    float height() const;
    float layerGap() const { return m_layout.layerGap(); } // room for a layer's label
    int nLayers() const { return m_nLayers; }
    int nExperts() const { return m_nExperts; }
    // Cells drawn (MoE layers' experts): a rect per ExpertMap index, w == 0 for dense layers.
    const std::vector<SheetRect>& cells() const { return m_cells; }
    const std::vector<SheetRect>& denseBands() const { return m_bands; }
    const std::vector<SheetLabel>& labels() const { return m_labels; }
    // The ExpertMap index (layer * nExperts + expert) of the cell under (x, y), or -1.
    int pick(float x, float y) const;

private:
    explicit BrainSheet(viz::BrainLayout layout) : m_layout(std::move(layout)) {}
    viz::BrainLayout m_layout;
    int m_nLayers = 0, m_nExperts = 0;
    std::vector<SheetRect> m_cells;
    std::vector<SheetRect> m_bands;
    std::vector<SheetLabel> m_labels;
};

using Rgba8 = viz::Rgba8;

// A cell's colour (viz/palette.h): hue from the state byte (ExpertState; a user pin is drawn as
// a mark of its own, userPinColour), brightness from heat in [0, 1] (the share of the log-heat
// scale: viz::heatBrightness's log1p(hits) / log1p(maxHits), with the palette's floor so cold
// cells keep their hue), mixed toward the flash colour by flash in [0, 1].
Rgba8 cellColour(uint8_t state, double heat, double flash, bool dark);
// The band drawn for a dense layer, and the mark drawn on a user-pinned cell.
Rgba8 denseBandColour(bool dark);
Rgba8 userPinColour(bool dark);
// The background the palette is tuned against (the sheet's colour).
Rgba8 sheetColour(bool dark);

} // namespace coli::app
