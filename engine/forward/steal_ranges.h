#pragma once
// Dynamic balance for one phase of the Fast forward pass (fast_team.h): the phase's work is a list
// of tasks numbered 0..T-1, each thread owns a contiguous range of them (the static split, so
// each thread still streams its own rows), takes its own tasks from the front, half of what is
// left at a time, and once its range is empty takes the other threads' remaining tasks from the
// back, one at a time. Taking half keeps the calls per phase logarithmic (each take is one kernel
// call, which prepares its activations again) while what the owner holds never exceeds what is
// left for a thief, so the two meet within about one task (a thief taking half as well measured
// the same). A static split left the faster thread waiting at the phase's barrier: at decode on
// the OLMoE shape (two threads) 0.7-2.3 ms per token at the routed experts' barrier and 0.2-0.7
// ms at the q/k/v projections', of 25-40 ms (docs/performance.md, "the decode's phases balanced
// by work stealing").
// Which thread computes a task never changes its bits: every output element is still computed by
// one thread with the kernels' fixed order.
// Each range is one 64-bit word (front in the low half, end in the high half), changed by
// compare-and-swap: the owner raises the front (its own cache line: no contention until a thief
// comes), a thief lowers the end. The work-stealing deque of Arora, Blumofe and Plaxton,
// "Thread scheduling for multiprogrammed multiprocessors" (1998), reduced to ranges of indices.
#include <atomic>
#include <cstdint>
#include <memory>

namespace coli {

class StealRanges {
public:
    // Room for `threads` ranges (>= 1), all empty. Not thread-safe.
    explicit StealRanges(int threads = 1);
    void resize(int threads);
    int threads() const { return m_threads; }
    // Tasks taken by threads other than their owners since construction (tests, diagnostics).
    // Thread-safe; exact once the phases that took them ended.
    int64_t stolen() const;

    // Thread `id` opens its range [first, end) of the phase's tasks (0 <= first <= end < 2^31)
    // before it takes any. Every range must be empty from the previous use (each use runs until
    // take() returns empty on every thread, then a barrier): a thief that reads a range before its
    // owner opened it sees it empty and takes nothing from it, which is safe (the owner does it).
    void open(int id, int64_t first, int64_t end);
    // Tasks [first, end) for thread `id` to compute in order.
    struct Tasks {
        int64_t first = 0, end = 0;
        bool empty() const { return first >= end; }
    };
    // The next tasks for thread `id`: half of what is left of its own range (at least one task)
    // from the front, else one task from the back of another thread's range (id + 1, id + 2, ...
    // in turn) that satisfies ready(task); empty when none is left that is ready (the caller then
    // goes to the phase's barrier). Thread-safe: every task is handed to exactly one thread.
    template <class Ready> Tasks take(int id, Ready&& ready);
    Tasks take(int id) {
        return take(id, [](int64_t) { return true; });
    }

private:
    struct alignas(64) Range {
        std::atomic<uint64_t> word{0}; // front | end << 32
        std::atomic<int64_t> stolen{0};
    };
    static uint64_t pack(int64_t front, int64_t end) {
        return uint64_t(front) | uint64_t(end) << 32;
    }
    Tasks takeOwn(int id);
    template <class Ready> Tasks steal(int victim, Ready& ready);

    std::unique_ptr<Range[]> m_ranges;
    int m_threads = 1;
};

inline StealRanges::Tasks StealRanges::takeOwn(int id) {
    std::atomic<uint64_t>& word = m_ranges[id].word;
    uint64_t v = word.load(std::memory_order_acquire);
    for (;;) {
        const int64_t front = int64_t(v & 0xffffffffu), end = int64_t(v >> 32);
        if (front >= end) return {};
        const int64_t n = (end - front + 1) / 2;
        if (word.compare_exchange_weak(v, pack(front + n, end), std::memory_order_acq_rel,
                                       std::memory_order_acquire))
            return {front, front + n};
    }
}

template <class Ready> StealRanges::Tasks StealRanges::steal(int victim, Ready& ready) {
    std::atomic<uint64_t>& word = m_ranges[victim].word;
    uint64_t v = word.load(std::memory_order_acquire);
    for (;;) {
        const int64_t front = int64_t(v & 0xffffffffu), end = int64_t(v >> 32);
        if (front >= end || !ready(end - 1)) return {};
        if (word.compare_exchange_weak(v, pack(front, end - 1), std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
            // The thief holds the line after its compare-and-swap: counting here is cheap.
            m_ranges[victim].stolen.fetch_add(1, std::memory_order_relaxed);
            return {end - 1, end};
        }
    }
}

template <class Ready> StealRanges::Tasks StealRanges::take(int id, Ready&& ready) {
    if (const Tasks t = takeOwn(id); !t.empty()) return t;
    for (int k = 1; k < m_threads; ++k)
        if (const Tasks t = steal((id + k) % m_threads, ready); !t.empty()) return t;
    return {};
}

} // namespace coli
