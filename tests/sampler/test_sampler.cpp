// Sampler: parameter validation, greedy, each filter, seeded determinism, the repetition penalty,
// NaN/Inf handling, and a chi-square check of the drawn frequencies against softmax computed here.
#include "sampler/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <vector>

using coli::ErrorCode;
using coli::Sampler;
using coli::SamplerParams;

namespace {

const std::vector<int32_t> kNoHistory;

SamplerParams plain(float temperature, uint64_t seed = 1) {
    SamplerParams p;
    p.temperature = temperature;
    p.topK = 0;
    p.topP = 1.0f;
    p.minP = 0.0f;
    p.repeatPenalty = 1.0f;
    p.seed = seed;
    return p;
}

int32_t draw(Sampler& s, const std::vector<float>& logits,
             const std::vector<int32_t>& history = kNoHistory) {
    auto r = s.sample(logits, history);
    EXPECT_TRUE(r) << r.status().toString();
    return r ? r.value() : -1;
}

std::vector<int> histogram(Sampler& s, const std::vector<float>& logits, int draws) {
    std::vector<int> h(logits.size(), 0);
    for (int i = 0; i < draws; ++i)
        ++h[size_t(draw(s, logits))];
    return h;
}

// softmax(logits / t) written out here, independent of the sampler.
std::vector<double> softmax(const std::vector<float>& logits, double t) {
    double m = -INFINITY, z = 0;
    for (float l : logits)
        m = std::max(m, double(l));
    std::vector<double> p;
    for (float l : logits)
        p.push_back(std::exp((l - m) / t));
    for (double v : p)
        z += v;
    for (double& v : p)
        v /= z;
    return p;
}

// Pearson chi-square of observed counts against expected probabilities (zero-probability cells
// must have zero counts).
double chiSquare(const std::vector<int>& counts, const std::vector<double>& probs, int draws) {
    double chi = 0;
    for (size_t i = 0; i < counts.size(); ++i) {
        if (probs[i] == 0) {
            EXPECT_EQ(counts[i], 0) << "token " << i << " has probability 0";
            continue;
        }
        const double e = probs[i] * draws;
        chi += (counts[i] - e) * (counts[i] - e) / e;
    }
    return chi;
}

// Upper 0.1% points of chi-square: a correct sampler fails such a check 1 time in 1000 seeds;
// the seeds here are fixed, so the tests are deterministic.
double chi999(int dof) {
    static const double kTable[] = {0,     10.83, 13.82, 16.27, 18.47, 20.52, 22.46,
                                    24.32, 26.12, 27.88, 29.59, 31.26, 32.91};
    return kTable[dof];
}

// The chain as specified, written plainly: penalty-free logits -> sort (prob desc, id asc) ->
// top-k -> softmax(l / t) -> top-p prefix -> min-p -> renormalise. Returns per-id probabilities.
std::vector<double> referenceChain(const std::vector<float>& logits, const SamplerParams& p) {
    std::vector<int> ids(logits.size());
    for (size_t i = 0; i < ids.size(); ++i)
        ids[i] = int(i);
    std::sort(ids.begin(), ids.end(),
              [&](int a, int b) { return logits[a] != logits[b] ? logits[a] > logits[b] : a < b; });
    if (p.topK > 0 && size_t(p.topK) < ids.size()) ids.resize(size_t(p.topK));
    std::vector<float> kept;
    for (int id : ids)
        kept.push_back(logits[size_t(id)]);
    std::vector<double> q = softmax(kept, p.temperature);
    size_t n = q.size();
    double cum = 0;
    for (size_t i = 0; i < q.size(); ++i) {
        cum += q[i];
        if (cum >= p.topP) {
            n = i + 1;
            break;
        }
    }
    std::vector<double> out(logits.size(), 0.0);
    double z = 0;
    for (size_t i = 0; i < n; ++i) {
        if (q[i] < p.minP * q[0]) continue;
        out[size_t(ids[i])] = q[i];
        z += q[i];
    }
    for (double& v : out)
        v /= z;
    return out;
}

} // namespace

// ---- validation ----

TEST(SamplerValidate, DefaultsAndBoundariesAreAccepted) {
    EXPECT_TRUE(coli::validate(SamplerParams{}));
    SamplerParams p;
    p.temperature = 0;
    p.topK = 0;
    p.topP = 1;
    p.minP = 0;
    p.repeatPenalty = 10;
    p.repeatLastN = 0;
    EXPECT_TRUE(coli::validate(p));
    p.temperature = 100;
    p.repeatPenalty = 0.01f;
    EXPECT_TRUE(coli::validate(p));
}

