#pragma once
// Bounded single-producer / single-consumer ring of events (threading contract rule 3).
//
// The engine thread is the only producer, the GUI thread the only consumer. Lock-free: two
// monotonically increasing indices (head written only by the producer, tail only by the
// consumer) and one "wake pending" flag.
//
// Wake-ups: tryPush() returns PushResult::PushedWake exactly when the consumer must be woken,
// i.e. on the transition from "empty as acknowledged by the consumer" to non-empty. The consumer
// acknowledges by calling drain(), which clears the flag *before* reading items, so:
//   - while a wake-up is outstanding (posted, not yet drained) no second one is requested, and
//   - no item can be left in the ring without a wake-up on its way (no lost wake-up): an item
//     published after the consumer's acknowledgement sees the flag cleared and requests a wake.
// A drain may find the ring empty (its items were taken by the previous drain); that is harmless.
//
// Thread-safety: tryPush() from one producer thread only; drain()/empty() from one consumer thread
// only; capacity() from anywhere. T must be default-constructible and move-assignable.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace coli::app {

enum class PushResult {
    Full,       // nothing written: the ring holds capacity() unconsumed items
    Pushed,     // written; a wake-up is already outstanding
    PushedWake, // written; the caller must wake the consumer (once)
};

template <class T> class EventRing {
public:
    explicit EventRing(size_t capacity)
        : m_capacity(capacity), m_slots(std::make_unique<T[]>(capacity)) {}
    EventRing(const EventRing&) = delete;
    EventRing& operator=(const EventRing&) = delete;

    size_t capacity() const { return m_capacity; }

    // Producer only. Moves `item` in on success; leaves it untouched when Full.
    PushResult tryPush(T& item) {
        // Our own index: only this thread writes it, so relaxed reads our own last store.
        const uint64_t head = m_head.load(std::memory_order_relaxed);
        // acquire: pairs with the consumer's release store of m_tail, so the consumer has
        // finished moving out of the slot we are about to overwrite.
        const uint64_t tail = m_tail.load(std::memory_order_acquire);
        if (head - tail >= m_capacity) return PushResult::Full;
        m_slots[head % m_capacity] = std::move(item);
        // release: publishes the slot's contents to the consumer's acquire load of m_head.
        m_head.store(head + 1, std::memory_order_release);
        // acq_rel RMW: release orders our m_head store before the flag in the flag's modification
        // order, so a consumer whose exchange(false) reads our `true` (acquire) also sees the
        // item; acquire makes us see the consumer's clear if it came first, in which case we
        // must wake it. Exactly one of the two orders happens: no lost or duplicate wake-up.
        const bool wasPending = m_wakePending.exchange(true, std::memory_order_acq_rel);
        return wasPending ? PushResult::Pushed : PushResult::PushedWake;
    }

    // Consumer only. Acknowledges the wake-up, then hands every available item to fn(T&&) in
    // order. Returns the number of items consumed.
    template <class Fn> size_t drain(Fn&& fn) {
        // acq_rel RMW: acquire pairs with the producer's release exchange (see tryPush), so every
        // item published before that exchange is visible to the loads of m_head below; release
        // keeps those loads from being hoisted above the clear in the flag's order.
        m_wakePending.exchange(false, std::memory_order_acq_rel);
        size_t n = 0;
        uint64_t tail = m_tail.load(std::memory_order_relaxed); // our own index
        for (;;) {
            // acquire: pairs with the producer's release store of m_head: the slot is complete.
            const uint64_t head = m_head.load(std::memory_order_acquire);
            if (tail == head) break;
            while (tail != head) {
                fn(std::move(m_slots[tail % m_capacity]));
                m_slots[tail % m_capacity] = T{}; // drop payload memory now, on our thread
                ++tail;
                ++n;
                // release: the producer may reuse the slot only after our move-out completed.
                m_tail.store(tail, std::memory_order_release);
            }
        }
        return n;
    }

    // Consumer only (a snapshot: the producer may add items right after).
    bool empty() const {
        return m_head.load(std::memory_order_acquire) == m_tail.load(std::memory_order_relaxed);
    }

private:
    const size_t m_capacity;
    std::unique_ptr<T[]> m_slots;
    // Separate cache lines: the producer writes m_head, the consumer m_tail.
    alignas(64) std::atomic<uint64_t> m_head{0};
    alignas(64) std::atomic<uint64_t> m_tail{0};
    alignas(64) std::atomic<bool> m_wakePending{false};
};

} // namespace coli::app
