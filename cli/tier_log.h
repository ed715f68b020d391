#pragma once
// `coli generate --tier-log FILE`: the expert tiers' per-token telemetry as JSON lines, the data
// the GUI's tier bars and Brain draw (docs/cli.md "Expert placement"). Line 1 is a header
// {"format":"coli-tier-log","version":1,"n_layers":..,"n_experts":..,"slot_bytes":..,
// "budget_bytes":..,"mirror":DIR or null,"mirror_share":..}; then one line per forward step (a
// decode token or a prefill chunk) with that step's counters (differences; bytes_read also split
// into bytes_read_primary and bytes_read_mirror), the residency after it and the routed experts
// per layer as hex bitsets (bit e = expert e; "" for dense layers).
// Thread-safety: one thread (the cache's token observer runs on the compute thread).
#include "tiers/expert_cache.h"

#include <cstdio>
#include <memory>
#include <string>

namespace coli::cli {

class TierLog {
public:
    // Opens `path` for writing and installs itself as `cache`'s token observer; null with *error
    // set (naming the file) when it cannot be opened. Detaches in the destructor.
    static std::unique_ptr<TierLog> open(const std::string& path, tiers::ExpertCache& cache,
                                         std::string* error);
    ~TierLog();
    TierLog(const TierLog&) = delete;
    TierLog& operator=(const TierLog&) = delete;

private:
    TierLog() = default;
    void write(int tokens, const tiers::TierTelemetry& t);
    std::FILE* m_file = nullptr;
    tiers::ExpertCache* m_cache = nullptr;
    tiers::TierCounters m_last;
    int m_step = 0;
};

} // namespace coli::cli