struct BadParam {
    const char* name;
    const char* range;
    void (*set)(SamplerParams&);
};

TEST(SamplerValidate, EveryOutOfRangeParameterIsRejectedByName) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    static float nanv;
    nanv = nan;
    const BadParam cases[] = {
        {"temperature", "[0, 100]", [](SamplerParams& p) { p.temperature = -0.1f; }},
        {"temperature", "[0, 100]", [](SamplerParams& p) { p.temperature = 100.5f; }},
        {"temperature", "[0, 100]", [](SamplerParams& p) { p.temperature = nanv; }},
        {"temperature", "[0, 100]", [](SamplerParams& p) { p.temperature = INFINITY; }},
        {"topK", ">= 0", [](SamplerParams& p) { p.topK = -1; }},
        {"topP", "(0, 1]", [](SamplerParams& p) { p.topP = 0.0f; }},
        {"topP", "(0, 1]", [](SamplerParams& p) { p.topP = 1.01f; }},
        {"topP", "(0, 1]", [](SamplerParams& p) { p.topP = -0.5f; }},
        {"topP", "(0, 1]", [](SamplerParams& p) { p.topP = nanv; }},
        {"minP", "[0, 1)", [](SamplerParams& p) { p.minP = 1.0f; }},
        {"minP", "[0, 1)", [](SamplerParams& p) { p.minP = -0.01f; }},
        {"minP", "[0, 1)", [](SamplerParams& p) { p.minP = nanv; }},
        {"repeatPenalty", "(0, 10]", [](SamplerParams& p) { p.repeatPenalty = 0.0f; }},
        {"repeatPenalty", "(0, 10]", [](SamplerParams& p) { p.repeatPenalty = 10.5f; }},
        {"repeatPenalty", "(0, 10]", [](SamplerParams& p) { p.repeatPenalty = -1.0f; }},
        {"repeatPenalty", "(0, 10]", [](SamplerParams& p) { p.repeatPenalty = nanv; }},
        {"repeatLastN", ">= 0", [](SamplerParams& p) { p.repeatLastN = -1; }},
    };
    for (const BadParam& c : cases) {
        SamplerParams p;
        c.set(p);
        const coli::Status s = coli::validate(p);
        ASSERT_FALSE(s) << c.name;
        EXPECT_EQ(s.code(), ErrorCode::InvalidArgument) << c.name;
        EXPECT_NE(s.message().find(c.name), std::string::npos) << s.message();
        EXPECT_NE(s.message().find(c.range), std::string::npos) << s.message();
        // A sampler built from such parameters refuses to sample instead of guessing.
        Sampler sampler(p);
        auto r = sampler.sample(std::vector<float>{1, 2}, kNoHistory);
        ASSERT_FALSE(r);
        EXPECT_EQ(r.status().code(), ErrorCode::InvalidArgument);
    }
}

// ---- greedy ----

TEST(Sampler, GreedyPicksArgmaxLowestIdOnTies) {
    Sampler s(plain(0.0f));
    EXPECT_EQ(draw(s, {0.1f, 3.0f, -1.0f, 2.9f}), 1);
    EXPECT_EQ(draw(s, {5.0f, 1.0f, 5.0f}), 0);
    EXPECT_EQ(draw(s, {-3.0f, -1.0f, -1.0f, -2.0f}), 1);
    EXPECT_EQ(draw(s, {7.0f}), 0);
}

TEST(Sampler, TemperatureZeroIsGreedyWhateverTheOtherParameters) {
    const std::vector<float> logits = {0.5f, 1.0f, 2.5f, 2.4f, -1.0f};
    for (int k : {0, 1, 3}) {
        for (float topP : {0.01f, 0.5f, 1.0f}) {
            for (float minP : {0.0f, 0.5f, 0.99f}) {
                for (uint64_t seed : {0ull, 7ull, 123456789ull}) {
                    SamplerParams p = plain(0.0f, seed);
                    p.topK = k;
                    p.topP = topP;
                    p.minP = minP;
                    Sampler s(p);
                    for (int i = 0; i < 5; ++i)
                        ASSERT_EQ(draw(s, logits), 2);
                }
            }
        }
    }
}

