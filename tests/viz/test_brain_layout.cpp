// The Brain's cortex layout: no overlaps, inside the extent, layer order kept, picking by grid
// maths agrees with the drawn rectangles (issue 12).
#include "viz/brain_layout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

using namespace coli::viz;

namespace {

ModelShape moeShape(int layers, int experts) {
    return {std::vector<LayerKind>(size_t(layers), LayerKind::Moe), experts};
}
// DeepSeek/Kimi style: dense first layers, an MTP layer at the end.
ModelShape mixedShape(int layers, int experts, int dense) {
    ModelShape s = moeShape(layers, experts);
    for (int i = 0; i < dense; ++i)
        s.layers[i] = LayerKind::Dense;
    s.layers.back() = LayerKind::Mtp;
    return s;
}

BrainLayout makeOrDie(const ModelShape& s, double aspect) {
    auto r = BrainLayout::make(s, aspect);
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    return std::move(r).value();
}

// Every drawn rectangle (cells and dense bands): pairwise disjoint, by a sweep over x.
void expectNoOverlap(const BrainLayout& L) {
    std::vector<Rect> rects;
    for (const CellPlacement& c : L.cells())
        rects.push_back(c.rect);
    for (const LayerPlacement& p : L.layers())
        if (p.kind == LayerKind::Dense) rects.push_back(p.rect);
    std::sort(rects.begin(), rects.end(), [](const Rect& a, const Rect& b) { return a.x < b.x; });
    size_t overlaps = 0;
    for (size_t i = 0; i < rects.size(); ++i)
        for (size_t j = i + 1; j < rects.size() && rects[j].x < rects[i].right(); ++j)
            if (rects[j].y < rects[i].bottom() && rects[i].y < rects[j].bottom()) ++overlaps;
    EXPECT_EQ(overlaps, 0u);
}

void expectInsideExtent(const BrainLayout& L) {
    auto inside = [&](const Rect& r) {
        return r.x >= 0 && r.y >= 0 && r.right() <= L.width() && r.bottom() <= L.height() &&
               r.w > 0 && r.h > 0;
    };
    size_t outside = 0;
    for (const CellPlacement& c : L.cells())
        outside += !inside(c.rect);
    for (const LayerPlacement& p : L.layers())
        outside += !inside(p.rect);
    EXPECT_EQ(outside, 0u);
}

// Main-sheet layers read in order: column by column, top to bottom; MTP layers right of all.
void expectLayerOrder(const BrainLayout& L) {
    const LayerPlacement* prev = nullptr;
    float mainRight = 0;
    for (const LayerPlacement& p : L.layers()) {
        if (p.kind == LayerKind::Mtp) continue;
        mainRight = std::max(mainRight, p.rect.right());
        if (prev) {
            const bool later = p.column > prev->column ||
                               (p.column == prev->column && p.rect.y > prev->rect.bottom());
            EXPECT_TRUE(later) << "layer " << p.layer << " not after layer " << prev->layer;
            if (p.column > prev->column) {
                EXPECT_GT(p.rect.x, prev->rect.right());
            }
        }
        prev = &p;
    }
    for (const LayerPlacement& p : L.layers())
        if (p.kind == LayerKind::Mtp) {
            EXPECT_GT(p.rect.x, mainRight + L.layerGap());
        }
}

void expectPickEveryCell(const BrainLayout& L) {
    const float eps = 0.02f;
    size_t wrong = 0;
    for (const CellPlacement& c : L.cells()) {
        const Rect& r = c.rect;
        const CellRef want{c.layer, c.expert};
        const float xs[] = {r.x + r.w / 2, r.x + eps, r.right() - eps, r.x + eps, r.right() - eps};
        const float ys[] = {r.y + r.h / 2, r.y + eps, r.y + eps, r.bottom() - eps,
                            r.bottom() - eps};
        for (int k = 0; k < 5; ++k) {
            const auto got = L.pick(xs[k], ys[k]);
            if (!got || !(*got == want)) ++wrong;
        }
        // The gutter right of and below the cell belongs to no cell.
        if (L.pick(r.right() + BrainLayout::kCellInset, r.y + r.h / 2)) ++wrong;
        if (L.pick(r.x + r.w / 2, r.bottom() + BrainLayout::kCellInset)) ++wrong;
    }
    EXPECT_EQ(wrong, 0u);
}

void expectNothingInGaps(const BrainLayout& L) {
    EXPECT_FALSE(L.pick(-1, -1));
    EXPECT_FALSE(L.pick(L.width() + 1, L.height() / 2));
    EXPECT_FALSE(L.pick(L.width() / 2, L.height() + 1));
    EXPECT_FALSE(L.pick(NAN, 1));
    for (const LayerPlacement& p : L.layers()) {
        const Rect& r = p.rect;
        const float cx = r.x + r.w / 2, cy = r.y + r.h / 2;
        EXPECT_FALSE(L.pick(cx, r.y - L.layerGap() / 2)) << "gap above layer " << p.layer;
        EXPECT_FALSE(L.pick(cx, r.bottom() + L.layerGap() / 2)) << "gap below layer " << p.layer;
        EXPECT_FALSE(L.pick(r.x - L.layerGap() / 2, cy)) << "gap left of layer " << p.layer;
        EXPECT_FALSE(L.pick(r.right() + L.layerGap() / 2, cy)) << "gap right of " << p.layer;
        EXPECT_EQ(L.pickLayer(cx, cy), std::optional<int>(p.layer));
        if (p.kind == LayerKind::Dense) {
            EXPECT_FALSE(L.pick(cx, cy)) << "dense " << p.layer;
        }
    }
}

void checkAll(const ModelShape& s, double aspect) {
    SCOPED_TRACE(std::to_string(s.layers.size()) + " x " + std::to_string(s.nExperts) + " aspect " +
                 std::to_string(aspect));
    const BrainLayout L = makeOrDie(s, aspect);
    expectNoOverlap(L);
    expectInsideExtent(L);
    expectLayerOrder(L);
    expectPickEveryCell(L);
    expectNothingInGaps(L);
}

} // namespace

