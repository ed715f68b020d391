#pragma once
// The Brain's cortex layout (issue 12, docs/visualisation.md "Brain layout"): one rectangle per
// (layer, expert) cell of a model, in layout units, for any shape (6 x 16 up to 75 x 256 = 19,200
// cells and beyond, e.g. 61 x 384), plus CPU picking by grid maths (Qt 6.4 has no per-instance
// picking).
//
// Geometry, in layout units (1 unit = the pitch of one cell; y grows downwards, as on screen):
//  - each MoE (or MTP) layer's experts form a compact block of `blockCols` x `blockRows` pitches,
//    wrapped row by row (expert e at column e % blockCols, row e / blockCols); blockCols is
//    ceil(sqrt(n)), or up to 1.5 sqrt(n) when that leaves fewer empty places; a cell is its
//    pitch square inset by `cellInset` on each side, so neighbouring cells are visibly apart;
//  - a dense layer (no routed experts, no cells) is a thin band as wide as a block, so it is
//    visible and has room for its label;
//  - layers flow top to bottom in columns, left to right (a folded sheet), in layer order; the
//    column count is chosen so the whole extent best matches the requested aspect ratio;
//  - between layers (vertically) and columns (horizontally) there is a gap of `layerGap` units,
//    the room for a layer's label (anchored at the top-left of the gap above its block);
//  - MTP layers are set apart in a last column of their own, after a wider gap.
// Thread-safety: a BrainLayout is an immutable value after make(); const methods may be called
// from any thread at once. A default-constructed BrainLayout is empty: no layers, no cells, every
// pick returns nullopt (a view holds one before the model is known).
#include <cstdint>
#include <optional>
#include <vector>

#include "core/status.h"

namespace coli::viz {

enum class LayerKind : uint8_t {
    Dense, // a dense FFN: no routed experts, drawn as a band without cells
    Moe,   // a routed-expert layer: one cell per expert
    Mtp,   // a multi-token-prediction layer (MoE FFN): cells, set apart from the main sheet
};

// The model's shape: a kind per decoder layer (in model order, the order of
// coli::tiers::ExpertMap) and the routed experts of every MoE/MTP layer.
struct ModelShape {
    std::vector<LayerKind> layers;
    int nExperts = 0;
};

struct Rect {
    float x = 0, y = 0, w = 0, h = 0; // top-left corner and size, layout units
    // Half-open: [x, x + w) x [y, y + h).
    bool contains(float px, float py) const {
        return px >= x && px < x + w && py >= y && py < y + h;
    }
    float right() const { return x + w; }
    float bottom() const { return y + h; }
};

struct LayerPlacement {
    int layer = 0;
    LayerKind kind = LayerKind::Moe;
    Rect rect;               // the block (MoE/MTP) or the band (dense), layout units
    float labelX = 0;        // label anchor: left edge of the block,
    float labelY = 0;        // and the baseline inside the gap above it
    int column = 0;          // which column of the sheet (MTP layers: the last, set-apart one)
    int firstCellIndex = -1; // cellIndex(layer, 0); -1 for a dense layer
};

struct CellRef {
    int layer = 0;
    int expert = 0;
    bool operator==(const CellRef&) const = default;
};

struct CellPlacement {
    int layer = 0;
    int expert = 0;
    int index = 0; // cellIndex(layer, expert)
    Rect rect;
};

class BrainLayout {
public:
    // Geometry constants (layout units).
    static constexpr float kCellInset = 0.08f; // each side of a cell inside its unit pitch

    // Lays out `shape` for a view of aspect ratio `aspect` (width / height, e.g. 16/9).
    // Errors (InvalidArgument, message names the problem): no layers; nExperts < 1 while a
    // MoE/MTP layer exists; aspect not finite or outside [0.05, 20]; more than 2^26 cells.
    // Cost: O(L^2) for L layers (column-count search), O(1) per cell afterwards.
    static Result<BrainLayout> make(const ModelShape& shape, double aspect);

    int nLayers() const { return static_cast<int>(m_layers.size()); }
    int nExperts() const { return m_nExperts; }
    // Cells the ExpertMap indexes: nLayers * nExperts (dense layers' entries have no cell).
    int indexCount() const { return nLayers() * m_nExperts; }
    // Cells actually drawn: experts of MoE/MTP layers.
    int cellCount() const { return m_cellLayers * m_nExperts; }
    int blockCols() const { return m_blockCols; }
    int blockRows() const { return m_blockRows; }
    float layerGap() const { return m_gap; }
    // Width and height of everything: all rects lie in [0, width) x [0, height).
    float width() const { return m_width; }
    float height() const { return m_height; }

    // layer * nExperts + expert: the index of coli::tiers::ExpertMap's arrays. No range check.
    int cellIndex(int layer, int expert) const { return layer * m_nExperts + expert; }
    // True when `layer` is in range and has cells (MoE or MTP).
    bool hasCells(int layer) const;
    // The cell's rectangle; nullopt when layer/expert is out of range or the layer is dense. O(1).
    std::optional<Rect> cellRect(int layer, int expert) const;
    // Every layer in model order.
    const std::vector<LayerPlacement>& layers() const { return m_layers; }
    // Every drawn cell, in cellIndex order (dense layers skipped). O(cells); call once per shape.
    std::vector<CellPlacement> cells() const;

    // The cell whose (inset) rectangle contains (x, y) in layout units; nullopt in the gutters
    // between cells, in gaps between layers, on dense bands and outside. O(log L).
    std::optional<CellRef> pick(float x, float y) const;
    // The layer whose block or band contains (x, y) (dense bands included); nullopt elsewhere.
    // O(log L).
    std::optional<int> pickLayer(float x, float y) const;

private:
    struct Column {
        float x = 0;
        std::vector<int> layers; // in top-to-bottom order
    };
    std::vector<LayerPlacement> m_layers;
    std::vector<Column> m_columns; // sorted by x
    int m_nExperts = 0;
    int m_cellLayers = 0;
    int m_blockCols = 0, m_blockRows = 0;
    float m_gap = 0, m_width = 0, m_height = 0;
};

} // namespace coli::viz
