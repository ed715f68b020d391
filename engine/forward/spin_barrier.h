#pragma once
// The barrier between the phases of the Fast forward pass (forward_fast.cpp runs a whole chunk of
// tokens inside one OpenMP parallel region and synchronises its threads here, dozens of times per
// layer). OpenMP's own barrier follows OMP_WAIT_POLICY: with "passive" (the app's setting, and
// coli's on a busy machine) every barrier puts the early threads to sleep in the kernel and
// wakes them with a system call, tens of microseconds on a VM, which at one barrier per matrix
// cost half of the decode time. This one spins for a bounded time first (kSpinDefault, at most
// COLI_BARRIER_SPIN_US microseconds from the environment), then sleeps on the generation word
// (std::atomic::wait: a futex on Linux), so a thread whose partner was preempted by another
// program gives its core back after the bound instead of spinning through the time slice.
// Centralised counter with a generation number (sense reversal), as in Mellor-Crummey and Scott,
// "Algorithms for scalable synchronization on shared-memory multiprocessors" (1991).
#include <atomic>
#include <cstdint>

namespace coli {

class SpinBarrier {
public:
    static constexpr int kSpinDefaultMicroseconds = 50;

    explicit SpinBarrier(int threads = 1) : m_threads(threads) {}
    // Sets the number of threads that meet at the barrier (>= 1). Not thread-safe: call when no
    // thread is waiting.
    void reset(int threads);
    int threads() const { return m_threads; }
    // Returns once all `threads()` threads have called it; everything each thread wrote before its
    // call is visible to every thread after it (acquire/release on the generation word).
    // Thread-safe (it is the point); a thread must not call it again before the others left.
    void wait();
    // The spin bound in microseconds: COLI_BARRIER_SPIN_US (0..100000) when set, else
    // kSpinDefaultMicroseconds. Read once per process.
    static int spinMicroseconds();

private:
    alignas(64) std::atomic<uint32_t> m_arrived{0};
    alignas(64) std::atomic<uint32_t> m_generation{0};
    std::atomic<uint32_t> m_sleepers{0};
    int m_threads;
};

} // namespace coli