TEST(Sampler, TopK1IsGreedy) {
    SamplerParams p = plain(1.5f, 99);
    p.topK = 1;
    Sampler s(p);
    for (int i = 0; i < 200; ++i)
        ASSERT_EQ(draw(s, {1.0f, 4.0f, 3.99f, 4.0f}), 1);
}

TEST(Sampler, TinyTopPIsGreedy) {
    SamplerParams p = plain(2.0f, 5);
    p.topP = 1e-6f;
    Sampler s(p);
    for (int i = 0; i < 200; ++i)
        ASSERT_EQ(draw(s, {1.0f, 2.0f, 2.0f, 1.9f}), 1);
}

TEST(Sampler, TiesBreakToTheLowestIdInTheFilters) {
    // 1000 equal logits with a permutation-sensitive sort: only the id tie-break makes top-k=1
    // and a tiny top-p deterministic (the lowest id wins, as in greedy).
    std::vector<float> logits(1000, 0.25f);
    logits[0] = -1.0f; // the lowest tied id is 1
    SamplerParams p = plain(1.0f, 17);
    p.topK = 1;
    Sampler k1(p);
    for (int i = 0; i < 20; ++i)
        ASSERT_EQ(draw(k1, logits), 1);
    p.topK = 0;
    p.topP = 1e-6f;
    Sampler tinyP(p);
    for (int i = 0; i < 20; ++i)
        ASSERT_EQ(draw(tinyP, logits), 1);
}

// ---- determinism ----

TEST(Sampler, SameSeedSameSequenceDifferentSeedDiffers) {
    const std::vector<float> logits = {0.0f, 0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f};
    SamplerParams p = plain(1.0f, 42);
    p.topK = 6;
    p.topP = 0.9f;
    Sampler a(p), b(p);
    p.seed = 43;
    Sampler c(p);
    std::vector<int32_t> sa, sb, sc;
    for (int i = 0; i < 500; ++i) {
        sa.push_back(draw(a, logits));
        sb.push_back(draw(b, logits));
        sc.push_back(draw(c, logits));
    }
    EXPECT_EQ(sa, sb);
    EXPECT_NE(sa, sc);
    int same = 0;
    for (size_t i = 0; i < sa.size(); ++i)
        same += sa[i] == sc[i];
    EXPECT_LT(same, 250); // independent streams agree about 1/5 of the time here

    a.reseed(42);
    std::vector<int32_t> again;
    for (int i = 0; i < 500; ++i)
        again.push_back(draw(a, logits));
    EXPECT_EQ(again, sa);
}

// ---- distributions ----

TEST(Sampler, FrequenciesMatchSoftmax) {
    const std::vector<float> logits = {1.0f, 2.0f, 0.5f, -1.0f, 3.0f};
    const int draws = 20000;
    for (float t : {0.7f, 1.0f, 1.8f}) {
        Sampler s(plain(t, 2026));
        const auto h = histogram(s, logits, draws);
        const double chi = chiSquare(h, softmax(logits, t), draws);
        EXPECT_LT(chi, chi999(4)) << "temperature " << t;
    }
}

TEST(Sampler, TopKRenormalisesOverTheKBest) {
    const std::vector<float> logits = {1.0f, 2.0f, 0.5f, -1.0f, 3.0f};
    SamplerParams p = plain(1.0f, 11);
    p.topK = 3;
    Sampler s(p);
    const int draws = 20000;
    const auto h = histogram(s, logits, draws);
    // The 3 best are ids 4, 1, 0.
    auto q = softmax({1.0f, 2.0f, 3.0f}, 1.0);
    const std::vector<double> want = {q[0], q[1], 0, 0, q[2]};
    EXPECT_LT(chiSquare(h, want, draws), chi999(2));
}

TEST(Sampler, TopPKeepsSmallestPrefixReachingP) {
    // Probabilities 0.5, 0.3, 0.15, 0.05 (temperature 1); top-p 0.75 keeps {0, 1}.
    const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.15f),
                                       std::log(0.05f)};
    SamplerParams p = plain(1.0f, 3);
    p.topP = 0.75f;
    Sampler s(p);
    const int draws = 20000;
    const auto h = histogram(s, logits, draws);
    EXPECT_LT(chiSquare(h, {0.5 / 0.8, 0.3 / 0.8, 0, 0}, draws), chi999(1));
}

