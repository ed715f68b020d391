#pragma once
// Reads rows of one planned part from the source checkpoint and encodes them in the part's stored
// format: the converter's only path from source bytes to container bytes, so a part is always
// produced the same way whether written whole or resumed.
// Thread-safety: as SourceCheckpoint (const reads); scratch buffers belong to the caller.
#include "convert/plan.h"
#include "convert/source_checkpoint.h"

#include <cstdint>
#include <vector>

namespace coli::convert {

// Rows per piece so that one piece's f32 copy stays near 16 MiB: a multiple of 8 (whole tiles of
// the -r8 formats, quant/formats.h), at least 8.
int64_t rowsPerPiece(int64_t cols);

// Encodes rows [row0, row0 + nRows) of `part` into `out` (resized to exactly the bytes those
// rows take: storedBytes(part.format, nRows, cols)). Quantised formats go through
// quant::quantiseRows (bit-compatible with the engine's quantiser), bf16 through f32ToBf16 (exact
// for BF16 sources), f32 unchanged. `f32` is scratch. Errors: those of
// SourceCheckpoint::readF32Range (Io, Unsupported; F8_E4M3 is multiplied by its block scale),
// Numeric (NaN/Inf in a tensor to quantise, naming it), InvalidArgument.
Status encodeRows(const SourceCheckpoint& ck, const PlannedPart& part, int64_t row0, int64_t nRows,
                  std::vector<float>& f32, std::vector<uint8_t>& out);

} // namespace coli::convert
