#include "path_check.h"

#include <cstring>
#include <random>

#include "quant/matmul.h"

namespace coli::quant::testing {

const char* fillName(Fill fill) {
    switch (fill) {
    case Fill::Gaussian:
        return "gaussian";
    case Fill::RawRandom:
        return "raw-random";
    case Fill::Extreme:
        return "extreme";
    }
    return "?";
}

std::vector<uint8_t> retile(WeightFormat to, const std::vector<uint8_t>& plain, int64_t rows,
                            int64_t cols) {
    std::vector<uint8_t> out(plain.size());
    convertLayout(plainFormat(to), plain.data(), to, out.data(), rows, cols);
    return out;
}

std::vector<float> gaussianValues(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v)
        x = d(rng);
    return v;
}

Problem makeProblem(WeightFormat fmt, int64_t rows, int64_t cols, int64_t nTokens, Fill fill,
                    uint32_t seed) {
    if (plainFormat(fmt) != fmt) {
        // The plain problem's numbers, laid out in tiles: the results must be the same bits.
        Problem p = makeProblem(plainFormat(fmt), rows, cols, nTokens, fill, seed);
        p.w = retile(fmt, p.w, rows, cols);
        p.fmt = fmt;
        return p;
    }
    const FormatInfo fi = formatInfo(fmt);
    const int64_t groups = cols / fi.groupSize;
    Problem p{fmt, rows, cols, nTokens, {}, {}, {}};
    p.w.resize(static_cast<size_t>(rows) * rowBytes(fmt, cols));
    p.xq.resize(static_cast<size_t>(nTokens * cols));
    p.xs.resize(static_cast<size_t>(nTokens * groups));
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> scaleDist(1e-4f, 2.0f);
    if (fill == Fill::Gaussian) {
        std::vector<float> wf(static_cast<size_t>(rows * cols));
        for (float& v : wf)
            v = normal(rng);
        (void)quantiseRows(fmt, wf.data(), rows, cols, p.w.data());
        std::vector<float> xf(static_cast<size_t>(nTokens * cols));
        for (float& v : xf)
            v = normal(rng);
        std::vector<uint8_t> scratch(activationScratchBytes(fi.groupSize, nTokens, cols));
        QuantisedActivations qa;
        (void)quantiseActivations(xf.data(), nTokens, cols, fi.groupSize, scratch.data(),
                                  scratch.size(), &qa);
        std::memcpy(p.xq.data(), qa.q, p.xq.size());
        std::memcpy(p.xs.data(), qa.scales, p.xs.size() * sizeof(float));
        return p;
    }
    const bool extreme = fill == Fill::Extreme;
    for (int64_t r = 0; r < rows; ++r) {
        uint8_t* block = p.w.data() + static_cast<size_t>(r) * rowBytes(fmt, cols);
        for (int64_t gi = 0; gi < groups; ++gi, block += fi.blockBytes) {
            const float s = scaleDist(rng);
            std::memcpy(block, &s, sizeof s);
            for (size_t b = 4; b < fi.blockBytes; ++b) {
                if (!extreme) {
                    block[b] = static_cast<uint8_t>(rng() & 0xFF);
                } else if (fi.bits == 8) {
                    block[b] = (rng() & 1) ? 0x80 : 0x7F; // -128 or 127
                } else {
                    const unsigned lo = (rng() & 1) ? 0x8 : 0x7; // -8 or 7
                    const unsigned hi = (rng() & 1) ? 0x8 : 0x7;
                    block[b] = static_cast<uint8_t>(lo | (hi << 4));
                }
            }
        }
    }
    for (int8_t& q : p.xq) {
        if (extreme)
            q = (rng() & 1) ? int8_t{-128} : int8_t{127};
        else
            q = static_cast<int8_t>(rng() & 0xFF);
    }
    // Make one whole row all -128 / -8 against activations all -128 (the largest sums) when the
    // fill is extreme.
    if (extreme && rows > 0 && nTokens > 0) {
        uint8_t* block = p.w.data();
        for (int64_t gi = 0; gi < groups; ++gi, block += fi.blockBytes)
            std::memset(block + 4, fi.bits == 8 ? 0x80 : 0x88, fi.blockBytes - 4);
        std::memset(p.xq.data(), 0x80, static_cast<size_t>(cols));
    }
    for (float& s : p.xs)
        s = scaleDist(rng);
    return p;
}

