#pragma once
// Internal: one thread's view of the OpenMP team that runs a chunk of the Fast forward pass
// (forward_fast.cpp). Every phase of the chunk is executed by all threads of the team, each on
// its share of the work (tokens, output rows, heads, expert rows), with sync() between phases.
// Each output element is computed by exactly one thread in a fixed order, so the team size never
// changes a bit of the result.
#include "forward/phase_times.h"
#include "forward/spin_barrier.h"
#include "forward/steal_ranges.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <utility>

namespace coli {

struct Team {
    int id = 0;   // 0 .. size-1; 0 is the master (the only one that calls the expert cache)
    int size = 1; // threads in the team
    SpinBarrier* barrier = nullptr;
    // The team's task ranges (steal_ranges.h) for phases balanced by stealing; null: static
    // shares only (a single thread, tests that run the threads' shares one after another).
    StealRanges* steal = nullptr;

    // This thread's row of a PhaseTimes (phase_times.h) while the chunk is timed, else null;
    // phaseStart: the end of this thread's previous barrier (or the chunk's start).
    PhaseCell* phaseCells = nullptr;
    mutable std::chrono::steady_clock::time_point phaseStart{};

    bool master() const { return id == 0; }
    // The barrier that ends phase p (timed when phaseCells is set).
    void sync(Phase p) const {
        if (phaseCells) [[unlikely]] {
            timedSync(p);
            return;
        }
        if (size > 1) barrier->wait();
    }
    // Ends the chunk's last phase, which no barrier follows (timed when phaseCells is set).
    void endPhase(Phase p) const {
        if (!phaseCells) return;
        PhaseCell& cell = phaseCells[size_t(p)];
        cell.workSeconds += secondsSince(phaseStart);
        ++cell.count;
    }
    // This thread's contiguous share [first, second) of n units (static: the same split for the
    // same n and team size, so each thread streams one range of rows).
    std::pair<int64_t, int64_t> share(int64_t n) const {
        return {n * id / size, n * (id + 1) / size};
    }
    // A causal phase's (token, unit) pairs, each unit of a token (a head, or heads) computed by
    // one thread: at prefill (n > 1) every size-th token from id with all its units, since token
    // t attends over pos0 + t + 1 positions and contiguous shares would leave the last thread
    // the longest rows (and each thread then writes whole rows); at decode the one token's units
    // split (share). Loop: t = first; t < end; t += step, then units [unit0, unit1).
    struct CausalShare {
        int64_t first, end, step;
        int64_t unit0, unit1;
    };
    CausalShare shareCausal(int64_t n, int64_t unitsPerToken) const {
        if (n > 1) return {id, n, size, 0, unitsPerToken};
        const auto [u0, u1] = share(unitsPerToken);
        return {0, 1, 1, u0, u1};
    }
    // The share of n items counted in blocks of `block` (the last block may be short).
    std::pair<int64_t, int64_t> shareBlocks(int64_t n, int64_t block) const {
        const auto [b0, b1] = share((n + block - 1) / block);
        return {std::min(n, b0 * block), std::min(n, b1 * block)};
    }
    // This thread's output rows of a matrix with n rows: blocks of kRowBlock. Every phase that
    // splits d_model (or vocab) rows uses this one split, because some consume the rows another
    // wrote without a barrier between them (e.g. the down projections, then the residual add).
    static constexpr int64_t kRowBlock = 8; // whole tiles of the -r8 formats (quant/formats.h)
    std::pair<int64_t, int64_t> shareRows(int64_t n) const { return shareBlocks(n, kRowBlock); }

    // Blocks [0, blocks) of a rows phase, f(b0, b1) for each part this thread computes: with
    // `steal` set and perTask > 0, tasks of perTask blocks, its share of them, then what it can
    // take of the others' (StealRanges); else its share of the blocks (share's split). Either way
    // every block is computed once, so the phase's bits do not depend on the split. The phase
    // must end with a barrier before anything reads the rows, and every thread must call it.
    template <class F> void forBlockTasks(int64_t blocks, int64_t perTask, F&& f) const {
        if (!steal || size == 1 || perTask <= 0) {
            const auto [b0, b1] = share(blocks);
            if (b0 < b1) f(b0, b1);
            return;
        }
        const int64_t tasks = (blocks + perTask - 1) / perTask;
        const auto [t0, t1] = share(tasks);
        steal->open(id, t0, t1);
        for (StealRanges::Tasks t; !(t = steal->take(id)).empty();)
            f(t.first * perTask, std::min(blocks, t.end * perTask));
    }

private:
    static double secondsSince(std::chrono::steady_clock::time_point t) {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    }
    void timedSync(Phase p) const {
        PhaseCell& cell = phaseCells[size_t(p)];
        const auto arrived = std::chrono::steady_clock::now();
        cell.workSeconds += std::chrono::duration<double>(arrived - phaseStart).count();
        if (size > 1) barrier->wait();
        phaseStart = std::chrono::steady_clock::now();
        cell.waitSeconds += std::chrono::duration<double>(phaseStart - arrived).count();
        ++cell.count;
    }
};

} // namespace coli
