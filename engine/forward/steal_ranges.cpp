#include "forward/steal_ranges.h"

namespace coli {

StealRanges::StealRanges(int threads) {
    resize(threads);
}

void StealRanges::resize(int threads) {
    m_threads = threads < 1 ? 1 : threads;
    m_ranges = std::make_unique<Range[]>(size_t(m_threads));
}

int64_t StealRanges::stolen() const {
    int64_t n = 0;
    for (int i = 0; i < m_threads; ++i)
        n += m_ranges[i].stolen.load(std::memory_order_relaxed);
    return n;
}

void StealRanges::open(int id, int64_t first, int64_t end) {
    // Release: a thief that reads the new range (acquire) also sees what the owner wrote before
    // opening it (e.g. the tasks' inputs it prepared).
    m_ranges[id].word.store(pack(first, end), std::memory_order_release);
}

} // namespace coli
