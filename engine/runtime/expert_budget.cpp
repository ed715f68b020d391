#include "runtime/expert_budget.h"

#include "core/strings.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace coli {

Result<uint64_t> memAvailableBytes(const std::string& procRoot) {
    const std::string path = procRoot + "/meminfo";
    std::ifstream f(path);
    if (!f) return Status(ErrorCode::NotFound, path + ": cannot open");
    std::string line;
    while (std::getline(f, line)) {
        if (line.rfind("MemAvailable:", 0) != 0) continue;
        std::istringstream in(line.substr(13));
        uint64_t kib = 0;
        std::string unit;
        if (!(in >> kib >> unit) || unit != "kB")
            return Status(ErrorCode::Malformed, path + ": cannot parse '" + line + "'");
        return kib * 1024;
    }
    return Status(ErrorCode::Malformed, path + ": no MemAvailable line");
}

Result<AvailableMemory> availableMemory(const CgroupPaths& paths) {
    Result<uint64_t> avail = memAvailableBytes(paths.procRoot);
    if (!avail) return avail.status();
    AvailableMemory m;
    m.memAvailable = *avail;
    m.bytes = *avail;
    Result<CgroupMemory> cg = cgroupMemory(paths);
    if (!cg) {
        m.warning = "memory cgroup limit not read (" + cg.status().message() +
                    "); the RAM budget follows MemAvailable alone";
        return m;
    }
    m.cgroup = *cg;
    if (m.cgroup.limited) m.bytes = std::min(m.bytes, m.cgroup.roomBytes);
    return m;
}

uint64_t budgetSafetyMargin(uint64_t memAvailable) {
    return std::max<uint64_t>(uint64_t(512) << 20, memAvailable / 8);
}

uint64_t defaultExpertBudget(uint64_t minimumBudget, uint64_t slotBytes, int totalExperts,
                             uint64_t memAvailable, uint64_t vramRamBytes) {
    const uint64_t all =
        minimumBudget + uint64_t(std::max(0, totalExperts)) * slotBytes + vramRamBytes;
    const uint64_t margin = budgetSafetyMargin(memAvailable);
    const uint64_t room = memAvailable > margin ? memAvailable - margin : 0;
    return std::min(all, std::max(minimumBudget, room));
}

uint64_t defaultExpertBudget(const tiers::ExpertCache& cache, uint64_t memAvailable) {
    return defaultExpertBudget(cache.minimumBudget(), cache.slotBytes(),
                               cache.telemetry().residency.totalExperts, memAvailable,
                               cache.vramTierRamBytes());
}

uint64_t defaultExpertBudget(const tiers::ExpertCache& cache, const AvailableMemory& mem,
                             std::string* note) {
    const uint64_t budget = defaultExpertBudget(cache, mem.bytes);
    if (note) {
        note->clear();
        if (mem.cgroupDecides() && budget < defaultExpertBudget(cache, mem.memAvailable))
            *note = " (memory cgroup limit " + formatBytes(mem.cgroup.limitBytes) + ")";
    }
    return budget;
}

uint64_t maximumExpertBudget(const tiers::ExpertCache& cache) {
    return cache.minimumBudget() +
           uint64_t(std::max(0, cache.telemetry().residency.totalExperts)) * cache.slotBytes() +
           cache.vramTierRamBytes();
}

uint64_t chooseExpertBudget(const tiers::ExpertCache& cache, uint64_t requestedBytes,
                            std::string* warning) {
    if (warning) warning->clear();
    uint64_t want = requestedBytes;
    if (want == 0) {
        Result<AvailableMemory> avail = availableMemory();
        if (warning && avail) *warning = avail->warning;
        want = avail ? defaultExpertBudget(cache, *avail) : 0;
    }
    const uint64_t lo = cache.minimumBudget();
    return std::clamp(want, lo, std::max(lo, maximumExpertBudget(cache)));
}

int expertsThatFit(uint64_t budgetBytes, uint64_t slotBytes, int workingSlots, int totalExperts) {
    if (slotBytes == 0) return 0;
    const uint64_t slots = budgetBytes / slotBytes;
    const uint64_t working = uint64_t(std::max(0, workingSlots));
    const uint64_t fit = slots > working ? slots - working : 0;
    return int(std::min<uint64_t>(fit, uint64_t(std::max(0, totalExperts))));
}

std::string formatBytes(uint64_t bytes) {
    char buf[32];
    if (bytes >= (uint64_t(1) << 30))
        std::snprintf(buf, sizeof buf, "%.2f GiB", double(bytes) / double(uint64_t(1) << 30));
    else if (bytes >= (uint64_t(1) << 20))
        return mibString(bytes, 2);
    else if (bytes >= 1024)
        std::snprintf(buf, sizeof buf, "%.1f KiB", double(bytes) / 1024.0);
    else
        std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
    return buf;
}

