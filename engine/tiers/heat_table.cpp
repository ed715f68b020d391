#include "tiers/heat_table.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace coli::tiers {

HeatTable::HeatTable(int nLayers, int nExperts, double halfLifeTokens)
    : m_nLayers(nLayers), m_nExperts(nExperts),
      m_halfLife(halfLifeTokens > 0 ? halfLifeTokens : kDefaultHalfLifeTokens),
      m_entries(size_t(nLayers > 0 ? nLayers : 0) * (nExperts > 0 ? nExperts : 0)),
      m_layers(size_t(nLayers > 0 ? nLayers : 0)) {}

// The decay of storage/heat.h (decayedHeat): whole half-lives as an exact power-of-two scaling,
// so a heat saved and reloaded after a whole number of half-lives has the same bits.
double HeatTable::decayedAt(double heat, int64_t stamp) const {
    const double elapsed = double(m_now - stamp);
    if (elapsed <= 0 || heat == 0 || std::isinf(m_halfLife)) return heat;
    const double halfLives = elapsed / m_halfLife;
    const double whole = std::floor(halfLives);
    if (whole > 1100) return 0; // every double is 0 beyond 2^-1100
    return std::ldexp(heat * std::exp2(-(halfLives - whole)), -int(whole));
}

double HeatTable::decayed(const Entry& e) const {
    return decayedAt(e.heat, e.stamp);
}

void HeatTable::use(ExpertId id) {
    Entry& e = m_entries[index(id)];
    e.heat = decayed(e) + 1;
    e.stamp = m_now;
    e.lastUse = ++m_seq;
    Entry& l = m_layers[size_t(id.layer)];
    l.heat = decayed(l) + 1;
    l.stamp = m_now;
}

void HeatTable::setNow(int64_t tokens) {
    m_now = tokens;
    // Heats stamped after the new clock do not decay until it passes them: recompute the sums
    // so that they stay the sums of what heat() returns.
    for (int l = 0; l < m_nLayers; ++l)
        resumLayer(l);
}

void HeatTable::resumLayer(int layer) {
    double sum = 0;
    for (int e = 0; e < m_nExperts; ++e)
        sum += heat({layer, e});
    m_layers[size_t(layer)] = {sum, m_now, 0};
}

double HeatTable::layerHeat(int layer) const {
    return decayed(m_layers[size_t(layer)]);
}

double HeatTable::expectedNextUse(ExpertId id, int currentLayer, int topK) const {
    const double h = heat(id);
    if (!(h > 0)) return std::numeric_limits<double>::infinity();
    const int n = m_nLayers;
    if (n <= 0) return std::numeric_limits<double>::infinity();
    int d = ((id.layer - currentLayer) % n + n) % n;
    if (d == 0) d = n;
    // The sum is kept incrementally and may round below one of its terms: p is capped at 1.
    const double total = std::max(layerHeat(id.layer), h);
    const double p = std::min(1.0, double(std::max(topK, 1)) * h / total);
    return double(d) + double(n) * (1.0 / p - 1.0);
}

bool HeatTable::colder(ExpertId a, ExpertId b, int currentLayer, int topK) const {
    const double ta = expectedNextUse(a, currentLayer, topK);
    const double tb = expectedNextUse(b, currentLayer, topK);
    if (ta != tb) return ta > tb;
    const uint64_t ra = lastUse(a), rb = lastUse(b);
    if (ra != rb) return ra < rb;
    if (a.layer != b.layer) return a.layer > b.layer;
    return a.expert > b.expert;
}

double HeatTable::heat(ExpertId id) const {
    return decayed(m_entries[index(id)]);
}

void HeatTable::setHeat(ExpertId id, double heat, int64_t asOf) {
    Entry& e = m_entries[index(id)];
    e.heat = heat > 0 ? heat : 0;
    e.stamp = asOf;
    resumLayer(id.layer);
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
