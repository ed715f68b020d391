#pragma once
// Memory for the quantised weights a model keeps in RAM (Matrix::q): anonymous mappings of 64 MiB
// aligned to 2 MiB and advised MADV_HUGEPAGE, handed out in order, 64-byte aligned. Why: a
// decode step streams every weight once; with 4 KiB pages each one costs a TLB walk, and on a VM
// a nested one. Measured on a 2-core Xeon VM (docs/performance.md, "Which memory"): one thread
// streams 2 GiB at 12-13 GB/s on 4 KiB pages and 17 GB/s on transparent huge pages. Separate
// allocations of 1-4 MiB per matrix (malloc's own mappings) can hold almost no aligned 2 MiB
// page, so the matrices share chunks here.
// A chunk is unmapped when the last allocation in it is freed (a model's weights are freed
// together when it unloads). A request larger than a chunk gets a mapping of its own.
// Where the kernel has no transparent huge pages ("never") the advice is refused and the memory
// works as 4 KiB pages: nothing else changes.
// Thread-safety: weightAlloc / weightFree are thread-safe (one mutex; called at load and unload).
#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace coli {

// `bytes` of zero-initialised memory, 64-byte aligned; nullptr when the system refuses the
// mapping (out of memory or address space). bytes 0 gives nullptr.
void* weightAlloc(size_t bytes);
// Returns memory from weightAlloc(bytes) (the same bytes); nullptr is ignored.
void weightFree(void* p, size_t bytes);

// Statistics for tests: chunks mapped now and bytes of them.
struct WeightArenaStats {
    size_t chunks = 0;
    size_t mappedBytes = 0;
};
WeightArenaStats weightArenaStats();

// std::allocator's interface over weightAlloc; throws std::bad_alloc when it returns nullptr for
// a non-zero size (as std::allocator does).
template <typename T> struct WeightAllocator {
    using value_type = T;
    WeightAllocator() noexcept = default;
    template <typename U> WeightAllocator(const WeightAllocator<U>&) noexcept {}
    T* allocate(size_t n) {
        if (n == 0) return nullptr;
        void* p = weightAlloc(n * sizeof(T));
        if (!p) throw std::bad_alloc();
        return static_cast<T*>(p);
    }
    void deallocate(T* p, size_t n) noexcept { weightFree(p, n * sizeof(T)); }
    template <typename U> bool operator==(const WeightAllocator<U>&) const noexcept { return true; }
};

// The bytes of a quantised matrix (Matrix::q).
using WeightBytes = std::vector<uint8_t, WeightAllocator<uint8_t>>;

} // namespace coli
