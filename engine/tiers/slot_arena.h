#pragma once
// The memory of the expert cache's slots (expert_cache.h): one range of virtual addresses
// reserved when the cache is made, slot i at base + i * stride, committed by the first write into
// it (the read that fills it) and returned to the system by release(i). Why: a mapping per slot
// (mmap when a slot is first used, munmap when the budget shrinks) took the process's memory-map
// lock for writing inside the cache's lock, and at decode that write waited for every page fault
// in flight (the reads filling other slots): the compute thread stalled 80-180 us per layer in
// beginLayer and prefetch on the OLMoE shape (docs/performance.md). Committing and releasing pages
// within one mapping (a fault, madvise MADV_DONTNEED) only reads that lock.
// Not advised MADV_HUGEPAGE (the resident weights are: model/weight_arena.h): measured twice on
// a VM, slots that are reused decode 8-27 % faster with huge pages, but a fresh model at a 100 %
// budget 14 % slower, since there every read fills a fresh slot and faults 2 MiB pages that
// the host must back again; and khugepaged would fill the holes that release() leaves, so the
// budget would no longer bound the memory held (docs/performance.md, 2026-12-06).
// Where the reservation cannot be made (a strict overcommit policy refuses MAP_NORESERVE ranges
// larger than memory), each slot is its own mapping as before.
// Thread-safety: none; the cache calls it under its lock.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace coli::tiers {

class SlotArena {
public:
    // Room for `slots` slots of `bytes` bytes each (bytes > 0). Nothing is committed yet.
    // reserve = false: a mapping per slot from the start (the fallback; tests).
    SlotArena(size_t slots, uint64_t bytes, bool reserve = true);
    ~SlotArena();
    SlotArena(const SlotArena&) = delete;
    SlotArena& operator=(const SlotArena&) = delete;

    // Slot i's memory (i < slots), page-aligned (so O_DIRECT-aligned); null when the fallback
    // mapping fails (out of memory). Committed as it is written.
    uint8_t* take(size_t i);
    // Returns slot i's pages to the system (its contents are lost; take(i) gives it again).
    void release(size_t i);
    // Whether the one reserved range is in use (false: a mapping per slot).
    bool reserved() const { return m_base != nullptr; }

private:
    uint64_t m_stride; // a slot's bytes rounded up to the page size
    size_t m_slots;
    uint8_t* m_base = nullptr;        // the reserved range, 2 MiB-aligned; null: fallback
    uint64_t m_mapped = 0;            // bytes of the mapping behind m_base (alignment included)
    uint8_t* m_mapping = nullptr;     // where that mapping starts
    std::vector<uint8_t*> m_fallback; // [slots] per-slot mappings when not reserved
};

} // namespace coli::tiers
