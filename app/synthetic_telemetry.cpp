#include "synthetic_telemetry.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>

namespace coli::app {

namespace {
using tiers::ExpertState;

uint8_t stateByte(ExpertState s) {
    return static_cast<uint8_t>(s);
}

std::optional<int> parseInt(std::string_view s) {
    int v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
    return v;
}
} // namespace

std::optional<SyntheticOptions> parseSyntheticShape(const std::string& text, std::string* error) {
    const size_t x = text.find_first_of("xX");
    const auto fail = [&](const std::string& why) -> std::optional<SyntheticOptions> {
        if (error) *error = why;
        return std::nullopt;
    };
    if (x == std::string::npos)
        return fail("'" + text + "' is not a shape LAYERSxEXPERTS such as 75x256");
    const std::optional<int> layers = parseInt(std::string_view(text).substr(0, x));
    const std::optional<int> experts = parseInt(std::string_view(text).substr(x + 1));
    if (!layers || !experts)
        return fail("'" + text + "' is not a shape LAYERSxEXPERTS such as 75x256");
    SyntheticOptions o;
    if (*layers < 1 || *layers > 1024)
        return fail("layers must be 1 to 1024 (got " + std::to_string(*layers) + ")");
    if (*experts < o.topK || *experts > 4096)
        return fail("experts per layer must be " + std::to_string(o.topK) + " to 4096 (got " +
                    std::to_string(*experts) + ")");
    o.nLayers = *layers;
    o.nExperts = *experts;
    // The cache holds an eighth of the experts, the pins a sixteenth: like a big model in a RAM
    // budget of about a fifth of its experts; a GPU holds another sixteenth, so the Brain shows
    // every tier.
    o.pinnedPerLayer = std::max(1, *experts / 16);
    o.cacheExperts = std::max(o.topK * 2, *layers * *experts / 8);
    o.vramExperts = *layers * *experts / 16;
    return o;
}

SyntheticTelemetry::SyntheticTelemetry(SyntheticOptions opt) : m_opt(opt), m_rng(opt.seed) {
    m_opt.nLayers = std::max(1, m_opt.nLayers);
    m_opt.nExperts = std::max(1, m_opt.nExperts);
    m_opt.topK = std::clamp(m_opt.topK, 1, m_opt.nExperts);
    m_opt.denseLayers = std::clamp(m_opt.denseLayers, 0, m_opt.nLayers - 1);
    m_opt.pinnedPerLayer = std::clamp(m_opt.pinnedPerLayer, 0, m_opt.nExperts);
    m_opt.cacheExperts = std::max(m_opt.cacheExperts, m_opt.topK * 2);
    m_opt.loadTokens = std::max(1, m_opt.loadTokens);
    m_opt.topicTokens = std::max(1, m_opt.topicTokens);
    m_opt.turnTokens = std::max(1, m_opt.turnTokens);
    m_opt.vramExperts = std::max(0, m_opt.vramExperts);

    const int L = m_opt.nLayers, E = m_opt.nExperts;
    const size_t cells = size_t(L) * size_t(E);
    tiers::ExpertMap& map = m_status.experts;
    map.nLayers = L;
    map.nExperts = E;
    map.state.assign(cells, stateByte(ExpertState::Disk));
    map.hits.assign(cells, 0);
    m_lastUse.assign(cells, 0);
    m_loadLeft.assign(cells, 0);
    m_userPinned.assign(cells, 0);
    for (int l = 0; l < m_opt.denseLayers; ++l)
        std::fill_n(map.state.begin() + size_t(l) * E, E, stateByte(ExpertState::None));

    // Per MoE layer: Zipf(1) popularity over a random permutation of the experts; the hottest
    // are pinned from the start (the learned pins of earlier sessions).
    m_base.assign(size_t(L), {});
    m_cumulative.assign(size_t(L), std::vector<double>(size_t(E)));
    m_topicShift.assign(size_t(L), 0);
    std::vector<int> perm(static_cast<size_t>(E));
    for (int l = m_opt.denseLayers; l < L; ++l) {
        std::iota(perm.begin(), perm.end(), 0);
        for (int i = E - 1; i > 0; --i) // Fisher-Yates with our own bits (portable)
            std::swap(perm[size_t(i)], perm[size_t(nextBits() % uint64_t(i + 1))]);
        m_base[size_t(l)].assign(size_t(E), 0);
        for (int r = 0; r < E; ++r)
            m_base[size_t(l)][size_t(perm[size_t(r)])] = 1.0 / double(r + 1);
        for (int r = 0; r < m_opt.pinnedPerLayer; ++r)
            map.state[size_t(l) * E + size_t(perm[size_t(r)])] = stateByte(ExpertState::Pinned);
    }
    drift();
    m_status.streaming = true;
    m_status.backend = "synthetic";
    m_status.source = "synthetic telemetry";
    m_status.expertReadBytes = m_opt.expertBytes;
    m_status.prefetch = false;
    m_status.pinCapacity = m_opt.pinnedPerLayer * moeLayers() + 64;
    m_status.residency.slotBytes = m_opt.expertBytes;
    m_status.residency.totalExperts = moeLayers() * E;
    m_status.residency.budgetBytes =
        uint64_t(m_status.pinCapacity + m_opt.cacheExperts) * m_opt.expertBytes;
    m_status.residency.vramCapacity = m_opt.vramExperts;
    m_status.residency.vramBudgetBytes = uint64_t(m_opt.vramExperts) * m_opt.expertBytes;
    m_status.minimumBudget = uint64_t(m_opt.topK) * m_opt.expertBytes;
    m_status.maximumBudget = uint64_t(cells) * m_opt.expertBytes;
    publish();
}

uint64_t SyntheticTelemetry::nextBits() {
    return m_rng();
}

double SyntheticTelemetry::nextUnit() {
    return double(nextBits() >> 11) * 0x1.0p-53;
}

// A new topic: each layer's popularity becomes its fixed Zipf weights blended with the same
// weights rotated by a random amount (a different set of experts is hot for a while).
void SyntheticTelemetry::drift() {
    const int E = m_opt.nExperts;
    for (int l = m_opt.denseLayers; l < m_opt.nLayers; ++l) {
        m_topicShift[size_t(l)] = int(nextBits() % uint64_t(E));
        const std::vector<double>& w = m_base[size_t(l)];
        std::vector<double>& cum = m_cumulative[size_t(l)];
        double sum = 0;
        for (int e = 0; e < E; ++e) {
            sum += 0.5 * w[size_t(e)] + 0.5 * w[size_t((e + m_topicShift[size_t(l)]) % E)];
            cum[size_t(e)] = sum;
        }
    }
}

const TierStatus& SyntheticTelemetry::step() {
    const int L = m_opt.nLayers, E = m_opt.nExperts;
    tiers::ExpertMap& map = m_status.experts;
    tiers::TierCounters step;
    ++m_tokens;
    m_turnStarted = (m_tokens - 1) % uint64_t(m_opt.turnTokens) == 0;
    if ((m_tokens - 1) % uint64_t(m_opt.topicTokens) == 0 && m_tokens > 1) drift();

    // Reads in flight complete (their slots join the cache as most recently used).
    for (size_t c = 0; c < map.state.size(); ++c) {
        if (m_loadLeft[c] == 0) continue;
        if (--m_loadLeft[c] == 0) {
            if ((map.state[c] & tiers::kExpertStateMask) == stateByte(ExpertState::Loading)) {
                map.state[c] =
                    (map.state[c] & tiers::kUserPinFlag) |
                    stateByte(m_userPinned[c] ? ExpertState::Pinned : ExpertState::Cached);
                if (m_userPinned[c]) --m_cached; // its slot is the hot-store's now
            }
            step.bytesRead += m_opt.expertBytes;
        }
    }

    std::vector<int> picked;
    picked.reserve(size_t(m_opt.topK));
    for (int l = m_opt.denseLayers; l < L; ++l) {
        const std::vector<double>& cum = m_cumulative[size_t(l)];
        picked.clear();
        for (int attempts = 0; int(picked.size()) < m_opt.topK; ++attempts) {
            int e = 0;
            if (attempts < 64 * m_opt.topK) {
                const double u = nextUnit() * cum.back();
                e = int(std::upper_bound(cum.begin(), cum.end(), u) - cum.begin());
                e = std::min(e, E - 1);
            } else { // heavily skewed: take the next free expert
                e = int(nextBits() % uint64_t(E));
                while (std::find(picked.begin(), picked.end(), e) != picked.end())
                    e = (e + 1) % E;
            }
            if (std::find(picked.begin(), picked.end(), e) != picked.end()) continue;
            picked.push_back(e);
        }
        for (const int e : picked) {
            const size_t c = size_t(l) * size_t(E) + size_t(e);
            ++map.hits[c];
            ++step.routed;
            m_lastUse[c] = m_tokens;
            const auto st = ExpertState(map.state[c] & tiers::kExpertStateMask);
            // Computed on the CPU from its RAM slot, then copied to VRAM while there is room:
            // the slot goes back to the RAM budget.
            const bool admit = m_vram < m_opt.vramExperts &&
                               (st == ExpertState::Pinned || st == ExpertState::Cached);
            if (admit) {
                map.state[c] = (map.state[c] & tiers::kUserPinFlag) | stateByte(ExpertState::Vram);
                ++m_vram;
                if (st == ExpertState::Cached) --m_cached;
            }
            switch (st) {
            case ExpertState::Vram:
                ++step.hitsVram;
                break;
            case ExpertState::Pinned:
                ++step.hitsPinned;
                break;
            case ExpertState::Cached:
                ++step.hitsCache;
                break;
            case ExpertState::Loading:
                ++step.hitsCache;
                ++step.inFlightHits;
                break;
            default: // Disk: a demand read
                ++step.misses;
                ++step.readsIssued;
                map.state[c] =
                    (map.state[c] & tiers::kUserPinFlag) | stateByte(ExpertState::Loading);
                m_loadLeft[c] = m_opt.loadTokens;
                ++m_cached;
                break;
            }
        }
    }
    // Over capacity: the least recently used ready cached experts go back to disk. Routed
    // experts of this token (lastUse == now) are never chosen (the cache holds >= 2 top-k).
    if (m_cached > m_opt.cacheExperts) {
        std::vector<std::pair<uint64_t, int>> ready;
        for (size_t c = 0; c < map.state.size(); ++c)
            if (map.state[c] == stateByte(ExpertState::Cached))
                ready.emplace_back(m_lastUse[c], int(c));
        const size_t over = size_t(m_cached - m_opt.cacheExperts);
        const size_t n = std::min(over, ready.size());
        std::partial_sort(ready.begin(), ready.begin() + std::ptrdiff_t(n), ready.end());
        for (size_t i = 0; i < n; ++i) {
            map.state[size_t(ready[i].second)] = stateByte(ExpertState::Disk);
            ++step.evictions;
            --m_cached;
        }
    }
    step.tokens = 1;
    m_status.last = step;
    tiers::TierCounters& total = m_status.counters;
    total.routed += step.routed;
    total.hitsPinned += step.hitsPinned;
    total.hitsCache += step.hitsCache;
    total.hitsVram += step.hitsVram;
    total.inFlightHits += step.inFlightHits;
    total.misses += step.misses;
    total.readsIssued += step.readsIssued;
    total.bytesRead += step.bytesRead;
    total.evictions += step.evictions;
    total.tokens += 1;
    total.ioWaitSeconds += 0.004 * double(step.misses) / double(std::max(1, moeLayers()));
    m_status.lastDecode = step; // every simulated step is a decode token
    m_status.decodeCounters = total;
    publish();
    return m_status;
}

bool SyntheticTelemetry::toggleUserPin(int layer, int expert) {
    if (layer < m_opt.denseLayers || layer >= m_opt.nLayers || expert < 0 ||
        expert >= m_opt.nExperts)
        return false;
    const size_t c = size_t(layer) * size_t(m_opt.nExperts) + size_t(expert);
    uint8_t& s = m_status.experts.state[c];
    const auto st = ExpertState(s & tiers::kExpertStateMask);
    if (st == ExpertState::Vram) { // stays in VRAM: only the mark changes
        m_userPinned[c] = !m_userPinned[c];
        s = uint8_t((m_userPinned[c] ? tiers::kUserPinFlag : 0) | stateByte(ExpertState::Vram));
    } else if (!m_userPinned[c] &&
               st == ExpertState::Pinned) { // a learned pin: unpinned by the user
        s = stateByte(ExpertState::Cached);
        ++m_cached;
    } else if (!m_userPinned[c]) {
        m_userPinned[c] = 1;
        if (st == ExpertState::Cached) --m_cached;
        if (st == ExpertState::Loading) { // the read finishes into the hot-store
            s = tiers::kUserPinFlag | stateByte(ExpertState::Loading);
        } else {
            s = tiers::kUserPinFlag | stateByte(ExpertState::Pinned);
        }
    } else {
        m_userPinned[c] = 0;
        if (st == ExpertState::Loading) {
            s = stateByte(ExpertState::Loading);
        } else { // stays resident, now as a cached expert
            s = stateByte(ExpertState::Cached);
            ++m_cached;
        }
    }
    publish();
    return true;
}

void SyntheticTelemetry::publish() {
    tiers::TierResidency& r = m_status.residency;
    r.pinnedExperts = r.cachedExperts = r.loadingExperts = r.diskExperts = r.vramExperts = 0;
    for (const uint8_t s : m_status.experts.state) {
        switch (ExpertState(s & tiers::kExpertStateMask)) {
        case ExpertState::Pinned:
            ++r.pinnedExperts;
            break;
        case ExpertState::Cached:
            ++r.cachedExperts;
            break;
        case ExpertState::Loading:
            ++r.loadingExperts;
            break;
        case ExpertState::Disk:
            ++r.diskExperts;
            break;
        case ExpertState::Vram:
            ++r.vramExperts;
            break;
        case ExpertState::None:
            break;
        }
    }
    const uint64_t slot = m_opt.expertBytes;
    r.vramBytes = uint64_t(r.vramExperts) * slot;
    r.pinnedBytes = uint64_t(r.pinnedExperts) * slot;
    r.cacheBytes = uint64_t(r.cachedExperts + r.loadingExperts) * slot;
    r.allocatedBytes = r.pinnedBytes + r.cacheBytes;
    m_status.busySeconds = double(m_tokens) / std::max(0.1, m_opt.tokensPerSecond);
    ++m_status.serial;
}

} // namespace coli::app
