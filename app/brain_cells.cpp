#include "brain_cells.h"

#include <algorithm>
#include <cmath>

namespace coli::app {

uint8_t BrainCells::heatLevel(uint32_t hits) {
    if (hits == 0) return 0;
    return uint8_t(std::min(255.0, std::floor(8.0 * std::log2(1.0 + double(hits)))));
}

int BrainCells::ceilingFor(uint8_t maxLevel) {
    return std::max(16, (int(maxLevel) + 7) / 8 * 8);
}

void BrainCells::reset(const tiers::ExpertMap& map) {
    m_nLayers = map.nLayers;
    m_nExperts = map.nExperts;
    const size_t n = map.state.size() == map.hits.size() &&
                             map.state.size() == size_t(map.nLayers) * size_t(map.nExperts)
                         ? map.state.size()
                         : 0;
    if (n == 0) m_nLayers = m_nExperts = 0;
    m_state.assign(map.state.begin(), map.state.begin() + std::ptrdiff_t(n));
    m_hits.assign(map.hits.begin(), map.hits.begin() + std::ptrdiff_t(n));
    m_turnBase = m_hits;
    m_flashStart.assign(n, -1.0);
    m_visual.assign(n, Visual{});
    m_isDirty.assign(n, 0);
    m_dirty.clear();
    m_fading.clear();
    rescale();
    m_full = true;
}

void BrainCells::markDirty(int cell) {
    if (m_isDirty[size_t(cell)]) return;
    m_isDirty[size_t(cell)] = 1;
    m_dirty.push_back(cell);
}

void BrainCells::ingest(const tiers::ExpertMap& map, double now) {
    const size_t n = m_state.size();
    if (map.nLayers != m_nLayers || map.nExperts != m_nExperts || map.state.size() != n ||
        map.hits.size() != n) {
        reset(map);
        return;
    }
    for (size_t c = 0; c < n; ++c) {
        const uint32_t h = map.hits[c];
        if (h != m_hits[c]) {
            if (h < m_hits[c]) { // counts went back: a reload
                reset(map);
                return;
            }
            m_hits[c] = h;
            m_flashStart[c] = now;
            markDirty(int(c));
            m_maxLevel = std::max(m_maxLevel, heatLevel(modeHits(int(c))));
        }
        if (map.state[c] != m_state[c]) {
            m_state[c] = map.state[c];
            markDirty(int(c));
        }
    }
    const int ceiling = ceilingFor(m_maxLevel);
    if (ceiling != m_ceiling) {
        m_ceiling = ceiling;
        m_full = true;
    }
}

void BrainCells::rescale() {
    m_maxLevel = 0;
    for (size_t c = 0; c < m_hits.size(); ++c)
        m_maxLevel = std::max(m_maxLevel, heatLevel(modeHits(int(c))));
    const int ceiling = ceilingFor(m_maxLevel);
    if (ceiling != m_ceiling) m_full = true;
    m_ceiling = ceiling;
}

void BrainCells::startTurn() {
    m_turnBase = m_hits;
    if (m_mode == Mode::Turn) {
        rescale();
        m_full = true; // every cell's heat is 0 again
    }
}

void BrainCells::setMode(Mode m) {
    if (m == m_mode) return;
    m_mode = m;
    rescale();
    m_full = true;
}

BrainCells::Visual BrainCells::evaluate(int cell, double now) const {
    Visual v;
    v.state = m_state[size_t(cell)];
    v.heat = heatLevel(modeHits(cell));
    const double start = m_flashStart[size_t(cell)];
    if (start >= 0) {
        const double left = 1.0 - (now - start) / m_flashSeconds;
        if (left > 0)
            v.flash = uint8_t(std::clamp(int(std::ceil(left * kFlashLevels)), 1, kFlashLevels));
    }
    return v;
}

bool BrainCells::advance(double now, std::vector<int>* changed) {
    if (m_full) {
        m_fading.clear();
        for (size_t c = 0; c < m_visual.size(); ++c) {
            m_visual[c] = evaluate(int(c), now);
            if (m_visual[c].flash > 0) m_fading.push_back(int(c));
            m_isDirty[c] = 0;
        }
        m_dirty.clear();
        m_full = false;
        return true;
    }
    // The cells to look at: changed hits or state, and those still fading (each once).
    for (const int c : m_fading)
        markDirty(c);
    m_fading.clear();
    for (const int c : m_dirty) {
        m_isDirty[size_t(c)] = 0;
        const Visual v = evaluate(c, now);
        if (!(v == m_visual[size_t(c)])) {
            m_visual[size_t(c)] = v;
            changed->push_back(c);
        }
        if (v.flash > 0) m_fading.push_back(c);
    }
    m_dirty.clear();
    return false;
}

} // namespace coli::app
