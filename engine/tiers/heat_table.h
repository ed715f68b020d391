#pragma once
// Usage heat of every routed expert, the "frequency" of LFRU (DESIGN.md "Expert tiers", step 5):
// a routing count with exponential forgetting, heat_now = heat * 0.5^(elapsed / halfLife), where
// elapsed is counted in tokens (the same rule and default half-life as storage/heat.h, so heat
// saved to SQLite and loaded again continues unchanged). Recency is a global access sequence
// number; LFRU orders experts by decayed heat first and recency second.
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
    void setNow(int64_t tokens) { m_now = tokens; }
    void advance(int64_t tokens = 1) { m_now += tokens; }

    // One routing of `id` at now(): heat = decayed heat + 1, most recent use = a new sequence
    // number.
    void use(ExpertId id);
    // Heat decayed to now() (>= 0).
    double heat(ExpertId id) const;
    // Sequence number of the last use (0 = never used); larger is more recent.
    uint64_t lastUse(ExpertId id) const { return m_entries[index(id)].lastUse; }
    // Replaces the heat (e.g. from storage): `heat` as of token `asOf` (decayed from there on).
    void setHeat(ExpertId id, double heat, int64_t asOf);

    // LFRU eviction order: true when `a` should leave the cache before `b`: lower decayed heat
    // first; equal heat: less recently used first; then the larger (layer, expert) first, so the
    // order is total and deterministic.
    bool colder(ExpertId a, ExpertId b) const;

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

    int m_nLayers, m_nExperts;
    double m_halfLife;
    int64_t m_now = 0;
    uint64_t m_seq = 0;
    std::vector<Entry> m_entries;
};

} // namespace coli::tiers
