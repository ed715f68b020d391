#pragma once
// The default RAM budget of the streamed experts (docs/design.md "Expert tiers", step 3: "budgets
// come from free memory at start (MemAvailable ...) minus a safety margin"; issue 14: within the
// room the memory cgroup leaves) and the one-line summaries the CLI prints about the tiers.
// Thread-safety: pure functions apart from reading /proc/meminfo and the cgroup files.
#include "core/status.h"
#include "runtime/cgroup_memory.h"
#include "tiers/expert_cache.h"

#include <cstdint>
#include <string>

namespace coli {

// MemAvailable from /proc/meminfo in bytes (the kernel's estimate of memory available for new
// allocations without swapping). Errors: NotFound / Malformed naming /proc/meminfo.
// `procRoot`: where meminfo is read (tests point it at a fake tree).
Result<uint64_t> memAvailableBytes(const std::string& procRoot = "/proc");

// The memory the default budget is taken from (issue 14): min(MemAvailable, the memory cgroup's
// room, runtime/cgroup_memory.h), read at call time (after the dense weights are loaded).
struct AvailableMemory {
    uint64_t bytes = 0;        // min(memAvailable, cgroup.roomBytes when cgroup.limited)
    uint64_t memAvailable = 0; // MemAvailable (bytes)
    CgroupMemory cgroup;       // limited = false when no limit, or when reading it failed
    std::string warning;       // why the cgroup was not read ("" when it was): the files named
    // Whether the cgroup's room, not MemAvailable, is the figure.
    bool cgroupDecides() const { return cgroup.limited && cgroup.roomBytes < memAvailable; }
};
// Errors: those of memAvailableBytes only. A cgroup file that cannot be read or parsed is not an
// error: MemAvailable alone is used and `warning` says which file and why.
Result<AvailableMemory> availableMemory(const CgroupPaths& paths = {});

// The safety margin kept free (bytes): max(512 MiB, 1/8 of memAvailable).
uint64_t budgetSafetyMargin(uint64_t memAvailable);

// min(every expert + the working set, max(minimum, memAvailable - margin)): the whole model
// when it fits, else what memory allows, never below the cache's minimum working set. The VRAM
// tier's bytes in system RAM (ExpertCache::vramTierRamBytes: all of it on a device sharing the
// system's memory, else its staging) count in the budget, so "every expert" grows by them.
uint64_t defaultExpertBudget(const tiers::ExpertCache& cache, uint64_t memAvailable);
// The same rule from plain values (for a plan made before or without a cache):
// minimumBudget = ExpertCache::minimumBudget(), slotBytes = ExpertCache::slotBytes(),
// totalExperts = routed experts of every MoE layer, vramRamBytes as above.
uint64_t defaultExpertBudget(uint64_t minimumBudget, uint64_t slotBytes, int totalExperts,
                             uint64_t memAvailable, uint64_t vramRamBytes = 0);
// The same rule on mem.bytes; `note` (optional) receives " (memory cgroup limit 2.00 GiB)" when
// the cgroup's room made the budget smaller than MemAvailable alone would have, else "".
uint64_t defaultExpertBudget(const tiers::ExpertCache& cache, const AvailableMemory& mem,
                             std::string* note = nullptr);

// Every routed expert plus the working set (plus ExpertCache::vramTierRamBytes): the most a budget
// can use (more buys nothing).
uint64_t maximumExpertBudget(const tiers::ExpertCache& cache);
// The budget a load sets when a too small or too large request must not fail (the app, the
// wizard's plan): `requestedBytes` when > 0, else defaultExpertBudget over availableMemory()
// (the minimum when memory cannot be read), clamped to [minimumBudget, maximumExpertBudget].
// `warning` (optional) receives availableMemory's warning (a cgroup file unreadable), else "".
uint64_t chooseExpertBudget(const tiers::ExpertCache& cache, uint64_t requestedBytes,
                            std::string* warning = nullptr);

// Experts the cache holds (hot-store and LFRU cache together) at `budgetBytes`: the budget's
// slots (budgetBytes / slotBytes) less the working set's `workingSlots` (reads in flight and the
// current token's experts), within [0, totalExperts]. 0 when slotBytes is 0.
int expertsThatFit(uint64_t budgetBytes, uint64_t slotBytes, int workingSlots, int totalExperts);

// "1.50 GiB", "12.0 MiB", "512 B".
std::string formatBytes(uint64_t bytes);

// One line on the tiers after load, e.g. "experts: streamed from disk (colibri container, 1 read
// of 3.38 MiB per expert); RAM budget 1.20 GiB = 363 of 1024 experts (working set 12), pinned
// hot-store up to 175", then "; mirror DIR: 2 files, 40 % of their experts read from it" when a
// mirror is in use. `budgetNote` follows the budget's figure (defaultExpertBudget's note).
std::string describeTiers(const tiers::ExpertCache& cache, const std::string& budgetNote = "");

// One line after a run, from two telemetry snapshots (before, after) and the run's wall seconds:
// "experts: hit rate 73.4 % (pinned 20.1 %, cache 53.3 %), prefetch in flight 9.0 %, read on
// demand 17.6 %; 2.10 MiB read/token, I/O wait 35 % of 4.20 s, prefetch recall 0.81 precision
// 0.62, 120 evictions". Hit rate: routed experts found ready in RAM; in flight: found being read
// by an earlier prefetch; on demand: read when routed (the three add up to 100 %). With a mirror:
// "; read from the primary disk 1.20 MiB, from the mirror 0.80 MiB" (" (mirror switched off)").
// With `prefill` (the run's prompt part, GenerateStats::tiersPrefill) the read per token is given
// for the prompt and the decode apart: "prefill 0.80 MiB read/token (30 tokens), decode 2.10 MiB
// read/token (15 tokens)"; a prefill chunk reads each routed expert once for all its tokens, so
// the decode figure is the one that sets decode speed.
std::string summariseTiers(const tiers::TierTelemetry& before, const tiers::TierTelemetry& after,
                           double wallSeconds, const tiers::TierCounters* prefill = nullptr);

} // namespace coli
