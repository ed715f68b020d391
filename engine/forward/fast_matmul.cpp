#include "forward/fast_matmul.h"

#include "forward/kernels.h"
#include "quant/matmul.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace coli {

int groupMask(const MatrixView& w) {
    if (!w.quantised()) return 0;
    return quant::formatInfo(w.qfmt).groupSize == 32 ? kGroup32 : kGroup64;
}

void QuantisedRows::allocate(int maxRows, int maxCols) {
    const size_t n = size_t(maxRows) * size_t(maxCols);
    m_q32.assign(n, 0);
    m_q64.assign(n, 0);
    m_s32.assign(n / 32 + 1, 0.0f);
    m_s64.assign(n / 64 + 1, 0.0f);
}

void QuantisedRows::quantiseRow(int mask, const float* x, int cols, int r) {
    quantiseRowPart(mask, x, cols, r, 0, cols); // groups are independent: the same bytes
}

void QuantisedRows::quantiseRowPart(int mask, const float* x, int cols, int r, int c0, int c1) {
    for (int g : {32, 64}) {
        if (!(mask & (g == 32 ? kGroup32 : kGroup64))) continue;
        int8_t* q = (g == 32 ? m_q32 : m_q64).data() + size_t(r) * cols + c0;
        float* s = (g == 32 ? m_s32 : m_s64).data() + size_t(r) * (cols / g) + c0 / g;
        if (!quant::quantiseActivationRow(x + c0, c1 - c0, g, q, s).isOk())
            std::fill_n(s, (c1 - c0) / g, std::numeric_limits<float>::quiet_NaN());
    }
}

void QuantisedRows::copyRow(int mask, const QuantisedRows& from, int fromRow, int cols, int r) {
    for (int g : {32, 64}) {
        if (!(mask & (g == 32 ? kGroup32 : kGroup64))) continue;
        const auto& fq = g == 32 ? from.m_q32 : from.m_q64;
        const auto& fs = g == 32 ? from.m_s32 : from.m_s64;
        auto& q = g == 32 ? m_q32 : m_q64;
        auto& s = g == 32 ? m_s32 : m_s64;
        std::memcpy(q.data() + size_t(r) * cols, fq.data() + size_t(fromRow) * cols, size_t(cols));
        std::memcpy(s.data() + size_t(r) * (cols / g), fs.data() + size_t(fromRow) * (cols / g),
                    sizeof(float) * size_t(cols / g));
    }
}

ActInput QuantisedRows::input(const float* x, int r0, int n, int cols) const {
    ActInput in;
    in.x = x;
    in.n = n;
    in.cols = cols;
    in.q32 = {m_q32.data() + size_t(r0) * cols, m_s32.data() + size_t(r0) * (cols / 32), n, cols,
              32};
    in.q64 = {m_q64.data() + size_t(r0) * cols, m_s64.data() + size_t(r0) * (cols / 64), n, cols,
              64};
    return in;
}

void quantiseShare(const Team& team, int mask, const float* X, int n, int cols, QuantisedRows& qr) {
    if (!mask) return;
    const auto [t0, t1] = team.share(n);
    for (int64_t t = t0; t < t1; ++t)
        qr.quantiseRow(mask, X + size_t(t) * cols, cols, int(t));
}

void matmulRows(const MatrixView& W, const ActInput& in, float* Y, const float* bias, int64_t r0,
                int64_t r1) {
    if (r1 <= r0) return;
    if (W.quantised()) {
        const int g = quant::formatInfo(W.qfmt).groupSize;
        // Shapes and formats were checked at load; the activations by their quantiser.
        (void)quant::quantMatmulRows(W.qfmt, W.q, W.rows, W.cols, in.forGroup(g), Y, r0, r1);
    } else {
        // f32 rows (the router, in every container), one after another in memory: the first
        // token's dot prefetches ahead of its reads (dotFastAhead), into the next row but not
        // past the thread's last. Without prefetch the router of the OLMoE shape (64 x 2048, 32
        // rows per thread) took 50 us per layer, with the next row fetched into L2 28 us, four
        // rows at a time at decode (dotFastRows4: four chains of adds instead of one) 19-21 us.
        int64_t r = r0;
        if (in.n == 1)
            for (; r + 4 <= r1; r += 4)
                dotFastRows4(W.row(int(r)), size_t(W.cols), in.x, W.cols, Y + r);
        for (; r < r1; ++r) {
            const float* w = W.row(int(r));
            for (int t = 0; t < in.n; ++t) {
                const float* x = in.x + size_t(t) * in.cols;
                Y[size_t(t) * W.rows + r] =
                    t == 0 && r + 1 < r1 ? dotFastAhead(w, x, W.cols) : dotFast(w, x, W.cols);
            }
        }
    }
    if (bias)
        for (int t = 0; t < in.n; ++t)
            for (int64_t r = r0; r < r1; ++r)
                Y[size_t(t) * W.rows + r] += bias[r];
}

int64_t matrixRowBytes(const MatrixView& w) {
    return w.quantised() ? int64_t(quant::rowBytes(w.qfmt, w.cols)) : int64_t(w.cols) * 4;
}

int64_t taskBlocks(int64_t rowBytes, int tokens) {
    if (tokens > 1) return 0;
    constexpr int64_t kTaskBytes = 64 * 1024;
    return std::max<int64_t>(1, kTaskBytes / (rowBytes * Team::kRowBlock));
}

void matmulShare(const Team& team, std::span<const MatJob> jobs, const ActInput& in) {
    constexpr int64_t kBlock = Team::kRowBlock; // a thread's rows start at an -r8 tile
    int64_t blocks = 0, bytes = 1;
    for (const MatJob& j : jobs) {
        blocks += (j.w.rows + kBlock - 1) / kBlock;
        bytes = std::max(bytes, matrixRowBytes(j.w));
    }
    team.forBlockTasks(blocks, taskBlocks(bytes, in.n), [&](int64_t b0, int64_t b1) {
        int64_t first = 0; // the first block of the current job
        for (const MatJob& j : jobs) {
            const int64_t nb = (j.w.rows + kBlock - 1) / kBlock;
            const int64_t lo = std::max(b0, first), hi = std::min(b1, first + nb);
            if (lo < hi)
                matmulRows(j.w, in, j.y, j.bias, (lo - first) * kBlock,
                           std::min<int64_t>(j.w.rows, (hi - first) * kBlock));
            first += nb;
        }
    });
}

} // namespace coli
