#pragma once
// Replays an AccessSequence against an expert cache of `capacity` experts (one pool over all
// layers) and counts hits and misses. Every access is a hit when the expert is resident; else a
// miss (one read of the expert), after which it is inserted, evicting one victim when the cache
// is full (demand paging). As in the engine (tiers::ExpertCache::beginLayer), an expert wanted by
// the current group (one layer of one step, its batch) is never the victim; when every
// resident expert is such, the missed expert is read but not inserted (counted as bypassed; only
// possible when the capacity is below the group's distinct experts).
//
// Policies (the victim is the resident expert that is first in the order):
// - Lru: least recently accessed (cache accesses).
// - Lfu: fewest routings so far (plain counts, kept for evicted experts too: "perfect" LFU); ties:
//   least recently routed, then the larger (layer, expert) (the tie rules of LFRU).
// - Lfru: tiers::HeatTable::colder(a, b, layer, topK), the engine's order, with `layer` the model
//   layer of the current group and topK the traces' top_k: the latest expected next routing
//   first, estimated from the expert's share of its layer's decayed routing heat (half-life in
//   tokens) and the distance to its layer in the layer cycle; ties least recently routed, then
//   the larger (layer, expert).
// - Belady: the evictable resident expert whose next access is farthest in the future (never
//   again counts as infinitely far; ties the smaller key). Belady 1966, "A study of replacement
//   algorithms for a virtual-storage computer", IBM Systems Journal 5(2): optimal for demand
//   paging; tests/cachesim checks it against an exhaustive search under the group rule too.
// Heat and LFU counts are per routing: each (token, expert) choice of a group is one
// HeatTable::use() (so a prefill chunk's expert routed by 30 tokens gains 30), applied before the
// group's accesses; HeatTable::advance(tokens of the step) after the step's last layer. In decode
// (one token per step) a routing and an access are the same thing.
// Thread-safety: simulate() is a pure function of its arguments.
#include "cachesim/access_sequence.h"
#include "core/status.h"
#include "tiers/heat_table.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace coli::cachesim {

enum class Policy { Lru, Lfu, Lfru, Belady };

// "lru", "lfu", "lfru", "belady".
const char* policyName(Policy p);
// The inverse of policyName (lower case only); nullopt for anything else.
std::optional<Policy> parsePolicy(std::string_view name);

struct SimOptions {
    Policy policy = Policy::Lfru;
    int capacity = 0; // experts, >= 0 (0: every access misses); may exceed totalExperts()
    double halfLifeTokens = tiers::HeatTable::kDefaultHalfLifeTokens; // Lfru only; +inf: no decay
    int64_t bytesPerExpert = 0; // bytes of one expert read, >= 0 (0: bytesRead stays 0)
};

struct SimResult {
    int64_t accesses = 0;
    int64_t hits = 0;
    int64_t misses = 0;    // = reads
    int64_t bytesRead = 0; // misses x bytesPerExpert
    int64_t evictions = 0;
    int64_t bypassed = 0; // misses not inserted (capacity below the group's experts)
    double hitRate() const { return accesses == 0 ? 0.0 : double(hits) / double(accesses); }
};

// InvalidArgument for a negative capacity, bytesPerExpert or halfLifeTokens (<= 0, NaN).
Result<SimResult> simulate(const AccessSequence& seq, const SimOptions& o);

// Capacity from text: "25%" = round(25% of total) experts (at least 1 when the percentage is
// positive), or a plain count "24"; percentages in [0, 100], counts in [0, total]. Returns the
// experts, or InvalidArgument naming the text.
Result<int> parseCapacity(std::string_view text, int totalExperts);

} // namespace coli::cachesim
