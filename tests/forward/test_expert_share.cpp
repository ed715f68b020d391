// The decode form of the routed experts (forward/fast_ffn.h): expertSteal, the experts as tasks
// balanced by stealing, must give the bytes of the two-phase form (gateUpShare, then downShare)
// for every team size, with quantised (int4 and int8, plain and -r8 tiles) and f32 weights, and
// an item with a wider MLP (a shared expert). First without stealing, the threads' tasks run one
// after another on this thread; then with real threads and stealing over many rounds (which
// thread computes a down chunk, and when, changes from round to round): also under
// ThreadSanitizer (label tsan).
#include "forward/fast_ffn.h"
#include "forward/spin_barrier.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

namespace coli {
namespace {

constexpr int kModel = 128, kFfn = 192;
// Down tasks of 24 rows: five per item and a short last one (the test's matrices are too small
// for downChunkRows' 64 KiB to split them).
constexpr int kDownRows = 24;

struct Experts {
    std::vector<SwiGluWeights> w;
    std::vector<float> x;           // [1, d_model], the token
    QuantisedRows qin, qact, qwide; // its quantised copies; the acts (qwide: the wide item's)
    std::vector<float> g, u, y;     // the items' [ffn] blocks x2, [items, d_model]
    std::vector<FfnItem> items;
};

Matrix randomMatrix(int rows, int cols, bool quantised, quant::WeightFormat fmt,
                    std::mt19937& rng) {
    std::normal_distribution<float> normal(0.0f, 0.1f);
    std::vector<float> f(size_t(rows) * size_t(cols));
    for (float& v : f)
        v = normal(rng);
    Matrix m;
    m.rows = rows;
    m.cols = cols;
    if (!quantised) {
        m.data = std::move(f);
        return m;
    }
    m.qfmt = fmt;
    m.q.resize(size_t(rows) * quant::rowBytes(fmt, cols));
    EXPECT_TRUE(quant::quantiseRows(fmt, f.data(), rows, cols, m.q.data()).isOk());
    return m;
}

// `count` experts of kFfn, then (wideLast) one more of 2 * kFfn, as a shared expert would be.
Experts makeExperts(int count, bool wideLast, bool quantised, quant::WeightFormat fmt,
                    uint32_t seed) {
    std::mt19937 rng(seed);
    Experts e;
    const int total = count + (wideLast ? 1 : 0);
    for (int i = 0; i < total; ++i) {
        const int ffn = i < count ? kFfn : 2 * kFfn;
        SwiGluWeights w;
        w.gate = randomMatrix(ffn, kModel, quantised, fmt, rng);
        w.up = randomMatrix(ffn, kModel, quantised, fmt, rng);
        w.down = randomMatrix(kModel, ffn, quantised, fmt, rng);
        e.w.push_back(std::move(w));
    }
    std::normal_distribution<float> normal(0.0f, 1.0f);
    e.x.resize(kModel);
    for (float& v : e.x)
        v = normal(rng);
    e.qin.allocate(1, kModel);
    e.qin.quantiseRow(kGroup32 | kGroup64, e.x.data(), kModel, 0);
    e.qact.allocate(count, kFfn);
    e.qwide.allocate(1, 2 * kFfn);
    e.g.assign(size_t(count + 2) * kFfn, 0.0f);
    e.u.assign(size_t(count + 2) * kFfn, 0.0f);
    e.y.assign(size_t(total) * kModel, 0.0f);
    for (int i = 0; i < total; ++i) {
        FfnItem it;
        it.w = e.w[size_t(i)];
        it.in = e.qin.input(e.x.data(), 0, 1, kModel);
        it.cnt = 1;
        it.g = e.g.data() + size_t(i) * kFfn;
        it.u = e.u.data() + size_t(i) * kFfn;
        it.act = i < count ? &e.qact : &e.qwide;
        it.actRow = i < count ? i : 0;
        it.y = e.y.data() + size_t(i) * kModel;
        e.items.push_back(it);
    }
    return e;
}

struct Case {
    bool quantised;
    quant::WeightFormat fmt;
};
const Case kCases[] = {{true, quant::WeightFormat::Q4_G64_R8},
                       {true, quant::WeightFormat::Q8_G64_R8},
                       {true, quant::WeightFormat::Q4_G32},
                       {true, quant::WeightFormat::Q8_G32},
                       {false, quant::WeightFormat::Q8_G32}};

std::string describe(const Case& c, int count, bool wide, int threads) {
    return std::string(c.quantised ? "quantised " : "f32 ") + std::to_string(int(c.fmt)) + ", " +
           std::to_string(count) + (wide ? " + wide" : "") + " items, " + std::to_string(threads) +
           " threads";
}

// The two-phase form's outputs, the reference.
std::vector<float> twoPhase(const Case& c, int count, bool wide, int threads) {
    Experts e = makeExperts(count, wide, c.quantised, c.fmt, 7);
    for (int id = 0; id < threads; ++id)
        gateUpShare(Team{id, threads, nullptr}, e.items);
    for (int id = 0; id < threads; ++id)
        downShare(Team{id, threads, nullptr}, e.items, kModel);
    return e.y;
}

TEST(ExpertSteal, OwnTasksOnlyEqualTheTwoPhaseForm) {
    for (const Case& c : kCases)
        for (int threads : {1, 2, 3, 4})
            for (const auto& [count, wide] : {std::pair{4, false}, {8, true}, {1, false}}) {
                const std::vector<float> expected = twoPhase(c, count, wide, threads);
                Experts e = makeExperts(count, wide, c.quantised, c.fmt, 7);
                auto actDone = std::make_unique<std::atomic<uint32_t>[]>(e.items.size());
                // Any order of the threads: without stealing each computes its own items, and
                // its down chunks follow its own gate/up.
                for (int id = threads - 1; id >= 0; --id)
                    expertSteal(Team{id, threads, nullptr}, e.items, kModel,
                                {actDone.get(), 1, kDownRows});
                EXPECT_EQ(0, std::memcmp(expected.data(), e.y.data(), sizeof(float) * e.y.size()))
                    << describe(c, count, wide, threads);
                EXPECT_NE(0.0f, e.y[0]) << describe(c, count, wide, threads);
            }
}

// Real threads, one phase per round as in the forward pass: the outputs cleared, a barrier,
// expertSteal on every thread with a new epoch, a barrier, then the bytes checked. One sweep over
// the cases; returns the tasks stolen.
int64_t stealSweep() {
    int64_t stolen = 0;
    for (const Case& c : kCases)
        for (int threads : {2, 3, 4})
            for (const auto& [count, wide] : {std::pair{4, false}, {8, true}, {1, false}}) {
                const std::vector<float> expected = twoPhase(c, count, wide, 1);
                Experts e = makeExperts(count, wide, c.quantised, c.fmt, 7);
                auto actDone = std::make_unique<std::atomic<uint32_t>[]>(e.items.size());
                StealRanges ranges(threads);
                SpinBarrier barrier(threads);
                std::atomic<int> mismatches{0};
                constexpr int kRounds = 80;
                std::vector<std::thread> team;
                for (int id = 0; id < threads; ++id)
                    team.emplace_back([&, id] {
                        Team t{id, threads, &barrier};
                        t.steal = &ranges;
                        for (uint32_t round = 1; round <= kRounds; ++round) {
                            if (id == 0) std::fill(e.y.begin(), e.y.end(), 0.0f);
                            barrier.wait();
                            expertSteal(t, e.items, kModel, {actDone.get(), round, kDownRows});
                            barrier.wait();
                            if (id == 0 && std::memcmp(expected.data(), e.y.data(),
                                                       sizeof(float) * e.y.size()) != 0)
                                mismatches.fetch_add(1);
                        }
                    });
                for (std::thread& t : team)
                    t.join();
                EXPECT_EQ(mismatches.load(), 0) << describe(c, count, wide, threads);
                stolen += ranges.stolen();
            }
    return stolen;
}

TEST(ExpertSteal, StolenDownChunksEqualTheTwoPhaseForm) {
    // Three threads with four equal items leave two threads one item each and one two: on a
    // quiet machine they steal in every round (thousands of tasks in one sweep); none would mean
    // the test compared nothing but static splits. A thread steals only while another is still
    // busy, so on a loaded machine a sweep could run with its threads one after another and
    // steal little (suspected, not shown, for one failure inside `ctest -j2`): sweeps repeat,
    // every round checking the bytes, until enough was stolen.
    constexpr int kMaxSweeps = 20;
    constexpr int64_t kEnough = 100;
    int64_t stolen = 0;
    int sweeps = 0;
    while (sweeps < kMaxSweeps && stolen <= kEnough && !HasFailure()) {
        stolen += stealSweep();
        ++sweeps;
    }
    RecordProperty("sweeps", sweeps);
    RecordProperty("stolen", std::to_string(stolen));
    EXPECT_GT(stolen, kEnough) << "after " << sweeps << " sweeps";
}

TEST(ExpertSteal, DownChunksAreWholeRowBlocksNearTheirByteSize) {
    Experts e = makeExperts(1, false, true, quant::WeightFormat::Q4_G64_R8, 3);
    const int rows = downChunkRows(e.items[0].w, kModel);
    EXPECT_EQ(rows % Team::kRowBlock, 0);
    EXPECT_EQ(rows, kModel); // 128 rows of 192 int4 values: 14 KiB in all, one chunk
    EXPECT_EQ(downChunkRows(e.items[0].w, 16), 16);
}

} // namespace
} // namespace coli
