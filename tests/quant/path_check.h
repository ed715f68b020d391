#pragma once
// Shared by the gtest suite (host) and the self-contained cross test (aarch64 under qemu):
// builds random or extreme quantised weights/activations and compares a kernel path against the
// scalar reference bit for bit (integer group dots and f32 outputs).
#include <cstdint>
#include <string>
#include <vector>

#include "quant/dispatch.h"
#include "quant/formats.h"

namespace coli::quant::testing {

enum class Fill {
    Gaussian,  // weights from the quantiser on N(0,1) values, activations from quantiseActivations
    RawRandom, // uniformly random bytes/nibbles (all of -128..127, -8..7) and random scales
    Extreme,   // only -128/127 (int8) or -8/7 (int4) weights and -128/127 activations: every
               // adjacent pair saturates an int16 pair sum as in _mm256_maddubs_epi16
};

const char* fillName(Fill fill);

// n values from N(0, 1), the same for the same seed.
std::vector<float> gaussianValues(size_t n, uint32_t seed);

struct Problem {
    WeightFormat fmt;
    int64_t rows = 0, cols = 0, nTokens = 0;
    std::vector<uint8_t> w; // rows * rowBytes
    std::vector<int8_t> xq; // [nTokens, cols]
    std::vector<float> xs;  // [nTokens, cols / G]
};

// For an -r8 format: the problem of its plain format with the same seed, its weights retiled
// (rows must then be a multiple of 8).
Problem makeProblem(WeightFormat fmt, int64_t rows, int64_t cols, int64_t nTokens, Fill fill,
                    uint32_t seed);

// The weights `plain` (rows x cols in plainFormat(to)) laid out in the -r8 format `to`.
std::vector<uint8_t> retile(WeightFormat to, const std::vector<uint8_t>& plain, int64_t rows,
                            int64_t cols);

// Empty when `path` matches scalar exactly on `p` (y by memcmp, integer dots by equality);
// otherwise a description of the first mismatch.
std::string comparePathToScalar(KernelPath path, const Problem& p);

// Runs the standard sweep (all formats, plain and -r8, fills, a set of shapes incl. ragged row
// counts for the plain ones, tokens
// 1..16 and 17 for the batch split) for `path`; returns the number of cases run and appends
// failures to *failures.
int runSweep(KernelPath path, std::vector<std::string>* failures);

} // namespace coli::quant::testing
