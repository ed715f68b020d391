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
    int64_t units = 0;
    for (const FfnItem& it : items) {
        const int ur = ffnUnitRows(it.w);
        units += (it.w.gate.rows + ur - 1) / ur;
    }
    const auto [u0, u1] = team.share(units);
    int64_t first = 0;
    for (const FfnItem& it : items) {
        const int ur = ffnUnitRows(it.w), ffn = it.w.gate.rows;
        const int64_t nu = (ffn + ur - 1) / ur;
        const int64_t lo = std::max(u0, first), hi = std::min(u1, first + nu);
        if (lo < hi && it.cnt > 0)
            gateUpRows(it, int((lo - first) * ur), int(std::min<int64_t>(ffn, (hi - first) * ur)));
        first += nu;
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
