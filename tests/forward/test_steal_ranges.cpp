// StealRanges (forward/steal_ranges.h) and Team::forBlockTasks: the task ranges that balance the
// Fast forward pass's decode phases. Deterministic checks of the owner's halving and the thief's
// order on one thread, then real threads (also under ThreadSanitizer, label tsan): every task is
// handed out exactly once over thousands of rounds, a task that is not ready is never stolen, and
// reusing the ranges after a barrier (as every phase does) loses or repeats nothing.
#include "forward/fast_team.h"
#include "forward/spin_barrier.h"
#include "forward/steal_ranges.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace coli {
namespace {

TEST(StealRanges, OwnerTakesHalfOfWhatIsLeftThenNothing) {
    StealRanges ranges(1);
    ranges.open(0, 10, 30); // 20 tasks: 10, 5, 3, 1, 1
    const int64_t expected[][2] = {{10, 20}, {20, 25}, {25, 28}, {28, 29}, {29, 30}};
    for (const auto& e : expected) {
        const StealRanges::Tasks t = ranges.take(0);
        EXPECT_EQ(t.first, e[0]);
        EXPECT_EQ(t.end, e[1]);
    }
    EXPECT_TRUE(ranges.take(0).empty());
    EXPECT_TRUE(ranges.take(0).empty()); // stays empty
}

TEST(StealRanges, ThiefTakesOneTaskFromTheBackOfTheNextNonEmptyRange) {
    StealRanges ranges(3);
    ranges.open(0, 0, 0); // thread 0 has nothing of its own
    ranges.open(1, 0, 0); // nor thread 1
    ranges.open(2, 0, 4); // thread 2 has four tasks
    const StealRanges::Tasks a = ranges.take(0);
    EXPECT_EQ(a.first, 3);
    EXPECT_EQ(a.end, 4);
    const StealRanges::Tasks b = ranges.take(1);
    EXPECT_EQ(b.first, 2);
    EXPECT_EQ(b.end, 3);
    const StealRanges::Tasks own = ranges.take(2); // the owner: half of the two left
    EXPECT_EQ(own.first, 0);
    EXPECT_EQ(own.end, 1);
    // A task that is not ready stays with its owner.
    EXPECT_TRUE(ranges.take(0, [](int64_t task) { return task != 1; }).empty());
    const StealRanges::Tasks last = ranges.take(2);
    EXPECT_EQ(last.first, 1);
    EXPECT_EQ(last.end, 2);
    EXPECT_TRUE(ranges.take(0).empty());
    EXPECT_TRUE(ranges.take(2).empty());
    EXPECT_EQ(ranges.stolen(), 2);
}

// Rounds of `threads` threads, each opening a range of its own (of a different length each round,
// some empty) and taking until nothing is left, then a barrier: counts how often each task was
// handed out, and checks the tasks not ready (multiples of 7, never stolen) went to their owners.
TEST(StealRanges, EveryTaskOnceAcrossThreadsAndRounds) {
    for (int threads : {2, 3, 4}) {
        constexpr int kRounds = 3000, kMaxPerThread = 40;
        StealRanges ranges(threads);
        SpinBarrier barrier(threads);
        std::vector<std::atomic<int>> taken(size_t(threads) * kMaxPerThread);
        std::vector<std::atomic<int>> takenBy(size_t(threads) * kMaxPerThread);
        std::atomic<int> errors{0};
        const auto length = [&](int round, int id) {
            return (round * 7 + id * 13) % kMaxPerThread;
        };
        std::vector<std::thread> team;
        for (int id = 0; id < threads; ++id)
            team.emplace_back([&, id] {
                for (int round = 0; round < kRounds; ++round) {
                    for (int k = id; k < threads * kMaxPerThread; k += threads) {
                        taken[size_t(k)].store(0, std::memory_order_relaxed);
                        takenBy[size_t(k)].store(-1, std::memory_order_relaxed);
                    }
                    barrier.wait();
                    const int64_t first = int64_t(id) * kMaxPerThread;
                    ranges.open(id, first, first + length(round, id));
                    const auto ready = [](int64_t task) { return task % 7 != 0; };
                    for (StealRanges::Tasks t; !(t = ranges.take(id, ready)).empty();)
                        for (int64_t k = t.first; k < t.end; ++k) {
                            taken[size_t(k)].fetch_add(1, std::memory_order_relaxed);
                            takenBy[size_t(k)].store(id, std::memory_order_relaxed);
                        }
                    barrier.wait();
                    // Each thread checks its own range's tasks.
                    for (int64_t k = first; k < first + kMaxPerThread; ++k) {
                        const int expected = k < first + length(round, id) ? 1 : 0;
                        if (taken[size_t(k)].load() != expected) errors.fetch_add(1);
                        if (expected && k % 7 == 0 && takenBy[size_t(k)].load() != id)
                            errors.fetch_add(1);
                    }
                    barrier.wait();
                }
            });
        for (std::thread& t : team)
            t.join();
        EXPECT_EQ(errors.load(), 0) << threads << " threads";
    }
}

// Team::forBlockTasks with stealing covers every block once, as the static split does.
TEST(StealRanges, BlockTasksCoverEveryBlockOnce) {
    constexpr int kThreads = 3, kRounds = 500;
    StealRanges ranges(kThreads);
    SpinBarrier barrier(kThreads);
    std::atomic<int> errors{0};
    std::vector<std::atomic<int>> hits(1000);
    std::vector<std::thread> team;
    for (int id = 0; id < kThreads; ++id)
        team.emplace_back([&, id] {
            Team t{id, kThreads, &barrier};
            t.steal = &ranges;
            for (int round = 0; round < kRounds; ++round) {
                const int64_t blocks = 1 + round % 997, perTask = 1 + round % 5;
                for (int64_t b = id; b < blocks; b += kThreads)
                    hits[size_t(b)].store(0, std::memory_order_relaxed);
                barrier.wait();
                t.forBlockTasks(blocks, perTask, [&](int64_t b0, int64_t b1) {
                    if (b0 < 0 || b1 > blocks || b0 >= b1) errors.fetch_add(1);
                    for (int64_t b = b0; b < b1; ++b)
                        hits[size_t(b)].fetch_add(1, std::memory_order_relaxed);
                });
                barrier.wait();
                for (int64_t b = id; b < blocks; b += kThreads)
                    if (hits[size_t(b)].load() != 1) errors.fetch_add(1);
                barrier.wait();
            }
        });
    for (std::thread& t : team)
        t.join();
    EXPECT_EQ(errors.load(), 0);
}

} // namespace
} // namespace coli
