#include "convert/source_reader.h"

#include <algorithm>
#include <cstring>

namespace coli::convert {

int64_t rowsPerPiece(int64_t cols) {
    constexpr int64_t kElems = int64_t(4) << 20; // 16 MiB of f32
    const int64_t rows = cols > 0 ? kElems / cols : kElems;
    return std::max<int64_t>(quant::kRowTile, rows / quant::kRowTile * quant::kRowTile);
}

Status encodeRows(const SourceCheckpoint& ck, const PlannedPart& part, int64_t row0, int64_t nRows,
                  std::vector<float>& f32, std::vector<uint8_t>& out) {
    const SourceSlice& s = part.src;
    if (row0 < 0 || nRows < 0 || row0 + nRows > s.rows)
        return {ErrorCode::InvalidArgument, "encodeRows: rows outside the part"};
    const int64_t n = nRows * s.cols;
    f32.resize(size_t(n));
    COLI_RETURN_IF_ERROR(ck.readF32Range(s.tensor, s.first + row0 * s.cols, n, f32.data()));
    out.resize(size_t(storedBytes(part.format, nRows, s.cols)));
    switch (part.format) {
    case StoredFormat::F32:
        std::memcpy(out.data(), f32.data(), out.size());
        return {};
    case StoredFormat::BF16:
        for (int64_t i = 0; i < n; ++i) {
            const uint16_t b = f32ToBf16(f32[size_t(i)]);
            out[size_t(2 * i)] = uint8_t(b & 0xFF);
            out[size_t(2 * i + 1)] = uint8_t(b >> 8);
        }
        return {};
    default: {
        Status st =
            quant::quantiseRows(weightFormat(part.format), f32.data(), nRows, s.cols, out.data());
        if (!st) return {st.code(), ck.dir() + ": tensor '" + s.tensor + "': " + st.message()};
        return {};
    }
    }
}

} // namespace coli::convert
