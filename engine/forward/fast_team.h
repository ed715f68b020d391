#pragma once
// Internal: one thread's view of the OpenMP team that runs a chunk of the Fast forward pass
// (forward_fast.cpp). Every phase of the chunk is executed by all threads of the team, each on
// its share of the work (tokens, output rows, heads, expert rows), with sync() between phases.
// Each output element is computed by exactly one thread in a fixed order, so neither the team size
// nor which thread computed it changes a bit of the result.
#include "forward/spin_barrier.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <utility>

namespace coli {

struct Team {
    int id = 0;   // 0 .. size-1; 0 is the master (the only one that calls the expert cache)
    int size = 1; // threads in the team
    SpinBarrier* barrier = nullptr;
    // The team's claim counter (FastWorkspace::claimed, 0 when the region starts) and this
    // thread's count of the units every phase so far handed out (see Claims).
    std::atomic<int64_t>* claimed = nullptr;
    mutable int64_t claimBase = 0;

    bool master() const { return id == 0; }
    void sync() const {
        if (size > 1) barrier->wait();
    }
    // This thread's contiguous share [first, second) of n units (static; the tokens phases, whose
    // units are few and equal).
    std::pair<int64_t, int64_t> share(int64_t n) const {
        return {n * id / size, n * (id + 1) / size};
    }
    // Output rows are handed out in blocks of kRowBlock: whole tiles of the -r8 formats
    // (quant/formats.h), so a kernel never starts inside a tile.
    static constexpr int64_t kRowBlock = 8;
};

// A phase's units [0, n) handed out to whichever thread asks first, in chunks that shrink as the
// phase ends (guided: a quarter of what is left for two threads, at least minChunk). A static
// split made the faster thread wait at the next barrier for the slower one (a vCPU descheduled,
// one thread's reads slower): 7.5 % of the threads' time at decode, most of it after the
// experts' gate/up (docs/performance.md, "Claimed work"). Which thread computes a unit never
// changes its bits; a phase that consumes rows without a barrier (the down projection, then the
// residual add) must do both inside one claimed chunk.
// Every thread of the team constructs the same sequence of Claims (same n), one per phase: the
// counter only grows, and phase p's units are the counter values [base, base + n) where base is
// the sum of the earlier phases' n. A thread leaves a phase only once the counter reached
// base + n, and a claim never moves it past that, so a thread still in phase p cannot take units
// of phase p + 1 (no barrier needed between two claimed phases for the counter's sake).
class Claims {
public:
    Claims(const Team& team, int64_t n, int64_t minChunk)
        : m_counter(team.claimed), m_base(team.claimBase), m_n(n),
          m_min(std::max<int64_t>(1, minChunk)), m_div(2 * int64_t(team.size)) {
        team.claimBase += n;
        m_single = team.size == 1 || team.claimed == nullptr;
    }
    // The next chunk [first, last) of this phase for the calling thread; false when none is left.
    bool next(int64_t& first, int64_t& last) {
        if (m_single) { // one thread: the whole range at once
            if (m_singleDone || m_n <= 0) return false;
            m_singleDone = true;
            first = 0;
            last = m_n;
            return true;
        }
        int64_t cur = m_counter->load(std::memory_order_relaxed);
        for (;;) {
            const int64_t done = cur - m_base;
            if (done >= m_n) return false;
            const int64_t left = m_n - done;
            const int64_t chunk = std::min(left, std::max(m_min, left / m_div));
            if (m_counter->compare_exchange_weak(cur, cur + chunk, std::memory_order_relaxed)) {
                first = done;
                last = done + chunk;
                return true;
            }
        }
    }

private:
    std::atomic<int64_t>* m_counter;
    int64_t m_base, m_n, m_min, m_div;
    bool m_single = false, m_singleDone = false;
};

// Rows [0, nRows) of a matrix (or of d_model), claimed in blocks of Team::kRowBlock (whole tiles
// of the -r8 formats), at least minBlocks at a time.
class RowClaims {
public:
    RowClaims(const Team& team, int64_t nRows, int64_t minBlocks = 2)
        : m_claims(team, (nRows + Team::kRowBlock - 1) / Team::kRowBlock, minBlocks),
          m_rows(nRows) {}
    bool next(int64_t& r0, int64_t& r1) {
        int64_t b0 = 0, b1 = 0;
        if (!m_claims.next(b0, b1)) return false;
        r0 = b0 * Team::kRowBlock;
        r1 = std::min(m_rows, b1 * Team::kRowBlock);
        return true;
    }

private:
    Claims m_claims;
    int64_t m_rows;
};

} // namespace coli
