#pragma once
// Usage heat of every routed expert, the "frequency" of LFRU (docs/design.md "Expert tiers", step
// 5): a routing count with exponential forgetting, heat_now = heat * 0.5^(elapsed / halfLife),
// where elapsed is counted in tokens (the same rule and default half-life as storage/heat.h, so
// heat saved to SQLite and loaded again continues unchanged). Recency is a global access sequence
// number; LFRU orders experts by decayed heat first and recency second. The layer-cycle aware
// order (colder(a, b, currentLayer, topK)) turns the heat into an expected time to the next
// routing, because a decode step visits the layers in order and an expert of layer l can be used
// again only when layer l comes round (docs/perf-cache-policy.md).
// Thread-safety: none; one owner (the expert cache, under its lock, or a simulator).
#include <cstddef>
#include <cstdint>
#include <vector>

namespace coli::tiers {

struct ExpertId {
    int layer = 0;  // model layer index
    int expert = 0; // routed expert index within the layer
    bool operator==(const ExpertId&) const = default;
};

class HeatTable {
public:
    static constexpr double kDefaultHalfLifeTokens = 8192; // storage::kDefaultHalfLifeTokens

    // nLayers x nExperts experts, all with heat 0 and never used. halfLifeTokens > 0 (+inf: no
    // decay); non-positive values are replaced by the default.
    HeatTable(int nLayers, int nExperts, double halfLifeTokens = kDefaultHalfLifeTokens);

    int nLayers() const { return m_nLayers; }
    int nExperts() const { return m_nExperts; }
    double halfLifeTokens() const { return m_halfLife; }

    // The token clock (tokens processed since the table was made, plus any start offset).
    int64_t now() const { return m_now; }
    // O(nLayers * nExperts): also recomputes the per-layer sums (layerHeat).
    void setNow(int64_t tokens);
    void advance(int64_t tokens = 1) { m_now += tokens; }

    // One routing of `id` at now(): heat = decayed heat + 1, most recent use = a new sequence
    // number.
    void use(ExpertId id);
    // Heat decayed to now() (>= 0).
    double heat(ExpertId id) const;
    // Sequence number of the last use (0 = never used); larger is more recent.
    uint64_t lastUse(ExpertId id) const { return m_entries[index(id)].lastUse; }
    // Replaces the heat (e.g. from storage): `heat` as of token `asOf` (decayed from there on).
    // O(nExperts) (recomputes the layer's sum).
    void setHeat(ExpertId id, double heat, int64_t asOf);

    // LFRU eviction order: true when `a` should leave the cache before `b`: lower decayed heat
    // first; equal heat: less recently used first; then the larger (layer, expert) first, so the
    // order is total and deterministic.
    bool colder(ExpertId a, ExpertId b) const;

    // Expected time to the next routing of `id`, in layers (one token = nLayers() layers), seen
    // from the start of layer `currentLayer` (the layer being computed, or the next one when
    // between layers; taken modulo nLayers()). Formula: the expert's per-token routing
    // probability is estimated from its share of its layer's decayed heat,
    // p = min(1, topK * heat / layerHeat) (a layer's heats sum to about topK per token); its
    // layer comes round after d = (id.layer - currentLayer) mod nLayers layers (d = nLayers for
    // the current layer: its experts not wanted now wait a whole token); with independent
    // tokens the routing is geometric, so E[next use] = d + nLayers * (1/p - 1). +inf when the
    // heat is 0 (never used, or decayed to nothing). topK >= 1 (values below count as 1).
    // The expected-next-use rule is Belady's "farthest next use" with the future replaced by
    // its expectation (cf. the independent reference model, Aho, Denning & Ullman 1971,
    // "Principles of optimal page replacement", JACM 18(1)).
    double expectedNextUse(ExpertId id, int currentLayer, int topK) const;
    // Decayed heat summed over the experts of `layer` (>= 0).
    double layerHeat(int layer) const;

    // Layer-cycle aware LFRU eviction order (the expert cache's): true when `a` should leave the
    // cache before `b` at layer `currentLayer`: the later expected next use first
    // (expectedNextUse, i.e. the lower heat share, corrected for how far its layer is); equal:
    // less recently used first; then the larger (layer, expert) first (total, deterministic).
    bool colder(ExpertId a, ExpertId b, int currentLayer, int topK) const;

    // Every expert's decayed heat, [n_layers * n_experts] row-major by layer.
    std::vector<double> snapshot() const;

private:
    struct Entry {
        double heat = 0;   // as of `stamp`
        int64_t stamp = 0; // token clock of `heat`
        uint64_t lastUse = 0;
    };
    size_t index(ExpertId id) const { return size_t(id.layer) * m_nExperts + id.expert; }
    double decayed(const Entry& e) const;
    double decayedAt(double heat, int64_t stamp) const;
    void resumLayer(int layer);

    int m_nLayers, m_nExperts;
    double m_halfLife;
    int64_t m_now = 0;
    uint64_t m_seq = 0;
    std::vector<Entry> m_entries;
    // Per layer: the sum of its experts' heats as of the stamp; it decays like one heat (the
    // decay is linear), so use() keeps it in O(1); setHeat() and setNow() recompute it.
    std::vector<Entry> m_layers;
};

} // namespace coli::tiers
