#include "forward/spin_barrier.h"

#include <chrono>
#include <cstdlib>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace coli {

namespace {

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    asm volatile("yield" ::: "memory");
#endif
}

int readSpinMicroseconds() {
    if (const char* env = std::getenv("COLI_BARRIER_SPIN_US")) {
        char* end = nullptr;
        const long v = std::strtol(env, &end, 10);
        if (end != env && *end == '\0' && v >= 0 && v <= 100000) return int(v);
    }
    return SpinBarrier::kSpinDefaultMicroseconds;
}

} // namespace

int SpinBarrier::spinMicroseconds() {
    static const int us = readSpinMicroseconds();
    return us;
}

void SpinBarrier::reset(int threads) {
    m_threads = threads < 1 ? 1 : threads;
    m_arrived.store(0, std::memory_order_relaxed);
}

void SpinBarrier::wait() {
    if (m_threads == 1) return;
    const uint32_t gen = m_generation.load(std::memory_order_acquire);
    if (m_arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == uint32_t(m_threads)) {
        // Last to arrive: re-arm, then release the others. A released thread can only arrive
        // again after it saw the new generation, so it sees the count already at 0.
        m_arrived.store(0, std::memory_order_relaxed);
        m_generation.store(gen + 1, std::memory_order_seq_cst);
        if (m_sleepers.load(std::memory_order_seq_cst) > 0) m_generation.notify_all();
        return;
    }
    using Clock = std::chrono::steady_clock;
    const auto limit = std::chrono::microseconds(spinMicroseconds());
    const auto start = Clock::now();
    for (;;) {
        for (int i = 0; i < 32; ++i) {
            if (m_generation.load(std::memory_order_acquire) != gen) return;
            cpuRelax();
        }
        if (Clock::now() - start >= limit) break;
    }
    // Sleep. The sleeper count and the generation are both sequentially consistent: either the
    // last thread sees this sleeper and notifies, or this thread sees the new generation.
    m_sleepers.fetch_add(1, std::memory_order_seq_cst);
    while (m_generation.load(std::memory_order_seq_cst) == gen)
        m_generation.wait(gen, std::memory_order_seq_cst);
    m_sleepers.fetch_sub(1, std::memory_order_relaxed);
}

} // namespace coli
