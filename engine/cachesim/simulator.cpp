#include "cachesim/simulator.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <vector>

namespace coli::cachesim {

const char* policyName(Policy p) {
    switch (p) {
    case Policy::Lru:
        return "lru";
    case Policy::Lfu:
        return "lfu";
    case Policy::Lfru:
        return "lfru";
    case Policy::Belady:
        return "belady";
    }
    return "?";
}

std::optional<Policy> parsePolicy(std::string_view name) {
    for (Policy p : {Policy::Lru, Policy::Lfu, Policy::Lfru, Policy::Belady})
        if (name == policyName(p)) return p;
    return std::nullopt;
}

namespace {

constexpr uint32_t kNever = std::numeric_limits<uint32_t>::max();

// The per-policy state and its victim order.
struct Orders {
    Policy policy;
    std::vector<uint64_t> lastAccess; // Lru: cache-access sequence number
    std::vector<int64_t> count;       // Lfu: routings
    std::vector<uint64_t> lastRouted; // Lfu: routing sequence number
    tiers::HeatTable heat;            // Lfru
    std::vector<uint32_t> nextUse;    // Belady: per access, the index of the key's next access
    std::vector<uint32_t> nextOf;     // Belady: per key, its next access after the current one
    const AccessSequence& seq;

    tiers::ExpertId id(int32_t key) const { return {seq.layerOf(key), seq.expertOf(key)}; }

