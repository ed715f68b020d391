#include "tier_log.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>

namespace coli::cli {

namespace {

std::string hexBits(const std::vector<uint64_t>& words) {
    // Most significant word first, without leading zero words: "0x" + hex.
    std::string out;
    char buf[17];
    bool started = false;
    for (size_t i = words.size(); i-- > 0;) {
        if (!started && words[i] == 0 && i > 0) continue;
        std::snprintf(buf, sizeof buf, started ? "%016llx" : "%llx",
                      static_cast<unsigned long long>(words[i]));
        out += buf;
        started = true;
    }
    return "0x" + (out.empty() ? std::string("0") : out);
}

} // namespace

std::unique_ptr<TierLog> TierLog::open(const std::string& path, tiers::ExpertCache& cache,
                                       std::string* error) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (!f) {
        *error = path + ": cannot write: " + std::strerror(errno);
        return nullptr;
    }
    std::unique_ptr<TierLog> log(new TierLog());
    log->m_file = f;
    log->m_cache = &cache;
    const tiers::TierTelemetry t = cache.telemetry();
    log->m_last = t.counters;
    const nlohmann::json header = {
        {"format", "coli-tier-log"},
        {"version", 1},
        {"n_layers", t.routedBits.size()},
        {"n_experts", cache.expertsPerLayer()},
        {"slot_bytes", t.residency.slotBytes},
        {"budget_bytes", t.residency.budgetBytes},
        {"total_experts", t.residency.totalExperts},
        {"mirror", t.mirror.configured ? nlohmann::json(t.mirror.dir) : nlohmann::json()},
        {"mirror_share", t.mirror.share}};
    std::fprintf(f, "%s\n", header.dump().c_str());
    TierLog* self = log.get();
    cache.setTokenObserver(
        [self](int tokens, const tiers::TierTelemetry& after) { self->write(tokens, after); });
    return log;
}

TierLog::~TierLog() {
    if (m_cache) m_cache->setTokenObserver(nullptr);
    if (m_file) std::fclose(m_file);
}

void TierLog::write(int tokens, const tiers::TierTelemetry& t) {
    const tiers::TierCounters& a = m_last;
    const tiers::TierCounters& b = t.counters;
    nlohmann::json routed = nlohmann::json::array();
    for (const auto& words : t.routedBits)
        routed.push_back(hexBits(words));
    const tiers::TierResidency& r = t.residency;
    const nlohmann::json line = {{"step", m_step++},
                                 {"tokens", tokens},
                                 {"routed", b.routed - a.routed},
                                 {"hits_pinned", b.hitsPinned - a.hitsPinned},
                                 {"hits_cache", b.hitsCache - a.hitsCache},
                                 {"misses", b.misses - a.misses},
                                 {"bytes_read", b.bytesRead - a.bytesRead},
                                 {"bytes_read_primary", b.bytesReadPrimary - a.bytesReadPrimary},
                                 {"bytes_read_mirror", b.bytesReadMirror - a.bytesReadMirror},
                                 {"io_wait_s", b.ioWaitSeconds - a.ioWaitSeconds},
                                 {"evictions", b.evictions - a.evictions},
                                 {"prefetch_issued", b.prefetchIssued - a.prefetchIssued},
                                 {"prefetch_used", b.prefetchUsed - a.prefetchUsed},
                                 {"lookahead_routed", b.lookaheadRouted - a.lookaheadRouted},
                                 {"lookahead_recalled", b.lookaheadRecalled - a.lookaheadRecalled},
                                 {"residency",
                                  {{"pinned", r.pinnedExperts},
                                   {"cache", r.cachedExperts},
                                   {"loading", r.loadingExperts},
                                   {"disk", r.diskExperts},
                                   {"pinned_bytes", r.pinnedBytes},
                                   {"cache_bytes", r.cacheBytes},
                                   {"allocated_bytes", r.allocatedBytes},
                                   {"budget_bytes", r.budgetBytes}}},
                                 {"routed_experts", routed}};
    std::fprintf(m_file, "%s\n", line.dump().c_str());
    m_last = b;
}

} // namespace coli::cli
