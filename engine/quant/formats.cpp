#include "quant/formats.h"

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

// rne(v / scale) clamped to [-limit, limit]; scale 0 means an all-zero group.
int quantiseValue(float v, float scale, int limit) {
    if (scale == 0.0f) return 0;
    const float r = std::nearbyint(v / scale);
    return static_cast<int>(std::clamp(r, -static_cast<float>(limit), static_cast<float>(limit)));
}

float groupAbsMax(const float* v, int n) {
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

bool parseWeightFormat(const char* name, WeightFormat* out) {
    for (WeightFormat f : {WeightFormat::Q8_G32, WeightFormat::Q8_G64, WeightFormat::Q4_G32,
                           WeightFormat::Q4_G64, WeightFormat::Q8_G32_R8, WeightFormat::Q8_G64_R8,
                           WeightFormat::Q4_G32_R8, WeightFormat::Q4_G64_R8}) {
        if (std::strcmp(name, formatInfo(f).name) == 0) {
            *out = f;
            return true;
        }
    }
    return false;
}

WeightFormat tiledFormat(WeightFormat fmt) {
    switch (fmt) {
    case WeightFormat::Q8_G32:
        return WeightFormat::Q8_G32_R8;
    case WeightFormat::Q8_G64:
        return WeightFormat::Q8_G64_R8;
    case WeightFormat::Q4_G32:
        return WeightFormat::Q4_G32_R8;
    case WeightFormat::Q4_G64:
        return WeightFormat::Q4_G64_R8;
    default:
        return fmt;
    }
}

WeightFormat plainFormat(WeightFormat fmt) {
    switch (fmt) {
    case WeightFormat::Q8_G32_R8:
        return WeightFormat::Q8_G32;
    case WeightFormat::Q8_G64_R8:
        return WeightFormat::Q8_G64;
    case WeightFormat::Q4_G32_R8:
        return WeightFormat::Q4_G32;
    case WeightFormat::Q4_G64_R8:
        return WeightFormat::Q4_G64;
    default:
        return fmt;
    }
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
    const size_t valueBytes = fi.blockBytes - 4;
    std::vector<uint8_t> plain(fi.rowTile == 1 ? 0 : rb);
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
        quantiseRow(fi, row, cols, plain.data());
        const RowBlocks b = rowBlocks(fmt, dst, cols, r);
        uint8_t* scale = dst + (b.scale - dst);
        uint8_t* values = dst + (b.values - dst);
        for (int64_t gi = 0; gi < cols / g; ++gi) {
            const uint8_t* block = plain.data() + static_cast<size_t>(gi) * fi.blockBytes;
            std::memcpy(scale + gi * b.stride, block, 4);
            std::memcpy(values + gi * b.stride, block + 4, valueBytes);
        }
    }
    return Status::ok();
}

float blockScale(WeightFormat fmt, const uint8_t* w, int64_t cols, int64_t r, int64_t col) {
    const RowBlocks b = rowBlocks(fmt, w, cols, r);
    return loadScale(b.scale + static_cast<size_t>(col / formatInfo(fmt).groupSize) * b.stride);
}

int quantValue(WeightFormat fmt, const uint8_t* w, int64_t cols, int64_t r, int64_t col) {
    const FormatInfo fi = formatInfo(fmt);
    const RowBlocks b = rowBlocks(fmt, w, cols, r);
    const uint8_t* values = b.values + static_cast<size_t>(col / fi.groupSize) * b.stride;
    const int i = static_cast<int>(col % fi.groupSize);
    if (fi.bits == 8) return static_cast<int8_t>(values[i]);
    const uint8_t v = values[i / 2];
    return nibbleToInt((i % 2 == 0) ? (v & 15u) : (v >> 4));
}

void dequantiseRow(WeightFormat fmt, const uint8_t* w, int64_t cols, int64_t r, float* dst) {
    for (int64_t c = 0; c < cols; ++c)
        dst[c] =
            blockScale(fmt, w, cols, r, c) * static_cast<float>(quantValue(fmt, w, cols, r, c));
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

Status quantiseActivationRow(const float* x, int64_t cols, int groupSize, int8_t* q,
                             float* scales) {
    for (int64_t c = 0; c < cols; ++c)
        if (!std::isfinite(x[c]))
            return {ErrorCode::Numeric, "non-finite activation at col " + std::to_string(c)};
    for (int64_t gi = 0; gi < cols / groupSize; ++gi) {
        const float* v = x + gi * groupSize;
        const float scale = groupAbsMax(v, groupSize) / 127.0f;
        scales[gi] = scale;
        for (int i = 0; i < groupSize; ++i)
            q[gi * groupSize + i] = static_cast<int8_t>(quantiseValue(v[i], scale, 127));
    }
    return Status::ok();
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
