#include "viz/brain_layout.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace coli::viz {
namespace {

constexpr int64_t kMaxCells = int64_t(1) << 26;

struct Arrangement {
    int columns = 0;             // main-sheet columns actually used
    int perColumn = 0;           // layers per main column (the last may hold fewer)
    float width = 0, height = 0; // total extent
};

} // namespace

Result<BrainLayout> BrainLayout::make(const ModelShape& shape, double aspect) {
    const int nLayers = static_cast<int>(shape.layers.size());
    if (nLayers == 0)
        return Result<BrainLayout>(ErrorCode::InvalidArgument, "brain layout: no layers");
    if (!std::isfinite(aspect) || aspect < 0.05 || aspect > 20)
        return Result<BrainLayout>(ErrorCode::InvalidArgument, "brain layout: aspect ratio " +
                                                                   std::to_string(aspect) +
                                                                   " outside [0.05, 20]");
    int cellLayers = 0;
    for (LayerKind k : shape.layers)
        if (k != LayerKind::Dense) ++cellLayers;
    if (cellLayers > 0 && shape.nExperts < 1)
        return Result<BrainLayout>(ErrorCode::InvalidArgument,
                                   "brain layout: " + std::to_string(shape.nExperts) +
                                       " experts per MoE layer (need at least 1)");
    if (shape.nExperts < 0)
        return Result<BrainLayout>(ErrorCode::InvalidArgument,
                                   "brain layout: negative expert count");
    if (int64_t(nLayers) * shape.nExperts > kMaxCells)
        return Result<BrainLayout>(ErrorCode::InvalidArgument,
                                   "brain layout: " + std::to_string(nLayers) + " x " +
                                       std::to_string(shape.nExperts) +
                                       " cells exceed the limit of 2^26");

    BrainLayout L;
    L.m_nExperts = shape.nExperts;
    L.m_cellLayers = cellLayers;
    // A block near square: sqrt-ish width, up to 1.5x wider when that leaves fewer empty places
    // in the last row (384 experts: 24 x 16 instead of a ragged 20 x 20).
    const int e = std::max(shape.nExperts, 1);
    const int minCols = static_cast<int>(std::ceil(std::sqrt(double(e))));
    const int maxCols = std::max(minCols, static_cast<int>(std::floor(1.5 * std::sqrt(double(e)))));
    L.m_blockCols = minCols;
    for (int c = minCols; c <= maxCols; ++c) {
        const int waste = (e + c - 1) / c * c - e;
        const int bestWaste = (e + L.m_blockCols - 1) / L.m_blockCols * L.m_blockCols - e;
        if (waste < bestWaste) L.m_blockCols = c;
    }
    L.m_blockRows = (e + L.m_blockCols - 1) / L.m_blockCols;
    // The gap holds a layer's label: a quarter of a block, at least 1.5 cells.
    L.m_gap = std::max(1.5f, 0.25f * float(L.m_blockRows));
    const float gap = L.m_gap;
    const float margin = gap;
    const float blockW = float(L.m_blockCols);
    const float blockH = float(L.m_blockRows);
    // Dense bands: thin but visible (an eighth of a block, at least one cell row).
    const float bandH = std::max(1.0f, std::floor(blockH / 8.0f));
    const float mtpGap = 3.0f * gap;

    std::vector<int> mainLayers, mtpLayers;
    for (int i = 0; i < nLayers; ++i)
        (shape.layers[i] == LayerKind::Mtp ? mtpLayers : mainLayers).push_back(i);
    auto layerH = [&](int i) { return shape.layers[i] == LayerKind::Dense ? bandH : blockH; };
    auto stackH = [&](const std::vector<int>& ls, size_t from, size_t to) {
        float h = 0;
        for (size_t j = from; j < to; ++j)
            h += layerH(ls[j]) + (j > from ? gap : 0.0f);
        return h;
    };
    const float mtpH = stackH(mtpLayers, 0, mtpLayers.size());
    const float mtpW = mtpLayers.empty() ? 0.0f : mtpGap + blockW;

    auto arrange = [&](int nc) {
        Arrangement a;
        const int m = static_cast<int>(mainLayers.size());
        a.perColumn = m == 0 ? 0 : (m + nc - 1) / nc;
        a.columns = m == 0 ? 0 : (m + a.perColumn - 1) / a.perColumn;
        float colH = mtpH;
        for (int c = 0; c < a.columns; ++c) {
            const size_t from = size_t(c) * a.perColumn;
            const size_t to = std::min(size_t(m), from + a.perColumn);
            colH = std::max(colH, stackH(mainLayers, from, to));
        }
        const float mainW = a.columns * blockW + std::max(0, a.columns - 1) * gap;
        a.width = 2 * margin + (a.columns == 0 ? blockW - mtpGap : mainW) + mtpW;
        a.height = 2 * margin + colH;
        return a;
    };
    Arrangement best = arrange(1);
    double bestScore = std::numeric_limits<double>::infinity();
    for (int nc = 1; nc <= std::max<int>(1, static_cast<int>(mainLayers.size())); ++nc) {
        const Arrangement a = arrange(nc);
        const double score = std::abs(std::log(double(a.width) / a.height / aspect));
        if (score < bestScore - 1e-9) {
            bestScore = score;
            best = a;
        }
    }
    L.m_width = best.width;
    L.m_height = best.height;

    L.m_layers.resize(nLayers);
    auto place = [&](int layer, int column, float x, float y) {
        LayerPlacement& p = L.m_layers[layer];
        p.layer = layer;
        p.kind = shape.layers[layer];
        p.rect = {x, y, blockW, layerH(layer)};
        p.labelX = x;
        p.labelY = y - 0.25f * gap;
        p.column = column;
        p.firstCellIndex = p.kind == LayerKind::Dense ? -1 : layer * shape.nExperts;
    };
    for (int c = 0; c < best.columns; ++c) {
        Column col;
        col.x = margin + c * (blockW + gap);
        float y = margin;
        const size_t from = size_t(c) * best.perColumn;
        const size_t to = std::min(mainLayers.size(), from + best.perColumn);
        for (size_t j = from; j < to; ++j) {
            place(mainLayers[j], c, col.x, y);
            col.layers.push_back(mainLayers[j]);
            y += layerH(mainLayers[j]) + gap;
        }
        L.m_columns.push_back(std::move(col));
    }
    if (!mtpLayers.empty()) {
        Column col;
        col.x = best.columns == 0
                    ? margin
                    : margin + best.columns * blockW + (best.columns - 1) * gap + mtpGap;
        float y = margin;
        for (int layer : mtpLayers) {
            place(layer, best.columns, col.x, y);
            col.layers.push_back(layer);
            y += layerH(layer) + gap;
        }
        L.m_columns.push_back(std::move(col));
    }
    return L;
}