TEST(BrainLayout, Small6x16) {
    for (double aspect : {16.0 / 9.0, 1.0, 0.5, 3.0})
        checkAll(moeShape(6, 16), aspect);
}

TEST(BrainLayout, Large75x256) {
    for (double aspect : {16.0 / 9.0, 1.0})
        checkAll(moeShape(75, 256), aspect);
}

TEST(BrainLayout, DenseAndMtpLayers61x384) {
    checkAll(mixedShape(61, 384, 3), 16.0 / 9.0);
}

TEST(BrainLayout, FortyThousandCells) {
    checkAll(moeShape(100, 400), 16.0 / 9.0);
}

TEST(BrainLayout, OddShapes) {
    checkAll(moeShape(1, 1), 1.0);
    checkAll(moeShape(3, 7), 2.0); // a partial last row in each block
    checkAll(mixedShape(2, 5, 1), 1.0);
    ModelShape allDense{std::vector<LayerKind>(4, LayerKind::Dense), 0};
    checkAll(allDense, 1.0);
}

TEST(BrainLayout, ExtentFollowsAspect) {
    for (double aspect : {16.0 / 9.0, 1.0, 0.6}) {
        const BrainLayout L = makeOrDie(moeShape(75, 256), aspect);
        EXPECT_LT(std::abs(std::log(L.width() / L.height() / aspect)), std::log(1.5))
            << aspect << ": " << L.width() << " x " << L.height();
    }
}

TEST(BrainLayout, CellIndexMatchesExpertMap) {
    const BrainLayout L = makeOrDie(mixedShape(8, 16, 2), 1.5);
    EXPECT_EQ(L.indexCount(), 8 * 16);
    EXPECT_EQ(L.cellCount(), 6 * 16);
    const std::vector<CellPlacement> cells = L.cells();
    ASSERT_EQ(int(cells.size()), L.cellCount());
    for (size_t i = 0; i < cells.size(); ++i) {
        EXPECT_EQ(cells[i].index, cells[i].layer * 16 + cells[i].expert);
        EXPECT_EQ(cells[i].index, L.cellIndex(cells[i].layer, cells[i].expert));
        if (i > 0) {
            EXPECT_GT(cells[i].index, cells[i - 1].index);
        }
    }
    EXPECT_EQ(L.layers()[0].firstCellIndex, -1);
    EXPECT_EQ(L.layers()[2].firstCellIndex, 32);
    EXPECT_FALSE(L.cellRect(0, 0)); // dense
    EXPECT_FALSE(L.cellRect(2, 16));
    EXPECT_FALSE(L.cellRect(8, 0));
    EXPECT_FALSE(L.hasCells(-1));
    EXPECT_TRUE(L.hasCells(7));
    // Dense bands are visible but thinner than a block.
    EXPECT_GT(L.layers()[0].rect.h, 0.5f);
    EXPECT_LT(L.layers()[0].rect.h, L.layers()[2].rect.h);
}

// Random points: the grid-maths pick agrees with a brute-force search of the drawn rectangles.
TEST(BrainLayout, PickAgreesWithBruteForce) {
    const BrainLayout L = makeOrDie(mixedShape(9, 10, 2), 1.3);
    const std::vector<CellPlacement> cells = L.cells();
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> ux(-1, L.width() + 1), uy(-1, L.height() + 1);
    int hits = 0;
    for (int i = 0; i < 20000; ++i) {
        const float x = ux(rng), y = uy(rng);
        std::optional<CellRef> want;
        for (const CellPlacement& c : cells)
            if (c.rect.contains(x, y)) want = CellRef{c.layer, c.expert};
        const auto got = L.pick(x, y);
        ASSERT_EQ(got.has_value(), want.has_value()) << x << ", " << y;
        if (want) {
            EXPECT_EQ(*got, *want);
            ++hits;
        }
    }
    EXPECT_GT(hits, 1000);
}

TEST(BrainLayout, DefaultIsEmpty) {
    const BrainLayout L;
    EXPECT_EQ(L.nLayers(), 0);
    EXPECT_EQ(L.cellCount(), 0);
    EXPECT_TRUE(L.cells().empty());
    EXPECT_FALSE(L.pick(0, 0));
    EXPECT_FALSE(L.pickLayer(0, 0));
    EXPECT_FALSE(L.cellRect(0, 0));
}

TEST(BrainLayout, RejectsBadInput) {
    EXPECT_EQ(BrainLayout::make({}, 1.0).status().code(), coli::ErrorCode::InvalidArgument);
    EXPECT_FALSE(BrainLayout::make(moeShape(4, 0), 1.0).isOk());
    EXPECT_FALSE(BrainLayout::make(moeShape(4, 8), 0.0).isOk());
    EXPECT_FALSE(BrainLayout::make(moeShape(4, 8), NAN).isOk());
    EXPECT_FALSE(BrainLayout::make(moeShape(1 << 14, 1 << 13), 1.0).isOk());
    const auto r = BrainLayout::make(moeShape(4, 0), 1.0);
    EXPECT_NE(r.status().message().find("experts"), std::string::npos) << r.status().message();
}
