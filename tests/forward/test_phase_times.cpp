// ForwardTimes::phases (forward/phase_times.h): timing the Fast path's phases changes no bit of the
// logits, records decode steps or prefill chunks as asked, counts each phase as often as the
// model runs it (every thread the same barriers), and sums to no more than the forward() calls'
// wall time. Every family fixture (MLA included), two and three threads.
#include "forward/model.h"
#include "forward/phase_times.h"
#include "golden_fixture.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

namespace coli {
namespace {

class PhaseTimesTest : public ::testing::TestWithParam<std::string> {};

// Prompt then `steps` greedy decode steps; decode (and prompt) logits appended to `out`. phases:
// passed to every forward() call. Returns the calls' wall time in seconds.
double run(const Model& m, int steps, PhaseTimes* phases, std::vector<float>& out) {
    const std::vector<int32_t> prompt = {1, 5, 9, 2, 7};
    KVCache kv;
    std::vector<float> logits;
    ForwardTimes t;
    t.phases = phases;
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_TRUE(m.forward(prompt, kv, logits, false, nullptr, &t).isOk());
    out.insert(out.end(), logits.begin(), logits.end());
    for (int i = 0; i < steps; ++i) {
        const int32_t next =
            int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
        EXPECT_TRUE(
            m.forward(std::span<const int32_t>(&next, 1), kv, logits, false, nullptr, &t).isOk());
        out.insert(out.end(), logits.begin(), logits.end());
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int64_t count(const PhaseTimes& p, size_t thread, Phase ph) {
    return p.threads[thread][size_t(ph)].count;
}

TEST_P(PhaseTimesTest, DecodeAndPrefillPhasesCountedWithoutChangingBits) {
    const std::string dir = test::fixtureDir(GetParam());
    if (!std::filesystem::exists(dir + "/config.json"))
        GTEST_SKIP() << "fixture " << GetParam() << " not generated (fixtures_generate makes it)";
    for (int threads : {2, 3}) {
        ModelLoadOptions lo;
        lo.threads = threads;
        auto m = Model::load(dir, lo);
        ASSERT_TRUE(m.isOk()) << m.status().toString();
        const ModelConfig& c = (*m)->config();
        int sparse = 0;
        for (int l = 0; l < c.nLayers; ++l)
            sparse += c.sparseLayer[size_t(l)] ? 1 : 0;
        constexpr int kSteps = 4;

        std::vector<float> plain, timed, timedPrefill;
        run(**m, kSteps, nullptr, plain);
        PhaseTimes decode;
        const double wall = run(**m, kSteps, &decode, timed);
        PhaseTimes prefill;
        prefill.prefill = true;
        run(**m, kSteps, &prefill, timedPrefill);
        EXPECT_EQ(plain, timed) << GetParam() << " " << threads << " threads";
        EXPECT_EQ(plain, timedPrefill) << GetParam() << " " << threads << " threads";

        // Decode: the steps only, not the prompt's chunk; prefill: the prompt's chunk only.
        EXPECT_EQ(decode.chunks, kSteps);
        EXPECT_EQ(prefill.chunks, 1);
        for (const PhaseTimes* p : {&decode, &prefill}) {
            const int64_t chunks = p->chunks;
            ASSERT_EQ(p->threads.size(), size_t(threads));
            for (size_t t = 0; t < p->threads.size(); ++t) {
                SCOPED_TRACE(GetParam() + " thread " + std::to_string(t) + " of " +
                             std::to_string(threads) + (p->prefill ? ", prefill" : ", decode"));
                EXPECT_EQ(count(*p, t, Phase::Embedding), chunks);
                EXPECT_EQ(count(*p, t, Phase::AttentionNorm), chunks * c.nLayers);
                EXPECT_EQ(count(*p, t, Phase::Projections), chunks * c.nLayers);
                EXPECT_EQ(count(*p, t, Phase::RopeKvAppend), chunks * c.nLayers);
                EXPECT_EQ(count(*p, t, Phase::Attention), chunks * c.nLayers);
                EXPECT_EQ(count(*p, t, Phase::OProjection), chunks * c.nLayers);
                EXPECT_EQ(count(*p, t, Phase::FfnNorm), chunks * c.nLayers);
                EXPECT_EQ(count(*p, t, Phase::Router), chunks * sparse);
                EXPECT_EQ(count(*p, t, Phase::DownCombine), chunks * c.nLayers);
                EXPECT_EQ(count(*p, t, Phase::FinalNorm), chunks);
                EXPECT_EQ(count(*p, t, Phase::LmHead), chunks);
                double sum = 0;
                for (size_t i = 0; i < kPhaseCount; ++i) {
                    const PhaseCell& cell = p->threads[t][i];
                    // Every thread passes the same barriers.
                    EXPECT_EQ(cell.count, p->threads[0][i].count) << phaseName(Phase(i));
                    EXPECT_GE(cell.workSeconds, 0.0);
                    EXPECT_GE(cell.waitSeconds, 0.0);
                    EXPECT_EQ(cell.count == 0, cell.workSeconds == 0 && cell.waitSeconds == 0)
                        << phaseName(Phase(i));
                    sum += cell.workSeconds + cell.waitSeconds;
                }
                EXPECT_GT(sum, 0.0);
                if (!p->prefill) {
                    EXPECT_LE(sum, wall);
                }
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Families, PhaseTimesTest, ::testing::ValuesIn(test::fixtureNames()),
                         [](const auto& info) { return info.param; });

TEST(PhaseNames, EveryPhaseNamed) {
    for (size_t i = 0; i < kPhaseCount; ++i)
        EXPECT_FALSE(phaseName(Phase(i)).empty()) << i;
    EXPECT_EQ(phaseName(Phase::Embedding), "embedding");
    EXPECT_EQ(phaseName(Phase::Projections), "q/k/v projections");
    EXPECT_EQ(phaseName(Phase::LmHead), "LM head");
    EXPECT_EQ(phaseName(Phase::kCount), "?");
}

} // namespace
} // namespace coli
