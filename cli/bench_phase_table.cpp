#include "bench_phase_table.h"

#include <fmt/core.h>

namespace coli::cli {

std::string phaseTable(const PhaseTimes& p, double units, const std::string& unit) {
    std::string out = fmt::format("{:<26} {:>10}", "phase", "per " + unit);
    for (size_t t = 0; t < p.threads.size(); ++t)
        out += fmt::format(" {:>9} {:>9}", fmt::format("t{} work", t), fmt::format("t{} wait", t));
    out += "\n";
    std::vector<double> work(p.threads.size(), 0.0), wait(p.threads.size(), 0.0);
    for (size_t i = 0; i < kPhaseCount; ++i) {
        int64_t count = 0;
        for (const auto& row : p.threads)
            count = std::max(count, row[i].count);
        if (count == 0) continue;
        out += fmt::format("{:<26} {:>10.1f}", phaseName(Phase(i)), double(count) / units);
        for (size_t t = 0; t < p.threads.size(); ++t) {
            const PhaseCell& c = p.threads[t][i];
            work[t] += c.workSeconds;
            wait[t] += c.waitSeconds;
            out += fmt::format(" {:>9.3f} {:>9.3f}", 1e3 * c.workSeconds / units,
                               1e3 * c.waitSeconds / units);
        }
        out += "\n";
    }
    out += fmt::format("{:<26} {:>10}", "total", "");
    for (size_t t = 0; t < p.threads.size(); ++t)
        out += fmt::format(" {:>9.3f} {:>9.3f}", 1e3 * work[t] / units, 1e3 * wait[t] / units);
    out += "\n";
    return out;
}

} // namespace coli::cli
