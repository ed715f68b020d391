// The decode form of the routed experts (forward/fast_ffn.h): whole experts per thread
// (expertShare) must give the bytes of the two-phase form (gateUpShare, then downShare), for every
// share of the team, with quantised (int4 and int8, plain and -r8 tiles) and f32 weights. The
// threads' shares are run one after another on this thread: neither form syncs inside.
#include "forward/fast_ffn.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

namespace coli {
namespace {

constexpr int kModel = 128, kFfn = 192;

struct Experts {
    std::vector<SwiGluWeights> w;
    std::vector<float> x;       // [1, d_model], the token
    QuantisedRows qin, qact;    // its quantised copies; the acts
    std::vector<float> g, u, y; // [items, ffn] x2, [items, d_model]
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

Experts makeExperts(int count, bool quantised, quant::WeightFormat fmt, uint32_t seed) {
    std::mt19937 rng(seed);
    Experts e;
    for (int i = 0; i < count; ++i) {
        SwiGluWeights w;
        w.gate = randomMatrix(kFfn, kModel, quantised, fmt, rng);
        w.up = randomMatrix(kFfn, kModel, quantised, fmt, rng);
        w.down = randomMatrix(kModel, kFfn, quantised, fmt, rng);
        e.w.push_back(std::move(w));
    }
    std::normal_distribution<float> normal(0.0f, 1.0f);
    e.x.resize(kModel);
    for (float& v : e.x)
        v = normal(rng);
    e.qin.allocate(1, kModel);
    e.qin.quantiseRow(kGroup32 | kGroup64, e.x.data(), kModel, 0);
    e.qact.allocate(count, kFfn);
    e.g.assign(size_t(count) * kFfn, 0.0f);
    e.u.assign(size_t(count) * kFfn, 0.0f);
    e.y.assign(size_t(count) * kModel, 0.0f);
    for (int i = 0; i < count; ++i) {
        FfnItem it;
        it.w = e.w[size_t(i)];
        it.in = e.qin.input(e.x.data(), 0, 1, kModel);
        it.cnt = 1;
        it.g = e.g.data() + size_t(i) * kFfn;
        it.u = e.u.data() + size_t(i) * kFfn;
        it.act = &e.qact;
        it.actRow = i;
        it.y = e.y.data() + size_t(i) * kModel;
        e.items.push_back(it);
    }
    return e;
}

TEST(ExpertShare, WholeExpertsPerThreadEqualTheTwoPhaseForm) {
    using quant::WeightFormat;
    struct Case {
        bool quantised;
        WeightFormat fmt;
    };
    const Case cases[] = {{true, WeightFormat::Q4_G64_R8},
                          {true, WeightFormat::Q8_G64_R8},
                          {true, WeightFormat::Q4_G32},
                          {true, WeightFormat::Q8_G32},
                          {false, WeightFormat::Q8_G32}};
    for (const Case& c : cases)
        for (int threads : {1, 2, 4}) {
            const int count = 4;
            Experts twoPhase = makeExperts(count, c.quantised, c.fmt, 7);
            Experts whole = makeExperts(count, c.quantised, c.fmt, 7);
            for (int id = 0; id < threads; ++id)
                gateUpShare(Team{id, threads, nullptr}, twoPhase.items);
            for (int id = 0; id < threads; ++id)
                downShare(Team{id, threads, nullptr}, twoPhase.items, kModel);
            ASSERT_TRUE(evenWholeItems(Team{0, threads, nullptr}, whole.items));
            for (int id = threads - 1; id >= 0; --id) // any order: the shares are disjoint
                expertShare(Team{id, threads, nullptr}, whole.items, kModel);
            const std::string what = std::string(c.quantised ? "quantised " : "f32 ") +
                                     std::to_string(int(c.fmt)) + ", " + std::to_string(threads) +
                                     " threads";
            EXPECT_EQ(0, std::memcmp(twoPhase.y.data(), whole.y.data(),
                                     sizeof(float) * twoPhase.y.size()))
                << what;
            EXPECT_NE(0.0f, whole.y[0]) << what; // computed, not left at zero
        }
}

TEST(ExpertShare, EvenOnlyWhenTheTeamDividesEqualItems) {
    Experts e = makeExperts(4, true, quant::WeightFormat::Q4_G64_R8, 3);
    EXPECT_TRUE(evenWholeItems(Team{0, 2, nullptr}, e.items));
    EXPECT_FALSE(evenWholeItems(Team{0, 3, nullptr}, e.items));
    EXPECT_FALSE(evenWholeItems(Team{0, 2, nullptr}, std::span<const FfnItem>()));
    e.items[1].cnt = 2; // a prefill chunk: experts take different numbers of tokens
    EXPECT_FALSE(evenWholeItems(Team{0, 2, nullptr}, e.items));
}

} // namespace
} // namespace coli
