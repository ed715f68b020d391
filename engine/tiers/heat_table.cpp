#include "tiers/heat_table.h"

#include <cmath>

namespace coli::tiers {

HeatTable::HeatTable(int nLayers, int nExperts, double halfLifeTokens)
    : m_nLayers(nLayers), m_nExperts(nExperts),
      m_halfLife(halfLifeTokens > 0 ? halfLifeTokens : kDefaultHalfLifeTokens),
      m_entries(size_t(nLayers > 0 ? nLayers : 0) * (nExperts > 0 ? nExperts : 0)) {}

// The decay of storage/heat.h (decayedHeat): whole half-lives as an exact power-of-two scaling,
// so a heat saved and reloaded after a whole number of half-lives has the same bits.
double HeatTable::decayed(const Entry& e) const {
    const double elapsed = double(m_now - e.stamp);
    if (elapsed <= 0 || e.heat == 0 || std::isinf(m_halfLife)) return e.heat;
    const double halfLives = elapsed / m_halfLife;
    const double whole = std::floor(halfLives);
    if (whole > 1100) return 0; // every double is 0 beyond 2^-1100
    return std::ldexp(e.heat * std::exp2(-(halfLives - whole)), -int(whole));
}

void HeatTable::use(ExpertId id) {
    Entry& e = m_entries[index(id)];
    e.heat = decayed(e) + 1;
    e.stamp = m_now;
    e.lastUse = ++m_seq;
}

double HeatTable::heat(ExpertId id) const {
    return decayed(m_entries[index(id)]);
}

void HeatTable::setHeat(ExpertId id, double heat, int64_t asOf) {
    Entry& e = m_entries[index(id)];
    e.heat = heat > 0 ? heat : 0;
    e.stamp = asOf;
}

bool HeatTable::colder(ExpertId a, ExpertId b) const {
    const double ha = heat(a), hb = heat(b);
    if (ha != hb) return ha < hb;
    const uint64_t ra = lastUse(a), rb = lastUse(b);
    if (ra != rb) return ra < rb;
    if (a.layer != b.layer) return a.layer > b.layer;
    return a.expert > b.expert;
}

std::vector<double> HeatTable::snapshot() const {
    std::vector<double> out(m_entries.size());
    for (size_t i = 0; i < m_entries.size(); ++i)
        out[i] = decayed(m_entries[i]);
    return out;
}

} // namespace coli::tiers