TEST(Sampler, MinPDropsTokensBelowFractionOfTheBest) {
    // Probabilities 0.5, 0.3, 0.15, 0.05: min-p 0.2 -> threshold 0.1 drops only id 3.
    const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.15f),
                                       std::log(0.05f)};
    SamplerParams p = plain(1.0f, 4);
    p.minP = 0.2f;
    Sampler s(p);
    const int draws = 20000;
    const auto h = histogram(s, logits, draws);
    EXPECT_LT(chiSquare(h, {0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0}, draws), chi999(2));
    // min-p close to 1 leaves only the best.
    p.minP = 0.9f;
    Sampler only(p);
    for (int i = 0; i < 100; ++i)
        ASSERT_EQ(draw(only, logits), 0);
}

TEST(Sampler, VeryLowTemperatureIsStable) {
    // (l - max) / t underflows exp to 0 for all but the best: no NaN, always the argmax.
    Sampler s(plain(1e-30f, 8));
    for (int i = 0; i < 100; ++i)
        ASSERT_EQ(draw(s, {1.0f, 1.5f, -3e38f, 3e38f, 2.0f}), 3);
}

TEST(Sampler, FullChainMatchesPlainReferenceOnRandomRows) {
    // Random rows and parameter mixes, including top-p with min-p where the top-p prefix runs past
    // the min-p threshold (the sampler drops min-p candidates before sorting).
    std::mt19937 rng(99);
    std::uniform_real_distribution<float> logit(-2.0f, 2.0f);
    const int draws = 20000;
    struct Mix {
        int topK;
        float topP, minP, temperature;
    };
    const Mix mixes[] = {{0, 0.9f, 0.0f, 1.0f},   {0, 0.97f, 0.1f, 1.0f}, {0, 0.6f, 0.3f, 0.8f},
                         {0, 1.0f, 0.2f, 1.3f},   {5, 0.9f, 0.05f, 1.0f}, {3, 1.0f, 0.5f, 0.5f},
                         {0, 0.999f, 0.01f, 2.0f}};
    for (const Mix& m : mixes) {
        std::vector<float> row(10);
        for (float& v : row)
            v = logit(rng);
        SamplerParams p = plain(m.temperature, rng());
        p.topK = m.topK;
        p.topP = m.topP;
        p.minP = m.minP;
        const std::vector<double> want = referenceChain(row, p);
        int dof = -1;
        for (double w : want)
            dof += w > 0;
        Sampler s(p);
        const auto h = histogram(s, row, draws);
        if (dof == 0) {
            EXPECT_EQ(*std::max_element(h.begin(), h.end()), draws);
            continue;
        }
        EXPECT_LT(chiSquare(h, want, draws), chi999(dof))
            << "topK " << m.topK << " topP " << m.topP << " minP " << m.minP;
    }
}

TEST(Sampler, LongTopPPrefixOnLargeVocabulary) {
    // 3000 almost equal, shuffled logits: top-p 0.5 keeps about 1500 tokens, far more than a
    // first partial sort looks at, so the prefix must be widened and still be exact.
    std::vector<float> row(3000);
    for (size_t i = 0; i < row.size(); ++i)
        row[i] = -float(i) * 1e-4f;
    std::shuffle(row.begin(), row.end(), std::mt19937(5));
    SamplerParams p = plain(1.0f, 21);
    p.topP = 0.5f;
    const std::vector<double> want = referenceChain(row, p);
    size_t keptRef = 0;
    for (double w : want)
        keptRef += w > 0;
    ASSERT_GT(keptRef, 1000u);
    ASSERT_LT(keptRef, 2000u);
    Sampler s(p);
    const auto h = histogram(s, row, 4000);
    size_t distinct = 0;
    for (size_t i = 0; i < h.size(); ++i) {
        if (h[i] == 0) continue;
        ++distinct;
        ASSERT_GT(want[i], 0) << "drew token " << i << " outside the top-p set";
    }
    // ~2.7 draws per kept token: about 93% of them show up (1 - e^-2.7); a prefix cut short at
    // the first partial sort would show at most 256.
    EXPECT_GT(distinct, keptRef * 85 / 100);
}

// ---- repetition penalty ----

