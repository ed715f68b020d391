#include "quant/dispatch.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "quant/kernel_table.h"
#include "quant/matmul.h"

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif
#endif

namespace coli::quant {

namespace detail {
#ifndef COLI_QUANT_HAVE_AVX2
const KernelTable* avx2Kernels() {
    return nullptr;
}
#endif
#ifndef COLI_QUANT_HAVE_NEON
const KernelTable* neonKernels() {
    return nullptr;
}
#endif
#ifndef COLI_QUANT_HAVE_AVX512VNNI
const KernelTable* avx512VnniKernels() {
    return nullptr;
}
#endif
} // namespace detail

namespace {

bool cpuHas(KernelPath path) {
    switch (path) {
    case KernelPath::Scalar:
        return true;
    case KernelPath::Avx2:
#if defined(__x86_64__) || defined(__i386__)
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
        return false;
#endif
    case KernelPath::Neon:
#if defined(__aarch64__) && defined(__linux__)
        return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#else
        return false;
#endif
    case KernelPath::Avx512Vnni:
#if defined(__x86_64__) || defined(__i386__)
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("avx512vnni");
#else
        return false;
#endif
    }
    return false;
}

const detail::KernelTable* tableFor(KernelPath path) {
    switch (path) {
    case KernelPath::Scalar:
        return detail::scalarKernels();
    case KernelPath::Avx2:
        return detail::avx2Kernels();
    case KernelPath::Neon:
        return detail::neonKernels();
    case KernelPath::Avx512Vnni:
        return detail::avx512VnniKernels();
    }
    return nullptr;
}

KernelPath computeSelected() {
    if (const char* env = std::getenv("COLI_QUANT_PATH")) {
        for (KernelPath p :
             {KernelPath::Scalar, KernelPath::Avx2, KernelPath::Neon, KernelPath::Avx512Vnni})
            if (std::strcmp(env, kernelPathName(p)) == 0 && kernelPathAvailable(p)) return p;
    }
    if (kernelPathAvailable(KernelPath::Avx512Vnni)) return KernelPath::Avx512Vnni;
    if (kernelPathAvailable(KernelPath::Avx2)) return KernelPath::Avx2;
    if (kernelPathAvailable(KernelPath::Neon)) return KernelPath::Neon;
    return KernelPath::Scalar;
}

Status checkArgs(WeightFormat fmt, const uint8_t* w, int64_t rows, int64_t cols,
                 const QuantisedActivations& x, const void* y, KernelPath path) {
    const FormatInfo fi = formatInfo(fmt);
    if (!kernelPathAvailable(path))
        return {ErrorCode::Unsupported, std::string("quantMatmul: kernel path ") +
                                            kernelPathName(path) +
                                            " is not available on this CPU/build"};
    if (rows < 0 || rows % fi.rowTile != 0 || cols <= 0 || cols % fi.groupSize != 0 ||
        x.cols != cols || x.groupSize != fi.groupSize || x.nTokens < 0)
        return {ErrorCode::InvalidArgument, std::string("quantMatmul: ") + fi.name + " weights [" +
                                                std::to_string(rows) + ", " + std::to_string(cols) +
                                                "] vs activations cols " + std::to_string(x.cols) +
                                                " group " + std::to_string(x.groupSize)};
    if ((rows > 0 && x.nTokens > 0) &&
        (w == nullptr || y == nullptr || x.q == nullptr || x.scales == nullptr))
        return {ErrorCode::InvalidArgument, "quantMatmul: null pointer argument"};
    return Status::ok();
}

} // namespace

const char* kernelPathName(KernelPath path) {
    switch (path) {
    case KernelPath::Scalar:
        return "scalar";
    case KernelPath::Avx2:
        return "avx2";
    case KernelPath::Neon:
        return "neon";
    case KernelPath::Avx512Vnni:
        return "avx512vnni";
    }
    return "?";
}

bool kernelPathAvailable(KernelPath path) {
    return tableFor(path) != nullptr && cpuHas(path);
}

KernelPath selectedKernelPath() {
    static const KernelPath selected = computeSelected();
    return selected;
}

static detail::MatmulArgs argsFor(WeightFormat fmt, const uint8_t* w, int64_t rows, int64_t cols,
                                  const QuantisedActivations& x, float* y, int64_t t0) {
    const int64_t groups = cols / x.groupSize;
    return {fmt,
            formatInfo(fmt),
            x.groupSize,
            w,
            rowBytes(fmt, cols),
            rows,
            cols,
            x.q + t0 * cols,
            x.scales + t0 * groups,
            std::min(kMaxBatch, x.nTokens - t0),
            y + t0 * rows,
            rows};
}

Status quantMatmulRows(WeightFormat fmt, const uint8_t* w, int64_t rows, int64_t cols,
                       const QuantisedActivations& x, float* y, int64_t r0, int64_t r1,
                       KernelPath path) {
    COLI_RETURN_IF_ERROR(checkArgs(fmt, w, rows, cols, x, y, path));
    if (r0 < 0 || r0 > r1 || r1 > rows)
        return {ErrorCode::InvalidArgument, "quantMatmulRows: row range [" + std::to_string(r0) +
                                                ", " + std::to_string(r1) + ") outside [0, " +
                                                std::to_string(rows) + ")"};
    const detail::KernelTable* table = tableFor(path);
    for (int64_t t0 = 0; t0 < x.nTokens; t0 += kMaxBatch)
        if (r1 > r0) table->matmulRows(argsFor(fmt, w, rows, cols, x, y, t0), r0, r1);
    return Status::ok();
}

Status quantMatmul(WeightFormat fmt, const uint8_t* w, int64_t rows, int64_t cols,
                   const QuantisedActivations& x, float* y, KernelPath path) {
    COLI_RETURN_IF_ERROR(checkArgs(fmt, w, rows, cols, x, y, path));
    const detail::KernelTable* table = tableFor(path);
    // Blocks of 16 rows (a multiple of the SIMD row blocking); static schedule gives each thread
    // one contiguous range of rows, which streams well. Small work stays on one thread.
    constexpr int64_t kRowBlock = 16;
    const int64_t nBlocks = (rows + kRowBlock - 1) / kRowBlock;
    for (int64_t t0 = 0; t0 < x.nTokens; t0 += kMaxBatch) {
        const detail::MatmulArgs a = argsFor(fmt, w, rows, cols, x, y, t0);
        const bool parallel = rows * cols * a.nTokens >= (int64_t{1} << 18) && nBlocks > 1;
#pragma omp parallel for schedule(static) if (parallel)
        for (int64_t b = 0; b < nBlocks; ++b)
            table->matmulRows(a, b * kRowBlock, std::min(rows, (b + 1) * kRowBlock));
    }
    return Status::ok();
}

Status quantGroupDots(WeightFormat fmt, const uint8_t* w, int64_t rows, int64_t cols,
                      const QuantisedActivations& x, int32_t* dots, KernelPath path) {
    COLI_RETURN_IF_ERROR(checkArgs(fmt, w, rows, cols, x, dots, path));
    const detail::KernelTable* table = tableFor(path);
    const int64_t groups = cols / x.groupSize;
    for (int64_t t = 0; t < x.nTokens; ++t)
        for (int64_t r = 0; r < rows; ++r)
            table->groupDots(fmt, rowBlocks(fmt, w, cols, r), x.q + t * cols, cols,
                             dots + (t * rows + r) * groups);
    return Status::ok();
}

} // namespace coli::quant
