#pragma once
// Summary statistics shared by the CLI's benchmarks (`coli bench io`, `coli bench decode`):
// docs/performance.md reports the median of the measured runs (with min-max).
// Thread-safety: pure.
#include <algorithm>
#include <vector>

namespace coli::cli {

// The median of v (the mean of the two middle values for an even count); 0 when v is empty.
inline double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

} // namespace coli::cli