std::string comparePathToScalar(KernelPath path, const Problem& p) {
    const FormatInfo fi = formatInfo(p.fmt);
    const int64_t groups = p.cols / fi.groupSize;
    const QuantisedActivations x{p.xq.data(), p.xs.data(), p.nTokens, p.cols, fi.groupSize};
    const std::string what = std::string(fi.name) + " rows " + std::to_string(p.rows) + " cols " +
                             std::to_string(p.cols) + " tokens " + std::to_string(p.nTokens) +
                             " path " + kernelPathName(path) + ": ";
    std::vector<float> yRef(static_cast<size_t>(p.nTokens * p.rows), -1.0f);
    std::vector<float> y(yRef.size(), -2.0f);
    Status s = quantMatmul(p.fmt, p.w.data(), p.rows, p.cols, x, yRef.data(), KernelPath::Scalar);
    if (!s.isOk()) return what + "scalar failed: " + s.toString();
    s = quantMatmul(p.fmt, p.w.data(), p.rows, p.cols, x, y.data(), path);
    if (!s.isOk()) return what + "failed: " + s.toString();
    if (std::memcmp(y.data(), yRef.data(), y.size() * sizeof(float)) != 0) {
        for (size_t i = 0; i < y.size(); ++i)
            if (std::memcmp(&y[i], &yRef[i], sizeof(float)) != 0)
                return what + "y[" + std::to_string(i) + "] = " + std::to_string(y[i]) +
                       " != scalar " + std::to_string(yRef[i]);
    }
    std::vector<int32_t> dRef(static_cast<size_t>(p.nTokens * p.rows * groups));
    std::vector<int32_t> d(dRef.size(), 0x5555);
    s = quantGroupDots(p.fmt, p.w.data(), p.rows, p.cols, x, dRef.data(), KernelPath::Scalar);
    if (!s.isOk()) return what + "scalar dots failed: " + s.toString();
    s = quantGroupDots(p.fmt, p.w.data(), p.rows, p.cols, x, d.data(), path);
    if (!s.isOk()) return what + "dots failed: " + s.toString();
    for (size_t i = 0; i < d.size(); ++i)
        if (d[i] != dRef[i])
            return what + "dot[" + std::to_string(i) + "] = " + std::to_string(d[i]) +
                   " != scalar " + std::to_string(dRef[i]);
    return {};
}

int runSweep(KernelPath path, std::vector<std::string>* failures) {
    int cases = 0;
    uint32_t seed = 1;
    const std::vector<int64_t> rowCounts = {1, 3, 4, 5, 17, 64, 131};
    const std::vector<int64_t> tiledRowCounts = {8, 16, 64, 136};
    for (WeightFormat fmt : {WeightFormat::Q8_G32, WeightFormat::Q8_G64, WeightFormat::Q4_G32,
                             WeightFormat::Q4_G64, WeightFormat::Q8_G32_R8, WeightFormat::Q8_G64_R8,
                             WeightFormat::Q4_G32_R8, WeightFormat::Q4_G64_R8}) {
        const int g = formatInfo(fmt).groupSize;
        for (Fill fill : {Fill::Gaussian, Fill::RawRandom, Fill::Extreme}) {
            for (int64_t rows : formatInfo(fmt).rowTile == 1 ? rowCounts : tiledRowCounts) {
                for (int64_t groups : {int64_t{1}, int64_t{3}, int64_t{8}}) {
                    for (int64_t n : {int64_t{1}, int64_t{2}, int64_t{5}, int64_t{8}, int64_t{16},
                                      int64_t{17}}) {
                        const Problem p = makeProblem(fmt, rows, groups * g, n, fill, seed++);
                        std::string err = comparePathToScalar(path, p);
                        ++cases;
                        if (!err.empty())
                            failures->push_back(std::string(fillName(fill)) + " " + err);
                    }
                }
            }
        }
    }
    return cases;
}

} // namespace coli::quant::testing
