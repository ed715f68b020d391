#pragma once
// The per-phase table of `coli bench decode --resident --phases` (forward/phase_times.h): per
// phase, how often it ran and each thread's work and wait in milliseconds per unit (a decode
// token, or a prefill prompt).
#include "forward/phase_times.h"

#include <string>

namespace coli::cli {

// Rows for the phases that ran (in the forward pass's order), then a total row: "phase",
// "per <unit>" (runs per unit), then "t<i> work" and "t<i> wait" in ms per unit for every thread.
// units: how many units the sums cover (> 0). Thread-safety: pure.
std::string phaseTable(const PhaseTimes& p, double units, const std::string& unit);

} // namespace coli::cli
