// The weight arena (weight_arena.h).
#include "model/weight_arena.h"

#include <sys/mman.h>

#include <iterator>
#include <map>
#include <mutex>

namespace coli {

namespace {

constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kChunk = size_t{64} << 20;
constexpr size_t kAlign = 64;

struct Chunk {
    size_t bytes = 0; // mapped
    size_t used = 0;  // bump offset
    size_t live = 0;  // allocations not yet freed
};

std::mutex g_mutex;
std::map<uintptr_t, Chunk> g_chunks; // by base address
uintptr_t g_current = 0;             // the chunk new requests bump from (0: none)

// An anonymous mapping of `bytes` (a multiple of kHugePage) at a 2 MiB boundary, advised for
// transparent huge pages; 0 when refused.
uintptr_t mapAligned(size_t bytes) {
    void* p = ::mmap(nullptr, bytes + kHugePage, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return 0;
    const uintptr_t raw = reinterpret_cast<uintptr_t>(p);
    const uintptr_t base = (raw + kHugePage - 1) & ~(kHugePage - 1);
    if (base > raw) ::munmap(p, base - raw);
    const uintptr_t end = raw + bytes + kHugePage;
    if (end > base + bytes) ::munmap(reinterpret_cast<void*>(base + bytes), end - base - bytes);
    // Refused where transparent huge pages are off: the mapping works with 4 KiB pages.
    (void)::madvise(reinterpret_cast<void*>(base), bytes, MADV_HUGEPAGE);
    return base;
}

} // namespace

void* weightAlloc(size_t bytes) {
    if (bytes == 0) return nullptr;
    const size_t need = (bytes + kAlign - 1) / kAlign * kAlign;
    std::lock_guard lock(g_mutex);
    if (need > kChunk) { // a mapping of its own
        const size_t mapped = (need + kHugePage - 1) / kHugePage * kHugePage;
        const uintptr_t base = mapAligned(mapped);
        if (!base) return nullptr;
        g_chunks[base] = Chunk{mapped, need, 1};
        return reinterpret_cast<void*>(base);
    }
    auto it = g_current ? g_chunks.find(g_current) : g_chunks.end();
    if (it == g_chunks.end() || it->second.bytes - it->second.used < need) {
        const uintptr_t base = mapAligned(kChunk);
        if (!base) return nullptr;
        it = g_chunks.emplace(base, Chunk{kChunk, 0, 0}).first;
        g_current = base;
    }
    void* p = reinterpret_cast<void*>(it->first + it->second.used);
    it->second.used += need;
    ++it->second.live;
    return p; // fresh anonymous pages are zero; memory is never reused inside a chunk
}

void weightFree(void* p, size_t /*bytes*/) {
    if (!p) return;
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    std::lock_guard lock(g_mutex);
    auto it = g_chunks.upper_bound(a);
    if (it == g_chunks.begin()) return; // not ours: nothing to do (never happens)
    --it;
    if (a >= it->first + it->second.bytes || --it->second.live > 0) return;
    ::munmap(reinterpret_cast<void*>(it->first), it->second.bytes);
    if (g_current == it->first) g_current = 0;
    g_chunks.erase(it);
}

WeightArenaStats weightArenaStats() {
    std::lock_guard lock(g_mutex);
    WeightArenaStats s;
    for (const auto& [base, c] : g_chunks) {
        ++s.chunks;
        s.mappedBytes += c.bytes;
    }
    return s;
}

} // namespace coli
