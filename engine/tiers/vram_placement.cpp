#include "tiers/vram_placement.h"

#include <algorithm>

namespace coli::tiers {

VramPlacement::VramPlacement(int nLayers, int nExperts, int slots,
                             const VramPlacementOptions& options)
    : m_nLayers(std::max(nLayers, 0)), m_nExperts(std::max(nExperts, 1)), m_opt(options),
      m_heat(m_nLayers, m_nExperts, options.halfLifeTokens), m_owner(size_t(std::max(slots, 0))),
      m_slotOf(size_t(m_nLayers) * size_t(m_nExperts), -1),
      m_pinned(size_t(m_nLayers) * size_t(m_nExperts), 0) {}

int VramPlacement::key(ExpertId id) const {
    if (id.layer < 0 || id.layer >= m_nLayers || id.expert < 0 || id.expert >= m_nExperts)
        return -1;
    return id.layer * m_nExperts + id.expert;
}

int VramPlacement::slotOf(ExpertId id) const {
    const int k = key(id);
    return k < 0 ? -1 : m_slotOf[size_t(k)];
}

bool VramPlacement::ready(ExpertId id) const {
    const int s = slotOf(id);
    return s >= 0 && m_owner[size_t(s)].ready;
}

bool VramPlacement::pinned(ExpertId id) const {
    const int k = key(id);
    return k >= 0 && m_pinned[size_t(k)];
}

void VramPlacement::use(ExpertId id, int count) {
    if (key(id) < 0) return;
    for (int i = 0; i < count; ++i)
        m_heat.use(id);
}

void VramPlacement::endTokens(int n) {
    if (n > 0) m_heat.advance(n);
}

int VramPlacement::pinCapacity() const {
    return int(double(slots()) * std::clamp(m_opt.pinShare, 0.0, 1.0));
}

std::vector<ExpertId> VramPlacement::pins() const {
    std::vector<ExpertId> out;
    for (size_t k = 0; k < m_pinned.size(); ++k)
        if (m_pinned[k]) out.push_back(idOf(int(k)));
    return out;
}

int VramPlacement::freeSlot() const {
    if (m_used >= slots()) return -1;
    for (int s = 0; s < slots(); ++s)
        if (m_owner[size_t(s)].key < 0) return s;
    return -1;
}

int VramPlacement::victim(const std::function<bool(int)>& slotBusy) const {
    // O(slots) per call: a miss at most top-k times per layer and token; fine for the slot
    // counts of today's GPUs (tens of thousands at most).
    int best = -1;
    for (int s = 0; s < slots(); ++s) {
        const Slot& o = m_owner[size_t(s)];
        if (o.key < 0 || !o.ready || m_pinned[size_t(o.key)] || (slotBusy && slotBusy(s))) continue;
        if (best < 0 || m_heat.colder(idOf(o.key), idOf(m_owner[size_t(best)].key))) best = s;
    }
    return best;
}

void VramPlacement::assign(int slot, int k) {
    Slot& o = m_owner[size_t(slot)];
    if (o.key < 0) ++m_used;
    if (o.ready) --m_ready;
    o.key = k;
    o.ready = false;
    m_slotOf[size_t(k)] = slot;
}

void VramPlacement::clear(int slot) {
    Slot& o = m_owner[size_t(slot)];
    if (o.key < 0) return;
    m_slotOf[size_t(o.key)] = -1;
    if (o.ready) --m_ready;
    o = Slot{};
    --m_used;
}

std::vector<VramPlacement::Assignment>
VramPlacement::setPins(std::span<const ExpertId> hottestFirst,
                       const std::function<bool(int)>& slotBusy) {
    std::vector<uint8_t> want(m_pinned.size(), 0);
    std::vector<int> order;
    for (const ExpertId& id : hottestFirst) {
        if (int(order.size()) >= pinCapacity()) break;
        const int k = key(id);
        if (k < 0 || want[size_t(k)]) continue;
        want[size_t(k)] = 1;
        order.push_back(k);
    }
    // Unpin first, so the old pins' slots can serve the new ones.
    for (size_t k = 0; k < m_pinned.size(); ++k)
        if (m_pinned[k] && !want[k]) {
            m_pinned[k] = 0;
            const int s = m_slotOf[k];
            if (s >= 0 && !m_owner[size_t(s)].ready) clear(s); // a reservation never filled
        }
    std::vector<Assignment> copies;
    for (int k : order) {
        m_pinned[size_t(k)] = 1;
        if (m_slotOf[size_t(k)] >= 0) {
            const int s = m_slotOf[size_t(k)];
            if (!m_owner[size_t(s)].ready) copies.push_back({idOf(k), s});
            continue;
        }
        int s = freeSlot();
        if (s < 0) {
            s = victim(slotBusy);
            if (s < 0) { // every slot pinned or busy: no place for this pin now
                m_pinned[size_t(k)] = 0;
                continue;
            }
            clear(s);
            ++m_evictions;
        }
        assign(s, k);
        copies.push_back({idOf(k), s});
    }
    return copies;
}

int VramPlacement::place(ExpertId id, const std::function<bool(int)>& slotBusy, ExpertId* evicted) {
    const int k = key(id);
    if (k < 0) return -1;
    const int have = m_slotOf[size_t(k)];
    if (have >= 0) return m_owner[size_t(have)].ready || (slotBusy && slotBusy(have)) ? -1 : have;
    int s = freeSlot();
    if (s < 0) {
        s = victim(slotBusy);
        if (s < 0) return -1;
        const ExpertId v = idOf(m_owner[size_t(s)].key);
        const double hv = m_heat.heat(v);
        const double hc = m_heat.heat(id);
        if (hc < m_opt.minHeat || (hv > 0 && !(hc > hv * (1.0 + m_opt.margin)))) return -1;
        if (evicted) *evicted = v;
        clear(s);
        ++m_evictions;
    }
    assign(s, k);
    return s;
}

void VramPlacement::markReady(int slot) {
    if (slot < 0 || slot >= slots() || m_owner[size_t(slot)].key < 0) return;
    if (!m_owner[size_t(slot)].ready) ++m_ready;
    m_owner[size_t(slot)].ready = true;
}

std::vector<ExpertId> VramPlacement::resize(int slots, int firstLost) {
    slots = std::max(slots, 0);
    std::vector<ExpertId> left;
    for (int s = std::max(0, std::min(slots, firstLost)); s < this->slots(); ++s) {
        const Slot& o = m_owner[size_t(s)];
        if (o.key < 0) continue;
        if (o.ready) left.push_back(idOf(o.key));
        m_pinned[size_t(o.key)] = 0;
        clear(s);
    }
    m_owner.resize(size_t(slots));
    std::vector<ExpertId> pinnedIds = pins();
    std::sort(pinnedIds.begin(), pinnedIds.end(),
              [&](ExpertId a, ExpertId b) { return m_heat.colder(a, b); });
    for (size_t i = 0; int(pinnedIds.size() - i) > pinCapacity(); ++i)
        m_pinned[size_t(key(pinnedIds[i]))] = 0;
    return left;
}

void VramPlacement::release(int slot) {
    if (slot < 0 || slot >= slots()) return;
    const int k = m_owner[size_t(slot)].key;
    if (k >= 0) m_pinned[size_t(k)] = 0;
    clear(slot);
}

} // namespace coli::tiers
