// Self-contained test for the cross build (aarch64, run under qemu-aarch64): the NEON path must be
// selected and bit-identical to the scalar reference on the standard sweep and at the extremes.
// Exit status 0 on success, 1 on any failure.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "path_check.h"
#include "quant/matmul.h"

using namespace coli::quant;

int main() {
    int failures = 0;
    auto check = [&](bool ok, const std::string& what) {
        if (!ok) {
            ++failures;
            std::printf("FAIL: %s\n", what.c_str());
        }
    };
    std::printf("selected kernel path: %s (available: scalar=%d avx2=%d neon=%d)\n",
                kernelPathName(selectedKernelPath()), kernelPathAvailable(KernelPath::Scalar),
                kernelPathAvailable(KernelPath::Avx2), kernelPathAvailable(KernelPath::Neon));
    check(kernelPathAvailable(KernelPath::Neon), "NEON dot-product path available");
    check(selectedKernelPath() == KernelPath::Neon, "dispatcher selects NEON");
    if (!kernelPathAvailable(KernelPath::Neon)) return 1;

    // Extremes with expected values from arithmetic (e.g. 64 * -128 * -128 = 1048576).
    int extremes = 0;
    for (WeightFormat f :
         {WeightFormat::Q8_G32, WeightFormat::Q8_G64, WeightFormat::Q4_G32, WeightFormat::Q4_G64}) {
        const FormatInfo fi = formatInfo(f);
        const int g = fi.groupSize;
        for (int wv : {fi.bits == 8 ? -128 : -8, fi.bits == 8 ? 127 : 7}) {
            for (int xv : {-128, 127}) {
                std::vector<uint8_t> w(rowBytes(f, g));
                const float one = 1.0f;
                std::memcpy(w.data(), &one, 4);
                const uint8_t nib = static_cast<uint8_t>(wv & 15);
                std::memset(w.data() + 4,
                            fi.bits == 8 ? static_cast<uint8_t>(wv) : (nib | nib << 4),
                            fi.blockBytes - 4);
                std::vector<int8_t> xq(g, static_cast<int8_t>(xv));
                const float xs = 1.0f;
                const QuantisedActivations x{xq.data(), &xs, 1, g, g};
                int32_t dot = 0;
                const bool ok = quantGroupDots(f, w.data(), 1, g, x, &dot, KernelPath::Neon).isOk();
                check(ok && dot == g * wv * xv, std::string(fi.name) + " extreme dot " +
                                                    std::to_string(dot) +
                                                    " != " + std::to_string(g * wv * xv));
                ++extremes;
            }
        }
    }
    std::vector<std::string> sweepFailures;
    const int cases = testing::runSweep(KernelPath::Neon, &sweepFailures);
    for (size_t i = 0; i < sweepFailures.size() && i < 10; ++i)
        std::printf("FAIL: %s\n", sweepFailures[i].c_str());
    failures += static_cast<int>(sweepFailures.size());
    std::printf("neon vs scalar: %d sweep cases, %d extreme cases, %d failures\n", cases, extremes,
                failures);
    return failures == 0 ? 0 : 1;
}
