#include "quant/formats.h"

#include "quant/dispatch.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace coli::quant {

namespace {

float loadScale(const uint8_t* block) {
    float s;
    std::memcpy(&s, block, sizeof s);
    return s;
}

// rne(v / scale) clamped to [-limit, limit]; scale 0 means an all-zero group. Always inlined: the
// activation quantiser's AVX2 copy vectorises its loop only with the body in place.
[[gnu::always_inline]] inline int quantiseValue(float v, float scale, int limit) {
    if (scale == 0.0f) return 0;
    const float r = std::nearbyint(v / scale);
    return static_cast<int>(std::clamp(r, -static_cast<float>(limit), static_cast<float>(limit)));
}

[[gnu::always_inline]] inline float groupAbsMax(const float* v, int n) {
    float m = 0.0f;
    for (int i = 0; i < n; ++i)
        m = std::max(m, std::fabs(v[i]));
    return m;
}

int nibbleToInt(unsigned nibble) {
    return static_cast<int>(nibble ^ 8u) - 8;
}

bool shapeOk(int64_t rows, int64_t cols, int g) {
    return rows >= 0 && cols > 0 && cols % g == 0;
}

} // namespace

FormatInfo formatInfo(WeightFormat fmt) {
    switch (fmt) {
    case WeightFormat::Q8_G32:
        return {"int8-g32", 32, 8, 4 + 32, 1};
    case WeightFormat::Q8_G64:
        return {"int8-g64", 64, 8, 4 + 64, 1};
    case WeightFormat::Q4_G32:
        return {"int4-g32", 32, 4, 4 + 16, 1};
    case WeightFormat::Q4_G64:
        return {"int4-g64", 64, 4, 4 + 32, 1};
    case WeightFormat::Q8_G32_R8:
        return {"int8-g32-r8", 32, 8, 4 + 32, kRowTile};
    case WeightFormat::Q8_G64_R8:
        return {"int8-g64-r8", 64, 8, 4 + 64, kRowTile};
    case WeightFormat::Q4_G32_R8:
        return {"int4-g32-r8", 32, 4, 4 + 16, kRowTile};
    case WeightFormat::Q4_G64_R8:
        return {"int4-g64-r8", 64, 4, 4 + 32, kRowTile};
    }
    return {"?", 32, 8, 36, 1};
}

namespace {

// Each plain format and its -r8 variant.
struct TilePair {
    WeightFormat plain, tiled;
};
constexpr TilePair kTilePairs[] = {
    {WeightFormat::Q8_G32, WeightFormat::Q8_G32_R8},
    {WeightFormat::Q8_G64, WeightFormat::Q8_G64_R8},
    {WeightFormat::Q4_G32, WeightFormat::Q4_G32_R8},
    {WeightFormat::Q4_G64, WeightFormat::Q4_G64_R8},
};

} // namespace

bool parseWeightFormat(const char* name, WeightFormat* out) {
    for (const TilePair& p : kTilePairs) {
        for (WeightFormat f : {p.plain, p.tiled}) {
            if (std::strcmp(name, formatInfo(f).name) == 0) {
                *out = f;
                return true;
            }
        }
    }
    return false;
}

WeightFormat tiledFormat(WeightFormat fmt) {
    for (const TilePair& p : kTilePairs)
        if (p.plain == fmt) return p.tiled;
    return fmt;
}

WeightFormat plainFormat(WeightFormat fmt) {
    for (const TilePair& p : kTilePairs)
        if (p.tiled == fmt) return p.plain;
    return fmt;
}

WeightFormat formatForRows(WeightFormat fmt, int64_t rows) {
    return rows > 0 && rows % kRowTile == 0 ? tiledFormat(fmt) : plainFormat(fmt);
}

size_t rowBytes(WeightFormat fmt, int64_t cols) {
    const FormatInfo fi = formatInfo(fmt);
    return static_cast<size_t>(cols / fi.groupSize) * fi.blockBytes;
}

