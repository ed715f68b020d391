#include "viz/synthetic_routing.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace coli::viz {
namespace {

struct SplitMix {
    uint64_t s;
    uint64_t next() {
        uint64_t z = (s += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    double open01() { return (double(next() >> 11) + 0.5) * 0x1.0p-53; } // in (0, 1)
};

} // namespace

Result<SyntheticRouting> makeSyntheticRouting(const SyntheticRoutingSpec& s) {
    if (s.nLayers < 1 || s.nExperts < 1 || s.topK < 1 || s.nTopics < 1 || s.tokensPerTopic < 1 ||
        s.topK > s.nExperts)
        return Status(ErrorCode::InvalidArgument,
                      "synthetic routing: sizes must be at least 1 and top_k at most n_experts");
    const size_t L = size_t(s.nLayers), E = size_t(s.nExperts), K = size_t(s.topK),
                 T = size_t(s.nTopics), n = L * E;
    if (L * E * E > (size_t(1) << 31))
        return Status(ErrorCode::InvalidArgument,
                      "synthetic routing: n_layers x n_experts^2 = " + std::to_string(L * E * E) +
                          " pair counters is too many");
    SplitMix rng{s.seed};
    SyntheticRouting out;
    out.plantedTopic.assign(n, -1);
    for (size_t i = 0; i < n; ++i)
        if (rng.open01() < s.specialistFraction) out.plantedTopic[i] = int(rng.next() % T);

    std::vector<uint64_t> slots(n * T, 0);
    std::vector<uint32_t> within(L * E * E, 0), across((L - 1) * E * E, 0);
    std::vector<double> key(E);
    std::vector<int> order(E), chosen(L * K);
    for (size_t t = 0; t < T; ++t) {
        for (int tok = 0; tok < s.tokensPerTopic; ++tok) {
            for (size_t l = 0; l < L; ++l) {
                for (size_t e = 0; e < E; ++e) {
                    const double gumbel = -std::log(-std::log(rng.open01()));
                    key[e] = gumbel + (out.plantedTopic[l * E + e] == int(t) ? s.bias : 0.0);
                }
                std::iota(order.begin(), order.end(), 0);
                std::partial_sort(order.begin(), order.begin() + long(K), order.end(),
                                  [&](int a, int b) { return key[size_t(a)] > key[size_t(b)]; });
                std::sort(order.begin(), order.begin() + long(K));
                for (size_t k = 0; k < K; ++k) {
                    const size_t e = size_t(order[k]);
                    chosen[l * K + k] = int(e);
                    ++slots[(l * E + e) * T + t];
                    for (size_t k2 = k + 1; k2 < K; ++k2)
                        ++within[(l * E + e) * E + size_t(order[k2])];
                    if (l > 0)
                        for (size_t k2 = 0; k2 < K; ++k2)
                            ++across[((l - 1) * E + size_t(chosen[(l - 1) * K + k2])) * E + e];
                }
            }
        }
    }

    RoutingProfile& p = out.profile;
    p.nExperts = int(n);
    p.nTopics = int(T);
    p.shares.resize(n * T);
    p.routed.assign(n, 0);
    const double slotsPerTopic = double(s.tokensPerTopic) * double(K);
    for (size_t i = 0; i < n; ++i)
        for (size_t t = 0; t < T; ++t) {
            p.shares[i * T + t] = double(slots[i * T + t]) / slotsPerTopic;
            p.routed[i] += slots[i * T + t];
        }
    for (size_t l = 0; l < L; ++l)
        for (size_t a = 0; a < E; ++a)
            for (size_t b = 0; b < E; ++b) {
                if (const uint32_t c = within[(l * E + a) * E + b])
                    p.coactivation.push_back({int32_t(l * E + a), int32_t(l * E + b), c});
                if (l + 1 < L)
                    if (const uint32_t c = across[(l * E + a) * E + b])
                        p.coactivation.push_back({int32_t(l * E + a), int32_t((l + 1) * E + b), c});
            }
    return out;
}

} // namespace coli::viz
