#include "quant/formats.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

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
        return {"int8-g32", 32, 8, 4 + 32};
    case WeightFormat::Q8_G64:
        return {"int8-g64", 64, 8, 4 + 64};
    case WeightFormat::Q4_G32:
        return {"int4-g32", 32, 4, 4 + 16};
    case WeightFormat::Q4_G64:
        return {"int4-g64", 64, 4, 4 + 32};
    }
    return {"?", 32, 8, 36};
}

bool parseWeightFormat(const char* name, WeightFormat* out) {
    for (WeightFormat f :
         {WeightFormat::Q8_G32, WeightFormat::Q8_G64, WeightFormat::Q4_G32, WeightFormat::Q4_G64}) {
        if (std::strcmp(name, formatInfo(f).name) == 0) {
            *out = f;
            return true;
        }
    }
    return false;
}

size_t rowBytes(WeightFormat fmt, int64_t cols) {
    const FormatInfo fi = formatInfo(fmt);
    return static_cast<size_t>(cols / fi.groupSize) * fi.blockBytes;
}

Status quantiseRows(WeightFormat fmt, const float* src, int64_t rows, int64_t cols, uint8_t* dst) {
    const FormatInfo fi = formatInfo(fmt);
    const int g = fi.groupSize;
    if (!shapeOk(rows, cols, g))
        return {ErrorCode::InvalidArgument,
                "quantiseRows: " + std::string(fi.name) + " needs cols a " +
                    "positive multiple of " + std::to_string(g) + ", got rows " +
                    std::to_string(rows) + " cols " + std::to_string(cols)};
    const int limit = fi.bits == 8 ? 127 : 7;
    const size_t rb = rowBytes(fmt, cols);
    for (int64_t r = 0; r < rows; ++r) {
        const float* row = src + r * cols;
        for (int64_t c = 0; c < cols; ++c)
            if (!std::isfinite(row[c]))
                return {ErrorCode::Numeric, "quantiseRows: non-finite value at row " +
                                                std::to_string(r) + " col " + std::to_string(c)};
        uint8_t* out = dst + static_cast<size_t>(r) * rb;
        for (int64_t c0 = 0; c0 < cols; c0 += g) {
            const float* v = row + c0;
            const float scale = groupAbsMax(v, g) / static_cast<float>(limit);
            std::memcpy(out, &scale, sizeof scale);
            if (fi.bits == 8) {
                for (int i = 0; i < g; ++i)
                    out[4 + i] = static_cast<uint8_t>(
                        static_cast<int8_t>(quantiseValue(v[i], scale, limit)));
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
    return Status::ok();
}

float blockScale(WeightFormat fmt, const uint8_t* row, int64_t col) {
    const FormatInfo fi = formatInfo(fmt);
    return loadScale(row + static_cast<size_t>(col / fi.groupSize) * fi.blockBytes);
}

int quantValue(WeightFormat fmt, const uint8_t* row, int64_t col) {
    const FormatInfo fi = formatInfo(fmt);
    const uint8_t* block = row + static_cast<size_t>(col / fi.groupSize) * fi.blockBytes;
    const int i = static_cast<int>(col % fi.groupSize);
    if (fi.bits == 8) return static_cast<int8_t>(block[4 + i]);
    const uint8_t b = block[4 + i / 2];
    return nibbleToInt((i % 2 == 0) ? (b & 15u) : (b >> 4));
}

void dequantiseRows(WeightFormat fmt, const uint8_t* src, int64_t rows, int64_t cols, float* dst) {
    const size_t rb = rowBytes(fmt, cols);
    for (int64_t r = 0; r < rows; ++r) {
        const uint8_t* row = src + static_cast<size_t>(r) * rb;
        for (int64_t c = 0; c < cols; ++c)
            dst[r * cols + c] =
                blockScale(fmt, row, c) * static_cast<float>(quantValue(fmt, row, c));
    }
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