TEST(Sampler, RepetitionPenaltyLowersPositiveAndDeepensNegative) {
    SamplerParams p = plain(0.0f);
    p.repeatPenalty = 2.0f;
    p.repeatLastN = 64;
    Sampler s(p);
    // Positive: token 0's 2.0 becomes 1.0, below token 1's 1.5.
    EXPECT_EQ(draw(s, {2.0f, 1.5f}, {}), 0);
    EXPECT_EQ(draw(s, {2.0f, 1.5f}, {0}), 1);
    // Negative: token 0's -1.0 becomes -2.0, below token 1's -1.5.
    EXPECT_EQ(draw(s, {-1.0f, -1.5f}, {}), 0);
    EXPECT_EQ(draw(s, {-1.0f, -1.5f}, {0}), 1);
}

TEST(Sampler, RepetitionPenaltyAppliesOncePerDistinctToken) {
    SamplerParams p = plain(0.0f);
    p.repeatPenalty = 2.0f;
    Sampler s(p);
    // Once: 4.0 -> 2.0 > 1.5. Applied twice it would be 1.0 < 1.5.
    EXPECT_EQ(draw(s, {4.0f, 1.5f}, {0, 0, 0}), 0);
}

TEST(Sampler, RepetitionPenaltyLooksOnlyAtLastN) {
    SamplerParams p = plain(0.0f);
    p.repeatPenalty = 2.0f;
    p.repeatLastN = 2;
    Sampler s(p);
    // Token 0 is outside the last 2 tokens: not penalised.
    EXPECT_EQ(draw(s, {2.0f, 1.5f, 0.0f}, {0, 2, 2}), 0);
    EXPECT_EQ(draw(s, {2.0f, 1.5f, 0.0f}, {2, 0, 2}), 1);
    p.repeatLastN = 0; // off
    Sampler off(p);
    EXPECT_EQ(draw(off, {2.0f, 1.5f, 0.0f}, {0, 0}), 0);
    // History ids outside the vocabulary are ignored.
    EXPECT_EQ(draw(off, {2.0f, 1.5f}, {-5, 99}), 0);
}

TEST(Sampler, RepetitionPenaltyShiftsSampledFrequencies) {
    const std::vector<float> logits = {1.0f, 1.0f, 1.0f};
    SamplerParams p = plain(1.0f, 77);
    p.repeatPenalty = 3.0f;
    Sampler s(p);
    const int draws = 20000;
    std::vector<int> h(3, 0);
    const std::vector<int32_t> history = {2};
    for (int i = 0; i < draws; ++i)
        ++h[size_t(draw(s, logits, history))];
    EXPECT_LT(chiSquare(h, softmax({1.0f, 1.0f, 1.0f / 3.0f}, 1.0), draws), chi999(2));
}

// ---- bad logits ----

TEST(Sampler, NaNAndInfLogitsAreNumericErrors) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (float temperature : {0.0f, 0.8f}) {
        Sampler s(plain(temperature));
        auto r = s.sample(std::vector<float>{0.0f, 1.0f, 2.0f, nan, 1.0f, INFINITY}, kNoHistory);
        ASSERT_FALSE(r);
        EXPECT_EQ(r.status().code(), ErrorCode::Numeric);
        EXPECT_NE(r.status().message().find("2 of 6"), std::string::npos) << r.status().message();
        EXPECT_NE(r.status().message().find("index 3"), std::string::npos) << r.status().message();

        auto inf = s.sample(std::vector<float>{-INFINITY, 1.0f}, kNoHistory);
        ASSERT_FALSE(inf);
        EXPECT_EQ(inf.status().code(), ErrorCode::Numeric);
        EXPECT_NE(inf.status().message().find("index 0"), std::string::npos);
    }
}

TEST(Sampler, EmptyLogitsAreInvalidArgument) {
    Sampler s(plain(1.0f));
    auto r = s.sample(std::span<const float>(), kNoHistory);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.status().code(), ErrorCode::InvalidArgument);
}

TEST(Sampler, LargeVocabularyWithDefaults) {
    // Default parameters on a 50k row: the result is one of the few tokens min-p/top-k allow.
    std::vector<float> logits(50000, -5.0f);
    logits[123] = 10.0f;
    logits[40000] = 9.5f;
    logits[7] = 9.0f;
    Sampler s(SamplerParams{});
    std::map<int32_t, int> seen;
    for (int i = 0; i < 300; ++i)
        ++seen[draw(s, logits)];
    for (const auto& [id, n] : seen)
        EXPECT_TRUE(id == 123 || id == 40000 || id == 7) << id;
    EXPECT_GT(seen[123], seen[7]);
}
