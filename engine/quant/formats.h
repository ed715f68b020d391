#pragma once
// Block formats of quantised weights and activations, and THE quantiser (the converter writes
// exactly these bytes; kernels read them). All formats quantise along the input dimension (cols)
// in groups of G consecutive values; a row of `cols` values is cols/G blocks stored back to back,
// and a matrix is its rows back to back (row r starts at r * rowBytes(fmt, cols)).
//
// Byte layouts (little-endian; no padding between blocks, so a block's scale may be unaligned):
//   Q8_G32 / Q8_G64  block = f32 scale (4 bytes, IEEE binary32) + G int8 values (two's complement)
//                    value i of the group is byte 4 + i.           36 / 68 bytes per block.
//   Q4_G32 / Q4_G64  block = f32 scale (4 bytes) + G/2 bytes; value 2j is the LOW nibble of byte
//                    4 + j, value 2j+1 the HIGH nibble; a nibble is a 4-bit two's complement
//                    integer (-8..7).                               20 / 36 bytes per block.
// Row-tiled variants (the same names with "-r8": int8-g32-r8, ..., int4-g64-r8): the same blocks,
// the same bytes in all, laid out so that a kernel reading eight rows at once reads one sequential
// stream. The matrix is tiles of kRowTile = 8 consecutive rows (rows must be a multiple of 8);
// tile t (rows 8t .. 8t+7) occupies bytes [8t * rowBytes, (8t + 8) * rowBytes), and holds, for
// each group g in increasing order, the eight rows' f32 scales (32 bytes, row order) followed by
// the eight rows' G * bits / 8 value bytes (row order, each exactly as in the block above).
// rowBlocks() gives where row r's scales and values are in either layout. The quantised values,
// scales and kernel results are those of the plain format: only the addresses differ.
//
// Dequantised value = scale * q (one f32 multiply). Scales are f32 rather than f16 so that the
// quantiser's error bound (|w - scale*q| <= scale/2) holds exactly and no f16 conversion is needed
// on any path (cost: 4.5 bits per int4 value instead of 4.25).
//
// Weight quantiser (symmetric, per group): amax = max |w_i|;
//   int8: scale = amax / 127, q_i = clamp(rne(w_i / scale), -127, 127)
//   int4: scale = amax / 7,   q_i = clamp(rne(w_i / scale), -7, 7)   (-8 is never produced, but
//         every kernel accepts it)
// where rne = round to nearest, ties to even (std::nearbyint in the default rounding mode), and
// `/` is an IEEE f32 division (exactly rounded, so identical on every CPU and compiler as long as
// the code is not built with -ffast-math). amax == 0 gives scale 0 and all q = 0. Non-finite
// inputs are rejected (quantiseRows returns Numeric).
//
// Activations: int8 in groups of the weights' G, scale = amax / 127, q = clamp(rne(x / scale),
// -127, 127), same rounding as the weights. Stored unpacked (see QuantisedActivations).
#include <cstddef>
#include <cstdint>

#include "core/status.h"

