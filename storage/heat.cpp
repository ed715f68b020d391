#include "storage/heat.h"

#include <algorithm>
#include <cmath>

namespace coli::storage {

double decayedHeat(double heat, int64_t lastSeen, int64_t nowTokens, double halfLifeTokens) {
    if (nowTokens <= lastSeen || std::isinf(halfLifeTokens)) return heat;
    const double periods = double(nowTokens - lastSeen) / halfLifeTokens;
    const double whole = std::floor(periods);
    // Beyond 2^-1100 every double is 0; also keeps the int conversion below in range.
    if (whole > 1100) return 0.0;
    return std::ldexp(heat * std::exp2(-(periods - whole)), -int(whole));
}

std::vector<HeatRecord> rankHottest(std::vector<HeatRecord> records, size_t budgetExperts,
                                    int64_t nowTokens, double halfLifeTokens) {
    std::vector<HeatRecord> out;
    out.reserve(records.size());
    for (HeatRecord r : records) {
        r.heat = decayedHeat(r.heat, r.lastSeen, nowTokens, halfLifeTokens);
        if (r.heat > 0) out.push_back(r);
    }
    std::sort(out.begin(), out.end(), [](const HeatRecord& a, const HeatRecord& b) {
        if (a.heat != b.heat) return a.heat > b.heat;
        if (a.layer != b.layer) return a.layer < b.layer;
        return a.expert < b.expert;
    });
    if (out.size() > budgetExperts) out.resize(budgetExperts);
    return out;
}

} // namespace coli::storage
