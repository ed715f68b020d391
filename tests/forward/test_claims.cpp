// Claims (forward/fast_team.h): a phase's units handed to whichever thread of the team asks first.
// Threads run many consecutive claimed phases of different sizes WITHOUT a barrier between them
// (the counter's own guarantee: a thread still finishing phase p never takes units of p + 1).
// Every unit of every phase must be taken exactly once, in chunks inside the phase and at least
// minChunk long (except a phase's last). Also under ThreadSanitizer (label tsan); run it with
// --gtest_repeat for stress.
#include "forward/fast_team.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace {

struct Phase {
    int64_t n;
    int64_t minChunk;
};

std::vector<Phase> phases(int count, uint32_t seed) {
    std::vector<Phase> out;
    uint32_t s = seed;
    for (int i = 0; i < count; ++i) {
        s = s * 1664525u + 1013904223u;
        const int64_t n = (s >> 8) % 300; // 0 .. 299 units, empty phases included
        out.push_back({n, 1 + int64_t((s >> 4) % 5)});
    }
    return out;
}

// Runs the phases with `threads` threads; taken[p][u] counts how often unit u of phase p was taken.
// Returns the number of malformed chunks (outside the phase, empty, or short but not the last).
int runPhases(const std::vector<Phase>& ps, int threads,
              std::vector<std::vector<std::atomic<int>>>& taken) {
    coli::SpinBarrier barrier(threads);
    std::atomic<int64_t> counter{0};
    std::atomic<int> bad{0};
    std::vector<std::thread> team;
    for (int id = 0; id < threads; ++id)
        team.emplace_back([&, id] {
            coli::Team t;
            t.id = id;
            t.size = threads;
            t.barrier = &barrier;
            t.claimed = &counter;
            barrier.wait(); // start together, so that the threads' phases overlap
            for (size_t p = 0; p < ps.size(); ++p) {
                coli::Claims claims(t, ps[p].n, ps[p].minChunk);
                for (int64_t a, b; claims.next(a, b);) {
                    if (a < 0 || b > ps[p].n || b <= a || (b - a < ps[p].minChunk && b != ps[p].n))
                        bad.fetch_add(1);
                    for (int64_t u = std::max<int64_t>(a, 0); u < std::min(b, ps[p].n); ++u)
                        taken[p][size_t(u)].fetch_add(1, std::memory_order_relaxed);
                }
            }
        });
    for (std::thread& th : team)
        th.join();
    return bad.load();
}

void expectEachUnitOnce(const std::vector<Phase>& ps, int threads) {
    std::vector<std::vector<std::atomic<int>>> taken(ps.size());
    for (size_t p = 0; p < ps.size(); ++p)
        taken[p] = std::vector<std::atomic<int>>(size_t(ps[p].n));
    ASSERT_EQ(runPhases(ps, threads, taken), 0) << threads << " threads: malformed chunks";
    for (size_t p = 0; p < ps.size(); ++p)
        for (int64_t u = 0; u < ps[p].n; ++u)
            ASSERT_EQ(taken[p][size_t(u)].load(), 1)
                << threads << " threads, phase " << p << " (" << ps[p].n << " units), unit " << u;
}

} // namespace

TEST(Claims, EveryUnitOnceAcrossPhasesWithoutBarriers) {
    for (int threads : {1, 2, 3, 4})
        expectEachUnitOnce(phases(400, 7u + uint32_t(threads)), threads);
}

TEST(Claims, ChunksShrinkTowardsThePhaseEnd) {
    // One thread of a team of two takes everything (the other never asks): chunks are a quarter
    // of what is left, at least minChunk, and tile the range in order.
    coli::SpinBarrier barrier(2);
    std::atomic<int64_t> counter{0};
    coli::Team t;
    t.size = 2;
    t.barrier = &barrier;
    t.claimed = &counter;
    coli::Claims claims(t, 100, 4);
    std::vector<int64_t> sizes;
    int64_t expectFirst = 0;
    for (int64_t a, b; claims.next(a, b);) {
        EXPECT_EQ(a, expectFirst);
        sizes.push_back(b - a);
        expectFirst = b;
    }
    EXPECT_EQ(expectFirst, 100);
    ASSERT_GE(sizes.size(), 3u);
    EXPECT_EQ(sizes[0], 25); // 100 / 4
    EXPECT_EQ(sizes[1], 18); // 75 / 4
    for (size_t i = 1; i < sizes.size(); ++i)
        EXPECT_LE(sizes[i], sizes[i - 1]);
    // The next phase starts where this one ended, whoever constructs it.
    coli::Claims next(t, 10, 1);
    int64_t a = -1, b = -1;
    ASSERT_TRUE(next.next(a, b));
    EXPECT_EQ(a, 0);
}

TEST(Claims, RowClaimsAreWholeTilesClippedToTheRows) {
    for (int threads : {1, 2, 3}) {
        coli::SpinBarrier barrier(threads);
        std::atomic<int64_t> counter{0};
        std::vector<std::atomic<int>> rows(1003);
        std::atomic<int> bad{0};
        std::vector<std::thread> team;
        for (int id = 0; id < threads; ++id)
            team.emplace_back([&, id] {
                coli::Team t;
                t.id = id;
                t.size = threads;
                t.barrier = &barrier;
                t.claimed = &counter;
                barrier.wait();
                coli::RowClaims claims(t, 1003);
                for (int64_t r0, r1; claims.next(r0, r1);) {
                    if (r0 % coli::Team::kRowBlock != 0 || r1 > 1003 || r1 <= r0) bad.fetch_add(1);
                    for (int64_t r = r0; r < r1; ++r)
                        rows[size_t(r)].fetch_add(1);
                }
            });
        for (std::thread& th : team)
            th.join();
        EXPECT_EQ(bad.load(), 0);
        for (size_t r = 0; r < rows.size(); ++r)
            ASSERT_EQ(rows[r].load(), 1) << threads << " threads, row " << r;
    }
}