namespace coli::quant {

enum class WeightFormat {
    Q8_G32,
    Q8_G64,
    Q4_G32,
    Q4_G64,
    Q8_G32_R8,
    Q8_G64_R8,
    Q4_G32_R8,
    Q4_G64_R8
};

// Rows per tile of the -r8 formats.
constexpr int kRowTile = 8;

struct FormatInfo {
    const char* name;  // "int8-g32", "int8-g64", "int4-g32", "int4-g64" (converter option names)
    int groupSize;     // G: values per block
    int bits;          // 8 or 4
    size_t blockBytes; // 4 (scale) + G * bits / 8
    int rowTile;       // 1 (rows back to back) or kRowTile (the -r8 formats)
};

FormatInfo formatInfo(WeightFormat fmt);
// Parses a name from FormatInfo::name; false when unknown.
bool parseWeightFormat(const char* name, WeightFormat* out);

// The -r8 variant of a format (itself when it is one) and the plain one (itself when plain).
WeightFormat tiledFormat(WeightFormat fmt);
WeightFormat plainFormat(WeightFormat fmt);
// The layout a matrix of `rows` rows is stored in: the -r8 variant when rows is a positive
// multiple of 8, else the plain format (what the converter and the load-time quantiser choose).
WeightFormat formatForRows(WeightFormat fmt, int64_t rows);

// Where row r's blocks lie in a matrix w of `cols` columns: group g's f32 scale at
// scale + g * stride, its G * bits / 8 value bytes at values + g * stride. For the -r8 formats
// r may be any row (its tile is r / 8). Preconditions: cols a multiple of G (not checked).
// Thread-safety: pure.
struct RowBlocks {
    const uint8_t* scale;
    const uint8_t* values;
    size_t stride; // bytes between a row's consecutive groups
};
RowBlocks rowBlocks(WeightFormat fmt, const uint8_t* w, int64_t cols, int64_t r);
// The same from the format's info and rowBytes(fmt, cols), inline for the kernels' inner loops.
inline RowBlocks rowBlocks(const FormatInfo& fi, const uint8_t* w, size_t rowBytes, int64_t r) {
    if (fi.rowTile == 1) {
        const uint8_t* row = w + static_cast<size_t>(r) * rowBytes;
        return {row, row + 4, fi.blockBytes};
    }
    const uint8_t* tile = w + static_cast<size_t>(r / kRowTile) * kRowTile * rowBytes;
    const size_t i = static_cast<size_t>(r % kRowTile);
    return {tile + 4 * i, tile + 4 * kRowTile + i * (fi.blockBytes - 4), kRowTile * fi.blockBytes};
}

// Bytes of one quantised row of `cols` values. cols must be a positive multiple of G (checked by
// quantiseRows / the kernels, not here).
size_t rowBytes(WeightFormat fmt, int64_t cols);

// Quantises src [rows, cols] (row-major f32) into dst (rows * rowBytes(fmt, cols) bytes).
// Errors: InvalidArgument when rows < 0, cols is not a positive multiple of G, or (-r8 formats)
// rows is not a multiple of 8; Numeric when a
// value is NaN or infinite (message gives row and column). Deterministic: the same input gives
// the same bytes on every platform. Thread-safety: pure (distinct dst buffers).
Status quantiseRows(WeightFormat fmt, const float* src, int64_t rows, int64_t cols, uint8_t* dst);

// Inverse for tests and quality checks: dst [rows, cols] = scale * q of the matrix src. Never used
// on the hot path. Preconditions as quantiseRows (not checked).
void dequantiseRows(WeightFormat fmt, const uint8_t* src, int64_t rows, int64_t cols, float* dst);
// Row r of the matrix w into dst [cols] (an embedding lookup). Preconditions as rowBlocks.
// Thread-safety: pure.
void dequantiseRow(WeightFormat fmt, const uint8_t* w, int64_t cols, int64_t r, float* dst);

// The matrix src (rows x cols in layout `from`) into dst in layout `to`: a plain format and its
// -r8 variant (plainFormat(from) == plainFormat(to); rows a multiple of 8 when either is tiled).
// Copies every group's scale and value bytes; no values change. dst must not overlap src.
// Thread-safety: pure.
void convertLayout(WeightFormat from, const uint8_t* src, WeightFormat to, uint8_t* dst,
                   int64_t rows, int64_t cols);

// Scale and integer value of element (r, col) of the quantised matrix w (tests; not fast).
float blockScale(WeightFormat fmt, const uint8_t* w, int64_t cols, int64_t r, int64_t col);
int quantValue(WeightFormat fmt, const uint8_t* w, int64_t cols, int64_t r, int64_t col);

// Quantised activations of n tokens: q [nTokens, cols] int8, scales [nTokens, cols / groupSize].
// Views into caller-provided scratch (see activationScratchBytes); valid while the scratch is.
struct QuantisedActivations {
    const int8_t* q = nullptr;
    const float* scales = nullptr;
    int64_t nTokens = 0;
    int64_t cols = 0;
    int groupSize = 0;
};

// Scratch bytes quantiseActivations needs for nTokens x cols with groups of groupSize.
size_t activationScratchBytes(int groupSize, int64_t nTokens, int64_t cols);

// One token's row: q [cols] and scales [cols / groupSize] of x [cols], the same bytes
// quantiseActivations writes for that row (it calls this). groupSize 32 or 64 dividing cols
// (not checked). Errors: Numeric (NaN/Inf in x; q and scales are then partly written).
// Thread-safety: pure.
Status quantiseActivationRow(const float* x, int64_t cols, int groupSize, int8_t* q, float* scales);

// Quantises x [nTokens, cols] into `scratch` (>= activationScratchBytes bytes, any alignment)
// and fills *out. groupSize must be 32 or 64 and divide cols. No allocation.
// Errors: InvalidArgument (shape, group size, scratch too small), Numeric (NaN/Inf in x).
// Thread-safety: pure.
Status quantiseActivations(const float* x, int64_t nTokens, int64_t cols, int groupSize,
                           void* scratch, size_t scratchBytes, QuantisedActivations* out);

} // namespace coli::quant
