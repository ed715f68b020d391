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

enum class WeightFormat { Q8_G32, Q8_G64, Q4_G32, Q4_G64 };

struct FormatInfo {
    const char* name;  // "int8-g32", "int8-g64", "int4-g32", "int4-g64" (converter option names)
    int groupSize;     // G: values per block
    int bits;          // 8 or 4
    size_t blockBytes; // 4 (scale) + G * bits / 8
};

FormatInfo formatInfo(WeightFormat fmt);
// Parses a name from FormatInfo::name; false when unknown.
bool parseWeightFormat(const char* name, WeightFormat* out);

// Bytes of one quantised row of `cols` values. cols must be a positive multiple of G (checked by
// quantiseRows / the kernels, not here).
size_t rowBytes(WeightFormat fmt, int64_t cols);

// Quantises src [rows, cols] (row-major f32) into dst (rows * rowBytes(fmt, cols) bytes).
// Errors: InvalidArgument when rows < 0 or cols is not a positive multiple of G; Numeric when a
// value is NaN or infinite (message gives row and column). Deterministic: the same input gives
// the same bytes on every platform. Thread-safety: pure (distinct dst buffers).
Status quantiseRows(WeightFormat fmt, const float* src, int64_t rows, int64_t cols, uint8_t* dst);

// Inverse for tests and quality checks: dst [rows, cols] = scale * q. Never used on the hot path.
// Preconditions as quantiseRows (not checked).
void dequantiseRows(WeightFormat fmt, const uint8_t* src, int64_t rows, int64_t cols, float* dst);

// Scale and integer value of element `col` of a quantised row (tests; not fast).
float blockScale(WeightFormat fmt, const uint8_t* row, int64_t col);
int quantValue(WeightFormat fmt, const uint8_t* row, int64_t col);

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