RowBlocks rowBlocks(WeightFormat fmt, const uint8_t* w, int64_t cols, int64_t r) {
    return rowBlocks(formatInfo(fmt), w, rowBytes(fmt, cols), r);
}

namespace {

// One row of `cols` values as plain blocks (scale, values) into out (rowBytes bytes).
void quantiseRow(const FormatInfo& fi, const float* row, int64_t cols, uint8_t* out) {
    const int g = fi.groupSize;
    const int limit = fi.bits == 8 ? 127 : 7;
    for (int64_t c0 = 0; c0 < cols; c0 += g) {
        const float* v = row + c0;
        const float scale = groupAbsMax(v, g) / static_cast<float>(limit);
        std::memcpy(out, &scale, sizeof scale);
        if (fi.bits == 8) {
            for (int i = 0; i < g; ++i)
                out[4 + i] =
                    static_cast<uint8_t>(static_cast<int8_t>(quantiseValue(v[i], scale, limit)));
        } else {
            for (int j = 0; j < g / 2; ++j) {
                const unsigned lo =
                    static_cast<unsigned>(quantiseValue(v[2 * j], scale, limit)) & 15u;
                const unsigned hi =
                    static_cast<unsigned>(quantiseValue(v[2 * j + 1], scale, limit)) & 15u;
                out[4 + j] = static_cast<uint8_t>(lo | (hi << 4));
            }
        }
        out += fi.blockBytes;
    }
}

} // namespace

Status quantiseRows(WeightFormat fmt, const float* src, int64_t rows, int64_t cols, uint8_t* dst) {
    const FormatInfo fi = formatInfo(fmt);
    const int g = fi.groupSize;
    if (!shapeOk(rows, cols, g))
        return {ErrorCode::InvalidArgument,
                "quantiseRows: " + std::string(fi.name) + " needs cols a " +
                    "positive multiple of " + std::to_string(g) + ", got rows " +
                    std::to_string(rows) + " cols " + std::to_string(cols)};
    if (rows % fi.rowTile != 0)
        return {ErrorCode::InvalidArgument,
                "quantiseRows: " + std::string(fi.name) + " needs rows a multiple of " +
                    std::to_string(fi.rowTile) + ", got " + std::to_string(rows)};
    const size_t rb = rowBytes(fmt, cols);
    // A tiled matrix: each tile's eight rows quantised as plain rows, then laid out as a tile.
    std::vector<uint8_t> plain(fi.rowTile == 1 ? 0 : fi.rowTile * rb);
    for (int64_t r = 0; r < rows; ++r) {
        const float* row = src + r * cols;
        for (int64_t c = 0; c < cols; ++c)
            if (!std::isfinite(row[c]))
                return {ErrorCode::Numeric, "quantiseRows: non-finite value at row " +
                                                std::to_string(r) + " col " + std::to_string(c)};
        if (fi.rowTile == 1) {
            quantiseRow(fi, row, cols, dst + static_cast<size_t>(r) * rb);
            continue;
        }
        const int64_t i = r % fi.rowTile;
        quantiseRow(fi, row, cols, plain.data() + static_cast<size_t>(i) * rb);
        if (i == fi.rowTile - 1)
            convertLayout(plainFormat(fmt), plain.data(), fmt,
                          dst + static_cast<size_t>(r - i) * rb, fi.rowTile, cols);
    }
    return Status::ok();
}

void convertLayout(WeightFormat from, const uint8_t* src, WeightFormat to, uint8_t* dst,
                   int64_t rows, int64_t cols) {
    const FormatInfo fi = formatInfo(to);
    for (int64_t r = 0; r < rows; ++r) {
        const RowBlocks a = rowBlocks(from, src, cols, r);
        const RowBlocks b = rowBlocks(to, dst, cols, r);
        uint8_t* scale = dst + (b.scale - dst); // b's pointers are into dst: writable
        uint8_t* values = dst + (b.values - dst);
        for (int64_t g = 0; g < cols / fi.groupSize; ++g) {
            std::memcpy(scale + g * b.stride, a.scale + g * a.stride, 4);
            std::memcpy(values + g * b.stride, a.values + g * a.stride, fi.blockBytes - 4);
        }
    }
}

