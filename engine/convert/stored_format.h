#pragma once
// How one tensor is stored in a colibri container (docs/container.md): the quantised block
// formats of quant/formats.h, or plain bf16 / f32, and the tensor classes the manifest names.
// Thread-safety: pure functions over constant data.
#include "quant/formats.h"

#include <cstdint>
#include <string>

namespace coli::convert {

enum class StoredFormat {
    F32,
    BF16,
    Q8_G32,
    Q8_G64,
    Q4_G32,
    Q4_G64,
    Q8_G32_R8, // the same formats with rows in tiles of eight (quant/formats.h; format version 2)
    Q8_G64_R8,
    Q4_G32_R8,
    Q4_G64_R8
};

// "f32", "bf16", "int8-g32", "int8-g64", "int4-g32", "int4-g64", and "int8-g32-r8" ..
// "int4-g64-r8" (the manifest's spelling).
const char* storedFormatName(StoredFormat f);
bool parseStoredFormat(const std::string& name, StoredFormat* out); // false when unknown
bool isQuantised(StoredFormat f);
// The quant:: block format of a quantised StoredFormat (precondition: isQuantised(f)).
quant::WeightFormat weightFormat(StoredFormat f);
int groupSize(StoredFormat f); // 32 or 64 for quantised formats, 0 otherwise
// Bytes of `rows` x `cols` values in format f (quantised: rows * quant::rowBytes; precondition:
// cols divisible by the group size).
uint64_t storedBytes(StoredFormat f, int64_t rows, int64_t cols);

// The format actually used for a matrix of `cols` columns when `wanted` is asked for: the same
// bits with groups of 32 when cols is not a multiple of 64, and `fallback` (e.g. bf16) when it is
// not a multiple of 32 either. Sets *ok false (and returns wanted) when fallback is unusable
// (passed as `wanted` itself, meaning "no fallback").
StoredFormat formatForCols(StoredFormat wanted, int64_t cols, StoredFormat fallback, bool* ok);

// The layout of a quantised matrix of `rows` rows: the -r8 variant of f when rows is a positive
// multiple of 8, the plain one otherwise (quant::formatForRows); f itself when not quantised.
StoredFormat formatForRows(StoredFormat f, int64_t rows);

// Tensor classes, each with one quantisation choice (the manifest's "quantisation" object).
enum class TensorClass { Experts, Dense, Embeddings, LmHead, Norms, Router, Other };
const char* tensorClassName(TensorClass c); // "experts", "dense", "embeddings", "lm_head", ...
bool parseTensorClass(const std::string& name, TensorClass* out);

// f32 -> bf16, round to nearest even; NaN stays NaN (quiet), infinities stay infinite.
uint16_t f32ToBf16(float x);

} // namespace coli::convert