bool BrainLayout::hasCells(int layer) const {
    return layer >= 0 && layer < nLayers() && m_layers[layer].kind != LayerKind::Dense;
}

std::optional<Rect> BrainLayout::cellRect(int layer, int expert) const {
    if (!hasCells(layer) || expert < 0 || expert >= m_nExperts) return std::nullopt;
    const Rect& b = m_layers[layer].rect;
    const float size = 1.0f - 2.0f * kCellInset;
    return Rect{b.x + float(expert % m_blockCols) + kCellInset,
                b.y + float(expert / m_blockCols) + kCellInset, size, size};
}

std::vector<CellPlacement> BrainLayout::cells() const {
    std::vector<CellPlacement> out;
    out.reserve(size_t(cellCount()));
    for (const LayerPlacement& p : m_layers) {
        if (p.kind == LayerKind::Dense) continue;
        for (int e = 0; e < m_nExperts; ++e)
            out.push_back({p.layer, e, cellIndex(p.layer, e), *cellRect(p.layer, e)});
    }
    return out;
}

std::optional<int> BrainLayout::pickLayer(float x, float y) const {
    if (!std::isfinite(x) || !std::isfinite(y)) return std::nullopt;
    // Columns are sorted by x: the last one starting at or left of x.
    auto c = std::upper_bound(m_columns.begin(), m_columns.end(), x,
                              [](float v, const Column& col) { return v < col.x; });
    if (c == m_columns.begin()) return std::nullopt;
    const Column& col = *(c - 1);
    if (x >= col.x + float(m_blockCols)) return std::nullopt;
    // Layers of a column are stacked top to bottom: the last one starting at or above y.
    auto l = std::upper_bound(col.layers.begin(), col.layers.end(), y,
                              [this](float v, int layer) { return v < m_layers[layer].rect.y; });
    if (l == col.layers.begin()) return std::nullopt;
    const int layer = *(l - 1);
    if (!m_layers[layer].rect.contains(x, y)) return std::nullopt;
    return layer;
}

std::optional<CellRef> BrainLayout::pick(float x, float y) const {
    const std::optional<int> layer = pickLayer(x, y);
    if (!layer || !hasCells(*layer)) return std::nullopt;
    const Rect& b = m_layers[*layer].rect;
    const float fx = x - b.x, fy = y - b.y;
    const int cx = std::clamp(static_cast<int>(std::floor(fx)), 0, m_blockCols - 1);
    const int cy = std::clamp(static_cast<int>(std::floor(fy)), 0, m_blockRows - 1);
    const int expert = cy * m_blockCols + cx;
    if (expert >= m_nExperts) return std::nullopt;
    const float ix = fx - float(cx), iy = fy - float(cy);
    const float hi = 1.0f - kCellInset;
    if (ix < kCellInset || ix >= hi || iy < kCellInset || iy >= hi) return std::nullopt;
    return CellRef{*layer, expert};
}

} // namespace coli::viz