    // True when `a` should be evicted before `b` while model layer `layer` is computed.
    bool first(int32_t a, int32_t b, int layer) const {
        switch (policy) {
        case Policy::Lru:
            return lastAccess[size_t(a)] < lastAccess[size_t(b)];
        case Policy::Lfu:
            if (count[size_t(a)] != count[size_t(b)]) return count[size_t(a)] < count[size_t(b)];
            if (lastRouted[size_t(a)] != lastRouted[size_t(b)])
                return lastRouted[size_t(a)] < lastRouted[size_t(b)];
            return a > b;
        case Policy::Lfru:
            return heat.colder(id(a), id(b), layer, seq.topK);
        case Policy::Belady:
            if (nextOf[size_t(a)] != nextOf[size_t(b)])
                return nextOf[size_t(a)] > nextOf[size_t(b)];
            return a < b;
        }
        return false;
    }
};

} // namespace

Result<SimResult> simulate(const AccessSequence& seq, const SimOptions& o) {
    if (o.capacity < 0)
        return Status(ErrorCode::InvalidArgument,
                      fmt::format("capacity {} must be >= 0", o.capacity));
    if (o.bytesPerExpert < 0)
        return Status(ErrorCode::InvalidArgument,
                      fmt::format("bytes per expert {} must be >= 0", o.bytesPerExpert));
    if (!(o.halfLifeTokens > 0))
        return Status(ErrorCode::InvalidArgument,
                      fmt::format("half-life {} tokens must be > 0", o.halfLifeTokens));

    const size_t nKeys = size_t(seq.nLayers) * size_t(seq.nExperts);
    Orders ord{o.policy, {}, {}, {}, tiers::HeatTable(seq.nLayers, seq.nExperts, o.halfLifeTokens),
               {},       {}, seq};
    switch (o.policy) {
    case Policy::Lru:
        ord.lastAccess.assign(nKeys, 0);
        break;
    case Policy::Lfu:
        ord.count.assign(nKeys, 0);
        ord.lastRouted.assign(nKeys, 0);
        break;
    case Policy::Lfru:
        break;
    case Policy::Belady: {
        ord.nextUse.assign(seq.accesses.size(), kNever);
        ord.nextOf.assign(nKeys, kNever);
        std::vector<uint32_t> later(nKeys, kNever);
        for (size_t i = seq.accesses.size(); i-- > 0;) {
            ord.nextUse[i] = later[size_t(seq.accesses[i])];
            later[size_t(seq.accesses[i])] = uint32_t(i);
        }
        break;
    }
    }

    SimResult r;
    std::vector<int32_t> slots; // resident keys
    std::vector<int32_t> slotOf(nKeys, -1);
    const size_t capacity = size_t(o.capacity);
    slots.reserve(std::min(capacity, nKeys));
    // The last group (layer of a step) that wanted each key: the engine never evicts an expert of
    // the layer being computed (ExpertCache::beginLayer protects the whole batch).
    std::vector<int64_t> groupOf(nKeys, -1);
    uint64_t accessSeq = 0, routingSeq = 0;
    for (size_t gi = 0; gi < seq.groups.size(); ++gi) {
        const auto& g = seq.groups[gi];
        for (uint32_t i = g.routingBegin; i < g.routingEnd; ++i) {
            const int32_t k = seq.routings[i];
            if (o.policy == Policy::Lfu) {
                ++ord.count[size_t(k)];
                ord.lastRouted[size_t(k)] = ++routingSeq;
            } else if (o.policy == Policy::Lfru) {
                ord.heat.use(ord.id(k));
            }
        }
        for (uint32_t i = g.accessBegin; i < g.accessEnd; ++i)
            groupOf[size_t(seq.accesses[i])] = int64_t(gi);
        // A group is one layer of one step: its first access names the layer.
        const int layer =
            g.accessEnd > g.accessBegin ? seq.layerOf(seq.accesses[g.accessBegin]) : 0;
        for (uint32_t i = g.accessBegin; i < g.accessEnd; ++i) {
            const int32_t k = seq.accesses[i];
            ++r.accesses;
            if (o.policy == Policy::Belady) ord.nextOf[size_t(k)] = ord.nextUse[i];
            if (slotOf[size_t(k)] >= 0) {
                ++r.hits;
            } else {
                ++r.misses;
                size_t v = slots.size(); // the victim's slot; none yet
                if (slots.size() >= capacity)
                    for (size_t s = 0; s < slots.size(); ++s)
                        if (groupOf[size_t(slots[s])] != int64_t(gi) &&
                            (v == slots.size() || ord.first(slots[s], slots[v], layer)))
                            v = s;
                if (slots.size() < capacity || v < slots.size()) {
                    if (slots.size() >= capacity) {
                        const int32_t victim = slots[v];
                        slots[v] = slots.back();
                        slotOf[size_t(slots[v])] = int32_t(v);
                        slots.pop_back();
                        // Last: when it was the last slot, the victim was just moved onto itself.
                        slotOf[size_t(victim)] = -1;
                        ++r.evictions;
                    }
                    slotOf[size_t(k)] = int32_t(slots.size());
                    slots.push_back(k);
                } else {
                    ++r.bypassed;
                }
            }
            if (o.policy == Policy::Lru) ord.lastAccess[size_t(k)] = ++accessSeq;
        }
        if (g.advanceAfter > 0) ord.heat.advance(g.advanceAfter);
    }
    r.bytesRead = r.misses * o.bytesPerExpert;
    return r;
}

Result<int> parseCapacity(std::string_view text, int totalExperts) {
    auto bad = [&](const char* why) {
        return Status(ErrorCode::InvalidArgument, fmt::format("capacity '{}': {}", text, why));
    };
    if (text.empty()) return bad("empty");
    if (text.back() == '%') {
        const std::string num(text.substr(0, text.size() - 1));
        char* end = nullptr;
        const double p = num.empty() ? NAN : std::strtod(num.c_str(), &end);
        if (num.empty() || end != num.c_str() + num.size() || !std::isfinite(p))
            return bad("not a number before '%'");
        if (p < 0 || p > 100) return bad("the percentage must be in [0, 100]");
        int n = int(std::lround(p / 100.0 * totalExperts));
        if (p > 0 && n == 0) n = 1;
        return n;
    }
    int n = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc() || ptr != text.data() + text.size())
        return bad("expected a number of experts or a percentage such as 25%");
    if (n < 0 || n > totalExperts)
        return Status(ErrorCode::InvalidArgument,
                      fmt::format("capacity '{}': must be in [0, {}] experts", text, totalExperts));
    return n;
}

} // namespace coli::cachesim
