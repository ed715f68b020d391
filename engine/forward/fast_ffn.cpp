#include "forward/fast_ffn.h"

#include "forward/kernels.h"
#include "quant/shared_math.h"

#include <algorithm>
#include <vector>

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

namespace {

int64_t mlpBytes(const SwiGluView& w) {
    return matrixRowBytes(w.gate) * w.gate.rows + matrixRowBytes(w.up) * w.up.rows +
           matrixRowBytes(w.down) * w.down.rows;
}

// The first item of each thread in expertSteal, bounds [size + 1]: items laid end to end by
// weight bytes, thread t owns those whose start lies in [C t / size, C (t + 1) / size) of the
// total C.
void ownedItems(std::span<const FfnItem> items, int size, std::vector<int>& bounds) {
    int64_t total = 0;
    for (const FfnItem& it : items)
        total += mlpBytes(it.w);
    bounds.assign(size_t(size) + 1, int(items.size()));
    int64_t start = 0;
    size_t i = 0;
    for (int t = 0; t < size; ++t) {
        const int64_t bound = total * t / size;
        while (i < items.size() && start < bound)
            start += mlpBytes(items[i++].w);
        bounds[size_t(t)] = int(i);
    }
}

} // namespace

int downChunkRows(const SwiGluView& w, int dModel) {
    constexpr int64_t kDownChunkBytes = 64 * 1024;
    const int64_t block = Team::kRowBlock;
    const int64_t rows =
        std::max<int64_t>(1, kDownChunkBytes / matrixRowBytes(w.down) / block) * block;
    return int(std::min<int64_t>(rows, dModel));
}

void expertSteal(const Team& team, std::span<const FfnItem> items, int dModel,
                 const ExpertTasks& tasks) {
    if (items.empty()) return;
    const int rows = tasks.downRows > 0 ? tasks.downRows : downChunkRows(items.front().w, dModel);
    const int64_t perItem = 1 + (dModel + rows - 1) / rows; // gate/up, then the down chunks
    // Task k of the range of the thread owning items [i0, i1): k - i0 * perItem < i1 - i0 is
    // that item's gate/up, the rest its down chunks item by item.
    struct Task {
        int item;
        int chunk; // -1: gate/up
    };
    // The same bounds on every thread (grown once per thread, not per call).
    thread_local std::vector<int> bounds;
    ownedItems(items, team.size, bounds);
    const auto decode = [&](int64_t k) {
        int owner = 0;
        while (owner + 1 < team.size && bounds[size_t(owner) + 1] * perItem <= k)
            ++owner;
        const int i0 = bounds[size_t(owner)], i1 = bounds[size_t(owner) + 1];
        const int64_t local = k - i0 * perItem;
        if (local < i1 - i0) return Task{i0 + int(local), -1};
        const int64_t j = local - (i1 - i0);
        return Task{i0 + int(j / (perItem - 1)), int(j % (perItem - 1))};
    };
    const int64_t first = bounds[size_t(team.id)] * perItem;
    const int64_t end = bounds[size_t(team.id) + 1] * perItem;
    if (team.steal) team.steal->open(team.id, first, end);
    const auto ready = [&](int64_t k) {
        const Task t = decode(k);
        return t.chunk < 0 || tasks.actDone[t.item].load(std::memory_order_acquire) == tasks.epoch;
    };
    // Tasks [k0, k1) in order; a run of one item's down chunks is one kernel call.
    const auto compute = [&](int64_t k0, int64_t k1) {
        for (int64_t k = k0; k < k1;) {
            const Task t = decode(k);
            const FfnItem& it = items[size_t(t.item)];
            if (t.chunk < 0) {
                gateUpRows(it, 0, it.w.gate.rows);
                tasks.actDone[t.item].store(tasks.epoch, std::memory_order_release);
                ++k;
                continue;
            }
            // The run of this item's chunks within [k, k1): an item's chunks are consecutive
            // tasks, the next item's chunk 0 follows its last.
            const int64_t last = std::min<int64_t>(k1, k + (perItem - 1 - t.chunk));
            // The owner's own down chunks come after all its gate/up tasks, so this wait is
            // empty for it; a thief took the chunk only when ready.
            while (tasks.actDone[t.item].load(std::memory_order_acquire) != tasks.epoch) {
            }
            const int r0 = t.chunk * rows;
            const int r1 = std::min<int64_t>(dModel, (t.chunk + (last - k)) * int64_t(rows));
            matmulRows(it.w.down, downInput(it), it.y, nullptr, r0, r1);
            k = last;
        }
    };
    if (!team.steal) {
        compute(first, end);
        return;
    }
    for (StealRanges::Tasks t; !(t = team.steal->take(team.id, ready)).empty();)
        compute(t.first, t.end);
}

void downShare(const Team& team, std::span<const FfnItem> items, int dModel) {
    const auto [r0, r1] = team.shareRows(dModel);
    for (const FfnItem& it : items)
        if (it.cnt > 0) matmulRows(it.w.down, downInput(it), it.y, nullptr, r0, r1);
}

} // namespace coli
