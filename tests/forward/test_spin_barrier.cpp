// SpinBarrier (forward/spin_barrier.h): the barrier between the Fast forward pass's phases.
// Each round every thread writes its own slot, meets the others at the barrier, then checks every
// slot holds this round's value (what another thread wrote before the barrier is visible after
// it), and meets them again before the next round overwrites the slots. Run with spin bounds that
// force the sleeping path (0 us) and the spinning path; also under ThreadSanitizer (label tsan).
#include "forward/spin_barrier.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

// Rounds of write / wait / check / wait with `threads` threads; returns the mismatches seen.
int runRounds(coli::SpinBarrier& barrier, int threads, int rounds) {
    std::vector<int> slots(size_t(threads), -1);
    std::atomic<int> mismatches{0};
    std::vector<std::thread> team;
    for (int id = 0; id < threads; ++id)
        team.emplace_back([&, id] {
            for (int r = 0; r < rounds; ++r) {
                slots[size_t(id)] = r * threads + id;
                barrier.wait();
                for (int j = 0; j < threads; ++j)
                    if (slots[size_t(j)] != r * threads + j) mismatches.fetch_add(1);
                barrier.wait();
            }
        });
    for (std::thread& t : team)
        t.join();
    return mismatches.load();
}

TEST(SpinBarrier, EveryWriteBeforeTheBarrierIsSeenAfterIt) {
    for (int threads : {1, 2, 3, 4}) {
        coli::SpinBarrier barrier(threads);
        EXPECT_EQ(runRounds(barrier, threads, 2000), 0) << threads << " threads";
    }
}

TEST(SpinBarrier, ResetChangesTheTeamSize) {
    coli::SpinBarrier barrier(4);
    EXPECT_EQ(runRounds(barrier, 4, 200), 0);
    barrier.reset(2);
    EXPECT_EQ(barrier.threads(), 2);
    EXPECT_EQ(runRounds(barrier, 2, 200), 0);
    barrier.reset(0); // clamped to one thread: wait() returns at once
    EXPECT_EQ(barrier.threads(), 1);
    barrier.wait();
}

// More threads than cores: partners are preempted, so waits outlast the spin and sleep.
TEST(SpinBarrier, OversubscribedTeamsStillMeet) {
    coli::SpinBarrier barrier(8);
    EXPECT_EQ(runRounds(barrier, 8, 300), 0);
}

} // namespace
