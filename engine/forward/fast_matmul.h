#pragma once
// Internal: the matrix products of the Fast forward pass, split into the two phases a team runs
// (fast_team.h): the activations' rows are quantised once per input (a tokens phase), then any
// number of matrices reading that input share one rows phase. Each output element is computed by
// one thread with the kernels' fixed order (quant/matmul.h for quantised weights, dotFast for
// f32), so neither the team size nor the split changes a bit.
#include "forward/fast_team.h"
#include "model/weights.h"
#include "quant/formats.h"

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace coli {

// An input X [n, cols] (rows contiguous) and its quantised copies in groups of 32 and 64 (each
// valid only when its group size was asked for: see QuantisedRows).
struct ActInput {
    const float* x = nullptr;
    quant::QuantisedActivations q32, q64;
    int n = 0;
    int cols = 0;
    const quant::QuantisedActivations& forGroup(int g) const { return g == 32 ? q32 : q64; }
};

// Bit mask of the group sizes a set of matrices needs: kGroup32 | kGroup64 (f32 matrices none).
constexpr int kGroup32 = 1, kGroup64 = 2;
int groupMask(const MatrixView& w);

// Quantised rows of activations for group sizes 32 and 64: row r of an input of `cols` columns
// is stored at r * cols (so consecutive rows form one QuantisedActivations). Sized at load.
class QuantisedRows {
public:
    void allocate(int maxRows, int maxCols);
    // Quantises x [cols] into row r for every group size in `mask`. A row with NaN/Inf gets NaN
    // scales, so every product with it is NaN (the forward pass reports NaN logits as Numeric).
    void quantiseRow(int mask, const float* x, int cols, int r);
    // Columns [c0, c1) of row r only (whole groups of every size in mask): the groups of a
    // row that one thread computed.
    void quantiseRowPart(int mask, const float* x, int cols, int r, int c0, int c1);
    // Rows [r0, r0 + n) as an input whose f32 rows are x (may be null when only quantised
    // weights read it).
    ActInput input(const float* x, int r0, int n, int cols) const;
    // Row r's bytes copied from another QuantisedRows' row (same cols), for the groups in mask.
    void copyRow(int mask, const QuantisedRows& from, int fromRow, int cols, int r);

private:
    std::vector<int8_t> m_q32, m_q64; // [maxRows, maxCols]
    std::vector<float> m_s32, m_s64;  // [maxRows, maxCols / G]
};

// Tokens phase: this thread's share of X's n rows quantised into qr rows 0..n-1.
void quantiseShare(const Team& team, int mask, const float* X, int n, int cols, QuantisedRows& qr);

// Y [n, W.rows] rows [r0, r1) (all n tokens) = W . in (+ bias), on the calling thread.
void matmulRows(const MatrixView& W, const ActInput& in, float* Y, const float* bias, int64_t r0,
                int64_t r1);

// One matrix product of a rows phase.
struct MatJob {
    MatrixView w;
    float* y = nullptr;          // [n, w.rows]
    const float* bias = nullptr; // [w.rows] or null
};

// Stored bytes of one row of w.
int64_t matrixRowBytes(const MatrixView& w);
// Blocks of Team::kRowBlock rows per stolen task (Team::forBlockTasks) for rows of rowBytes read
// by `tokens` tokens: at decode about 64 KiB of weights, so that the tail a thief takes is short
// next to a phase (a 2048-row int8 projection is 4.4 MB) while the thief's extra kernel calls stay
// few; 0 (a static split) for several tokens, where the work is arithmetic, evenly split already,
// and tasks made a 30-token prefill 2-4 % slower on the OLMoE shape (docs/performance.md).
int64_t taskBlocks(int64_t rowBytes, int tokens);

// Rows [0, rows) of a phase over a matrix with rows of rowBytes read by `tokens` tokens, f(r0, r1)
// for each part this thread computes (Team::forBlockTasks in blocks of Team::kRowBlock rows).
template <class F>
void forRowTasks(const Team& team, int64_t rows, int64_t rowBytes, int tokens, F&& f) {
    constexpr int64_t kBlock = Team::kRowBlock;
    team.forBlockTasks(
        (rows + kBlock - 1) / kBlock, taskBlocks(rowBytes, tokens),
        [&](int64_t b0, int64_t b1) { f(b0 * kBlock, std::min(rows, b1 * kBlock)); });
}

// Rows phase: the jobs' output rows, concatenated, split over the team in blocks of 8 rows (whole
// tiles of the -r8 formats), balanced by stealing when team.steal is set (Team::forBlockTasks);
// all read `in`. No sync inside; the phase must end with one.
void matmulShare(const Team& team, std::span<const MatJob> jobs, const ActInput& in);

} // namespace coli
