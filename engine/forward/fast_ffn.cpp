#include "forward/fast_ffn.h"

#include "forward/kernels.h"
#include "quant/shared_math.h"

#include <algorithm>

namespace coli {

int ffnUnitRows(const SwiGluView& w) {
    return w.down.quantised() ? quant::formatInfo(w.down.qfmt).groupSize : 16;
}

ActInput downInput(const FfnItem& it) {
    const int ffn = it.w.gate.rows;
    return it.act->input(it.g, it.actRow, it.cnt, ffn);
}

namespace {

// gateUpShare's cost of one unit of rows, in tokens' arithmetic: the tokens plus
// kUnitCostTokens for reading the unit's weights (an int4-g64 row of 2048 columns streams in
// about 64 ns per thread; one token's arithmetic on it takes about 20 ns at prefill). Units
// shared by count instead left 8-12 ms of a 30-token prompt's ~210 waiting at the barrier on the
// OLMoE shape; by this cost 1-4 ms (docs/performance.md, "gate/up shared by cost"). 4 was not
// tuned further.
constexpr int64_t kUnitCostTokens = 4;

int64_t unitCost(const FfnItem& it) {
    return it.cnt > 0 ? it.cnt + kUnitCostTokens : 0;
}

// Rows [r0, r1) of one item: gate, up, act, and act's quantised groups.
void gateUpRows(const FfnItem& it, int r0, int r1) {
    const int ffn = it.w.gate.rows;
    matmulRows(it.w.gate, it.in, it.g, nullptr, r0, r1);
    matmulRows(it.w.up, it.in, it.u, nullptr, r0, r1);
    for (int t = 0; t < it.cnt; ++t)
        quant::siluMulRow(it.g + size_t(t) * ffn + r0, it.u + size_t(t) * ffn + r0, r1 - r0);
    const int mask = groupMask(it.w.down);
    if (mask)
        for (int t = 0; t < it.cnt; ++t)
            it.act->quantiseRowPart(mask, it.g + size_t(t) * ffn, ffn, it.actRow + t, r0, r1);
}

} // namespace

void gateUpShare(const Team& team, std::span<const FfnItem> items) {
    // A unit of item i costs (cnt_i + kUnitCostTokens): its weight bytes, read once whatever the
    // tokens, count as that many tokens' arithmetic. The units are laid end to end by cost and
    // thread t takes those starting in [C t / size, C (t + 1) / size) of the total C: the same
    // formula on every thread, so the ranges partition the units.
    const auto unitsOf = [](const FfnItem& it) {
        const int ur = ffnUnitRows(it.w);
        return int64_t(it.w.gate.rows + ur - 1) / ur;
    };
    int64_t total = 0;
    for (const FfnItem& it : items)
        total += unitCost(it) * unitsOf(it);
    const int64_t lo = total * team.id / team.size, hi = total * (team.id + 1) / team.size;
    int64_t start = 0; // the cost before the item
    for (const FfnItem& it : items) {
        const int ur = ffnUnitRows(it.w), ffn = it.w.gate.rows;
        const int64_t nu = unitsOf(it), cost = unitCost(it);
        if (cost == 0) continue;
        // Units j whose start, start + j * cost, lies in [lo, hi): the first unit at or past a
        // bound (0 for a bound at or before the item: the quotient is then <= 0).
        const auto firstAt = [&](int64_t bound) {
            return std::clamp<int64_t>((bound - start + cost - 1) / cost, 0, nu);
        };
        const int64_t j0 = firstAt(lo), j1 = firstAt(hi);
        if (j0 < j1) gateUpRows(it, int(j0 * ur), int(std::min<int64_t>(ffn, j1 * ur)));
        start += nu * cost;
    }
}

bool evenWholeItems(const Team& team, std::span<const FfnItem> items) {
    if (items.empty() || items.size() % size_t(team.size) != 0) return false;
    return std::all_of(items.begin(), items.end(),
                       [&](const FfnItem& it) { return it.cnt == items.front().cnt; });
}

void expertShare(const Team& team, std::span<const FfnItem> items, int dModel) {
    const auto [i0, i1] = team.share(int64_t(items.size()));
    for (int64_t i = i0; i < i1; ++i) {
        const FfnItem& it = items[size_t(i)];
        if (it.cnt == 0) continue;
        gateUpRows(it, 0, it.w.gate.rows);
        matmulRows(it.w.down, downInput(it), it.y, nullptr, 0, dModel);
    }
}

void downShare(const Team& team, std::span<const FfnItem> items, int dModel) {
    const auto [r0, r1] = team.shareRows(dModel);
    for (const FfnItem& it : items)
        if (it.cnt > 0) matmulRows(it.w.down, downInput(it), it.y, nullptr, r0, r1);
}

} // namespace coli
