#include "convert/stored_format.h"

#include <bit>

namespace coli::convert {

namespace {

struct FormatRow {
    StoredFormat f;
    const char* name;
};
constexpr FormatRow kFormats[] = {
    {StoredFormat::F32, "f32"},
    {StoredFormat::BF16, "bf16"},
    {StoredFormat::Q8_G32, "int8-g32"},
    {StoredFormat::Q8_G64, "int8-g64"},
    {StoredFormat::Q4_G32, "int4-g32"},
    {StoredFormat::Q4_G64, "int4-g64"},
    {StoredFormat::Q8_G32_R8, "int8-g32-r8"},
    {StoredFormat::Q8_G64_R8, "int8-g64-r8"},
    {StoredFormat::Q4_G32_R8, "int4-g32-r8"},
    {StoredFormat::Q4_G64_R8, "int4-g64-r8"},
};

struct ClassRow {
    TensorClass c;
    const char* name;
};
constexpr ClassRow kClasses[] = {
    {TensorClass::Experts, "experts"},       {TensorClass::Dense, "dense"},
    {TensorClass::Embeddings, "embeddings"}, {TensorClass::LmHead, "lm_head"},
    {TensorClass::Norms, "norms"},           {TensorClass::Router, "router"},
    {TensorClass::Other, "other"},
};

} // namespace

const char* storedFormatName(StoredFormat f) {
    for (const auto& r : kFormats)
        if (r.f == f) return r.name;
    return "?";
}

bool parseStoredFormat(const std::string& name, StoredFormat* out) {
    for (const auto& r : kFormats) {
        if (name == r.name) {
            *out = r.f;
            return true;
        }
    }
    return false;
}

bool isQuantised(StoredFormat f) {
    return f != StoredFormat::F32 && f != StoredFormat::BF16;
}

namespace {

// The quantised stored formats and their quant:: block formats, one to one.
struct QuantRow {
    StoredFormat stored;
    quant::WeightFormat weights;
};
constexpr QuantRow kQuant[] = {
    {StoredFormat::Q8_G32, quant::WeightFormat::Q8_G32},
    {StoredFormat::Q8_G64, quant::WeightFormat::Q8_G64},
    {StoredFormat::Q4_G32, quant::WeightFormat::Q4_G32},
    {StoredFormat::Q4_G64, quant::WeightFormat::Q4_G64},
    {StoredFormat::Q8_G32_R8, quant::WeightFormat::Q8_G32_R8},
    {StoredFormat::Q8_G64_R8, quant::WeightFormat::Q8_G64_R8},
    {StoredFormat::Q4_G32_R8, quant::WeightFormat::Q4_G32_R8},
    {StoredFormat::Q4_G64_R8, quant::WeightFormat::Q4_G64_R8},
};

StoredFormat storedFormat(quant::WeightFormat f) {
    for (const QuantRow& r : kQuant)
        if (r.weights == f) return r.stored;
    return StoredFormat::Q4_G64;
}

} // namespace

quant::WeightFormat weightFormat(StoredFormat f) {
    for (const QuantRow& r : kQuant)
        if (r.stored == f) return r.weights;
    return quant::WeightFormat::Q4_G64;
}

StoredFormat formatForRows(StoredFormat f, int64_t rows) {
    if (!isQuantised(f)) return f;
    return storedFormat(quant::formatForRows(weightFormat(f), rows));
}

int groupSize(StoredFormat f) {
    return isQuantised(f) ? quant::formatInfo(weightFormat(f)).groupSize : 0;
}

uint64_t storedBytes(StoredFormat f, int64_t rows, int64_t cols) {
    switch (f) {
    case StoredFormat::F32:
        return uint64_t(rows) * uint64_t(cols) * 4;
    case StoredFormat::BF16:
        return uint64_t(rows) * uint64_t(cols) * 2;
    default:
        return uint64_t(rows) * quant::rowBytes(weightFormat(f), cols);
    }
}

StoredFormat formatForCols(StoredFormat wanted, int64_t cols, StoredFormat fallback, bool* ok) {
    *ok = true;
    if (!isQuantised(wanted)) return wanted;
    if (cols > 0 && cols % groupSize(wanted) == 0) return wanted;
    if (cols > 0 && cols % 32 == 0) {
        switch (wanted) {
        case StoredFormat::Q8_G64:
            return StoredFormat::Q8_G32;
        case StoredFormat::Q4_G64:
            return StoredFormat::Q4_G32;
        case StoredFormat::Q8_G64_R8:
            return StoredFormat::Q8_G32_R8;
        case StoredFormat::Q4_G64_R8:
            return StoredFormat::Q4_G32_R8;
        default:
            break;
        }
    }
    if (fallback == wanted) {
        *ok = false;
        return wanted;
    }
    return fallback;
}

const char* tensorClassName(TensorClass c) {
    for (const auto& r : kClasses)
        if (r.c == c) return r.name;
    return "?";
}

bool parseTensorClass(const std::string& name, TensorClass* out) {
    for (const auto& r : kClasses) {
        if (name == r.name) {
            *out = r.c;
            return true;
        }
    }
    return false;
}

uint16_t f32ToBf16(float x) {
    const uint32_t b = std::bit_cast<uint32_t>(x);
    if ((b & 0x7F800000u) == 0x7F800000u && (b & 0x007FFFFFu) != 0)
        return uint16_t((b >> 16) | 0x0040u); // NaN: keep sign and top payload, force quiet
    // Round to nearest even on the 16 dropped bits (no overflow: the carry into the exponent
    // rounds the largest finite values to infinity, as IEEE rounding does).
    const uint32_t rounding = 0x7FFFu + ((b >> 16) & 1u);
    return uint16_t((b + rounding) >> 16);
}

} // namespace coli::convert