namespace {

// Integer value i (0 .. G-1) of a group whose value bytes start at `values`.
int valueAt(const FormatInfo& fi, const uint8_t* values, int i) {
    if (fi.bits == 8) return static_cast<int8_t>(values[i]);
    const uint8_t v = values[i / 2];
    return nibbleToInt((i % 2 == 0) ? (v & 15u) : (v >> 4));
}

} // namespace

float blockScale(WeightFormat fmt, const uint8_t* w, int64_t cols, int64_t r, int64_t col) {
    const RowBlocks b = rowBlocks(fmt, w, cols, r);
    return loadScale(b.scale + static_cast<size_t>(col / formatInfo(fmt).groupSize) * b.stride);
}

int quantValue(WeightFormat fmt, const uint8_t* w, int64_t cols, int64_t r, int64_t col) {
    const FormatInfo fi = formatInfo(fmt);
    const RowBlocks b = rowBlocks(fmt, w, cols, r);
    return valueAt(fi, b.values + static_cast<size_t>(col / fi.groupSize) * b.stride,
                   static_cast<int>(col % fi.groupSize));
}

void dequantiseRow(WeightFormat fmt, const uint8_t* w, int64_t cols, int64_t r, float* dst) {
    const FormatInfo fi = formatInfo(fmt);
    const RowBlocks b = rowBlocks(fmt, w, cols, r);
    for (int64_t g = 0; g < cols / fi.groupSize; ++g) {
        const float scale = loadScale(b.scale + g * b.stride);
        for (int i = 0; i < fi.groupSize; ++i)
            dst[g * fi.groupSize + i] =
                scale * static_cast<float>(valueAt(fi, b.values + g * b.stride, i));
    }
}

void dequantiseRows(WeightFormat fmt, const uint8_t* src, int64_t rows, int64_t cols, float* dst) {
    for (int64_t r = 0; r < rows; ++r)
        dequantiseRow(fmt, src, cols, r, dst + r * cols);
}

size_t activationScratchBytes(int groupSize, int64_t nTokens, int64_t cols) {
    if (groupSize <= 0 || nTokens < 0 || cols < 0) return 0;
    const size_t q = static_cast<size_t>(nTokens * cols);
    const size_t qPadded = (q + 15) / 16 * 16; // scales start 16-byte aligned relative to scratch
    return qPadded + static_cast<size_t>(nTokens * (cols / groupSize)) * sizeof(float) + 16;
}