std::string describeTiers(const tiers::ExpertCache& cache, const std::string& budgetNote) {
    const tiers::TierResidency r = cache.telemetry().residency;
    const uint64_t working = r.slotBytes ? cache.minimumBudget() / r.slotBytes : 0;
    const int fit = expertsThatFit(r.budgetBytes, r.slotBytes, int(working), r.totalExperts);
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "experts: streamed from disk (%s, %s, %s); RAM budget %s%s = %llu of %d experts "
                  "(working set %llu slots), pinned hot-store up to %d",
                  cache.source().describe().c_str(), aio::ioBackendName(cache.pool().backend()),
                  cache.pool().readModeText().c_str(), formatBytes(r.budgetBytes).c_str(),
                  budgetNote.c_str(), static_cast<unsigned long long>(fit), r.totalExperts,
                  static_cast<unsigned long long>(working), cache.pinCapacity());
    std::string out = buf;
    const tiers::MirrorStatus m = cache.mirrorStatus();
    if (m.configured) {
        std::snprintf(buf, sizeof buf,
                      "; mirror %s: %d file%s, %.0f %% of their experts read from it",
                      m.dir.c_str(), m.files, m.files == 1 ? "" : "s", 100.0 * m.share);
        out += buf;
    }
    return out;
}

namespace {
// "2.10 MiB read/token", or with the prefill part given, the prefill's and the decode's apart.
std::string readPerToken(const tiers::TierCounters& run, const tiers::TierCounters* prefill) {
    auto per = [](const tiers::TierCounters& c) {
        return formatBytes(c.tokens > 0 ? uint64_t(double(c.bytesRead) / double(c.tokens)) : 0);
    };
    if (!prefill) return per(run) + " read/token";
    const tiers::TierCounters decode = run - *prefill;
    return "prefill " + per(*prefill) + " read/token (" + std::to_string(prefill->tokens) +
           " tokens), decode " + per(decode) + " read/token (" + std::to_string(decode.tokens) +
           " tokens)";
}
} // namespace

std::string summariseTiers(const tiers::TierTelemetry& before, const tiers::TierTelemetry& after,
                           double wallSeconds, const tiers::TierCounters* prefill) {
    const tiers::TierCounters& a = before.counters;
    const tiers::TierCounters& b = after.counters;
    const double routed = double(b.routed - a.routed);
    const double pinned = double(b.hitsPinned - a.hitsPinned);
    const double inFlight = double(b.inFlightHits - a.inFlightHits);
    const double cached = double(b.hitsCache - a.hitsCache) - inFlight; // ready in the cache
    const double misses = double(b.misses - a.misses);
    const double vram = double(b.hitsVram - a.hitsVram); // computed on the GPU (docs/gpu.md)
    const double wait = b.ioWaitSeconds - a.ioWaitSeconds;
    const double la = double(b.lookaheadRouted - a.lookaheadRouted);
    const double pred = double(b.prefetchPredicted - a.prefetchPredicted);
    auto pct = [](double x, double of) { return of > 0 ? 100.0 * x / of : 0.0; };
    char vramBuf[48] = "";
    if (vram > 0 || after.residency.vramCapacity > 0)
        std::snprintf(vramBuf, sizeof vramBuf, "VRAM %.1f %%, ", pct(vram, routed));
    const std::string vramText = vramBuf;
    char buf[640];
    std::snprintf(
        buf, sizeof buf,
        "experts: hit rate %.1f %% (%spinned %.1f %%, cache %.1f %%), prefetch in flight %.1f %%, "
        "read on demand %.1f %%; %s, I/O wait %.0f %% of %.2f s, prefetch recall %.2f "
        "precision %.2f, %llu evictions",
        pct(vram + pinned + cached, routed), vramText.c_str(), pct(pinned, routed),
        pct(cached, routed), pct(inFlight, routed), pct(misses, routed),
        readPerToken(b - a, prefill).c_str(), pct(wait, wallSeconds), wallSeconds,
        la > 0 ? double(b.lookaheadRecalled - a.lookaheadRecalled) / la : 0.0,
        pred > 0 ? double(b.prefetchCorrect - a.prefetchCorrect) / pred : 0.0,
        static_cast<unsigned long long>(b.evictions - a.evictions));
    std::string out = buf;
    if (after.mirror.configured) {
        const uint64_t primary = b.bytesReadPrimary - a.bytesReadPrimary;
        const uint64_t mirror = b.bytesReadMirror - a.bytesReadMirror;
        out += "; read from the primary disk " + formatBytes(primary) + ", from the mirror " +
               formatBytes(mirror) + (after.mirror.fellBack ? " (mirror switched off)" : "");
    }
    return out;
}

} // namespace coli
