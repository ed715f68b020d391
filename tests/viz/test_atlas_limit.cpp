// The Atlas embedding at the issue-12 limit, 75 x 256 = 19,200 experts of synthetic routing
// (12 topics x 2,000 tokens, top-8): it converges, stays under 2 GiB peak RSS (getrusage, not a
// limit set on the process) and clusters the planted topics. Its time is a benchmark figure
// (bench/bench_atlas.cpp, docs/performance.md), never asserted here.
#include "viz/embedding.h"
#include "viz/specialists.h"
#include "viz/synthetic_routing.h"

#include <gtest/gtest.h>

#include <sys/resource.h>

using namespace coli::viz;

TEST(AtlasLimit, NineteenThousandExpertsWithinMemory) {
    auto routing = makeSyntheticRouting(SyntheticRoutingSpec{});
    ASSERT_TRUE(routing.isOk()) << routing.status().toString();
    ASSERT_EQ(routing->profile.nExperts, 19200);
    auto g = buildAffinity(routing->profile);
    ASSERT_TRUE(g.isOk()) << g.status().toString();
    auto e = embed3d(*g);
    ASSERT_TRUE(e.isOk()) << e.status().toString();
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    EXPECT_LT(u.ru_maxrss, 2L * 1024 * 1024) << "peak RSS in KiB";
    auto p = topicPurity(e->xyz, routing->plantedTopic, SyntheticRoutingSpec{}.nTopics);
    ASSERT_TRUE(p.isOk()) << p.status().toString();
    EXPECT_GE(p->overall, 0.9);
    std::printf("19,200 experts: %lld edges, %d restarts, peak RSS %.0f MiB, planted purity %.3f\n",
                static_cast<long long>(g->nnz()), e->iterations, double(u.ru_maxrss) / 1024.0,
                p->overall);
}