namespace {

// The activation quantiser's loops. On x86-64 they are also compiled for AVX2 and that copy is
// chosen at run time where the CPU has it: the loops vectorise (vdivps, vroundps with the current
// rounding mode, vmaxps / vminps), and division and round-to-nearest-even are exact IEEE
// operations at any width, so both copies write the same bytes (test_activation_quantiser). At
// decode one thread quantises a token's row while the others wait at the next barrier; the
// baseline build called nearbyintf once per value. (Dispatch by a pointer, not target_clones:
// an ifunc resolver runs during relocation, before a sanitizer's runtime is up, and crashed the
// ASan/TSan builds.)
// Returns false when x has a NaN or Inf (nothing written then). The weights' operations
// (groupAbsMax, quantiseValue) with limit 127.
[[gnu::always_inline]] inline bool quantiseRowBody(const float* x, int64_t cols, int groupSize,
                                                   int8_t* q, float* scales) {
    bool finite = true;
    for (int64_t c = 0; c < cols; ++c)
        finite &= std::isfinite(x[c]);
    if (!finite) return false;
    for (int64_t gi = 0; gi < cols / groupSize; ++gi) {
        const float* v = x + gi * groupSize;
        const float scale = groupAbsMax(v, groupSize) / 127.0f;
        scales[gi] = scale;
        for (int i = 0; i < groupSize; ++i)
            q[gi * groupSize + i] = static_cast<int8_t>(quantiseValue(v[i], scale, 127));
    }
    return true;
}

bool quantiseRowBaseline(const float* x, int64_t cols, int groupSize, int8_t* q, float* scales) {
    return quantiseRowBody(x, cols, groupSize, q, scales);
}

#if defined(__x86_64__) && defined(__GNUC__)
[[gnu::target("avx2")]] bool quantiseRowAvx2(const float* x, int64_t cols, int groupSize, int8_t* q,
                                             float* scales) {
    return quantiseRowBody(x, cols, groupSize, q, scales);
}
#endif

using QuantiseRowFn = bool (*)(const float*, int64_t, int, int8_t*, float*);

// The AVX2 copy with the AVX2 or AVX-512 kernels (both need an AVX2 CPU); COLI_QUANT_PATH=scalar
// (quant/dispatch.h) selects the baseline copy too, so the tests run both.
QuantiseRowFn chooseQuantiseRow() {
#if defined(__x86_64__) && defined(__GNUC__)
    const KernelPath path = selectedKernelPath();
    if (path == KernelPath::Avx2 || path == KernelPath::Avx512Vnni) return &quantiseRowAvx2;
#endif
    return &quantiseRowBaseline;
}

} // namespace

Status quantiseActivationRow(const float* x, int64_t cols, int groupSize, int8_t* q,
                             float* scales) {
    static const QuantiseRowFn quantiseRow = chooseQuantiseRow();
    if (quantiseRow(x, cols, groupSize, q, scales)) return Status::ok();
    int64_t c = 0;
    while (c < cols && std::isfinite(x[c]))
        ++c;
    return {ErrorCode::Numeric, "non-finite activation at col " + std::to_string(c)};
}

Status quantiseActivations(const float* x, int64_t nTokens, int64_t cols, int groupSize,
                           void* scratch, size_t scratchBytes, QuantisedActivations* out) {
    if ((groupSize != 32 && groupSize != 64) || !shapeOk(nTokens, cols, groupSize))
        return {ErrorCode::InvalidArgument,
                "quantiseActivations: need group size 32 or 64 dividing cols, got group " +
                    std::to_string(groupSize) + " cols " + std::to_string(cols) + " tokens " +
                    std::to_string(nTokens)};
    const size_t need = activationScratchBytes(groupSize, nTokens, cols);
    if (scratch == nullptr || scratchBytes < need)
        return {ErrorCode::InvalidArgument, "quantiseActivations: scratch of " +
                                                std::to_string(scratchBytes) + " bytes, need " +
                                                std::to_string(need)};
    // Align the scales to 4 bytes inside the scratch (the caller may pass any alignment).
    auto base = reinterpret_cast<uintptr_t>(scratch);
    auto* q = reinterpret_cast<int8_t*>(scratch);
    const size_t qBytes = (static_cast<size_t>(nTokens * cols) + 15) / 16 * 16;
    const uintptr_t sAddr = (base + qBytes + 15) / 16 * 16;
    auto* scales = reinterpret_cast<float*>(sAddr);
    const int64_t groups = cols / groupSize;
    for (int64_t t = 0; t < nTokens; ++t) {
        const Status row =
            quantiseActivationRow(x + t * cols, cols, groupSize, q + t * cols, scales + t * groups);
        if (!row.isOk())
            return {ErrorCode::Numeric,
                    "quantiseActivations: token " + std::to_string(t) + ": " + row.message()};
    }
    *out = {q, scales, nTokens, cols, groupSize};
    return Status::ok();
}

} // namespace coli::quant
