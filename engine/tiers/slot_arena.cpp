#include "tiers/slot_arena.h"

#include <sys/mman.h>
#include <unistd.h>

namespace coli::tiers {

namespace {
constexpr uint64_t kHugePage = 2u << 20;
} // namespace

SlotArena::SlotArena(size_t slots, uint64_t bytes, bool reserve) : m_slots(slots) {
    const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE) > 0 ? ::sysconf(_SC_PAGESIZE) : 4096);
    m_stride = (bytes + page - 1) / page * page;
    const uint64_t want = m_stride * slots;
    if (want > 0 && reserve) {
        // Aligned to 2 MiB (one huge page of slack), as the weight arena: not advised
        // MADV_HUGEPAGE, see the header.
        void* p = ::mmap(nullptr, want + kHugePage, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p != MAP_FAILED) {
            m_mapping = static_cast<uint8_t*>(p);
            m_mapped = want + kHugePage;
            const uintptr_t a = (reinterpret_cast<uintptr_t>(p) + kHugePage - 1) & ~(kHugePage - 1);
            m_base = reinterpret_cast<uint8_t*>(a);
        }
    }
    if (!m_base) m_fallback.assign(slots, nullptr);
}

SlotArena::~SlotArena() {
    if (m_mapping) ::munmap(m_mapping, m_mapped);
    for (uint8_t* p : m_fallback)
        if (p) ::munmap(p, m_stride);
}

uint8_t* SlotArena::take(size_t i) {
    if (i >= m_slots) return nullptr;
    if (m_base) return m_base + i * m_stride;
    if (!m_fallback[i]) {
        void* p =
            ::mmap(nullptr, m_stride, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        m_fallback[i] = p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
    }
    return m_fallback[i];
}

void SlotArena::release(size_t i) {
    if (i >= m_slots) return;
    if (m_base) {
        (void)::madvise(m_base + i * m_stride, m_stride, MADV_DONTNEED);
    } else if (m_fallback[i]) {
        ::munmap(m_fallback[i], m_stride);
        m_fallback[i] = nullptr;
    }
}

} // namespace coli::tiers
