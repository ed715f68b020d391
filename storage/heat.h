#pragma once
// Usage heat: how often an expert was routed, decayed with a half-life counted in tokens
// (docs/storage.md "Heat"). Pure functions: the same inputs give the same bits on a machine.
// Thread-safety: pure; safe from any thread.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace coli::storage {

// Default half-life: the heat of an expert not routed for this many tokens halves.
constexpr double kDefaultHalfLifeTokens = 8192;

// One expert's stored heat.
struct HeatRecord {
    int layer = 0;
    int expert = 0;
    double heat = 0;      // decayed routing count as of lastSeen (>= 0)
    int64_t lastSeen = 0; // the model's token clock when heat was saved (tokens)
};

// heat_now = heat * 0.5^((nowTokens - lastSeen) / halfLifeTokens), the usual exponential decay
// written with a half-life. Elapsed time is clamped at 0 (a clock behind lastSeen never grows
// heat). Computed as ldexp(heat * exp2(-frac), -whole) with whole/frac the integer and fractional
// half-lives, so a whole number of half-lives is an exact power-of-two scaling. Requires
// halfLifeTokens > 0 (+infinity: no decay); callers validate it.
double decayedHeat(double heat, int64_t lastSeen, int64_t nowTokens, double halfLifeTokens);

// The experts to pin at start: records decayed to nowTokens (heat replaced by the decayed value,
// lastSeen kept), those with decayed heat > 0, ordered by decayed heat descending, ties by
// (layer, expert) ascending, at most budgetExperts of them.
std::vector<HeatRecord> rankHottest(std::vector<HeatRecord> records, size_t budgetExperts,
                                    int64_t nowTokens, double halfLifeTokens);

} // namespace coli::storage
