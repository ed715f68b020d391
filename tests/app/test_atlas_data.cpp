// AtlasData (app/atlas/atlas_data.h): the synthetic atlas is deterministic and clustered by
// topic; the probe's JSON round-trips and every malformed file is refused with a message that
// names the file and the problem; the synthetic router routes k distinct experts per layer.
#include "atlas/atlas_data.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <set>

using namespace coli;
using namespace coli::atlas;

TEST(AtlasData, SyntheticIsDeterministicAndShaped) {
    const AtlasData a = syntheticAtlas(75, 256, 10, 1), b = syntheticAtlas(75, 256, 10, 1);
    ASSERT_EQ(a.experts.size(), 19200u);
    EXPECT_EQ(toAtlasJson(a), toAtlasJson(b));
    EXPECT_NE(toAtlasJson(a), toAtlasJson(syntheticAtlas(75, 256, 10, 2)));
    int specialists = 0;
    for (const AtlasExpert& e : a.experts) {
        ASSERT_EQ(e.shares.size(), 10u);
        double sum = 0;
        for (float s : e.shares)
            sum += s;
        EXPECT_NEAR(sum, 1.0, 1e-4);
        EXPECT_EQ(e.specialist, e.topic >= 0);
        specialists += e.specialist;
    }
    EXPECT_GT(specialists, 19200 / 2);
    EXPECT_LT(specialists, 19200 * 4 / 5);
}

TEST(AtlasData, SpecialistsClusterByTopic) {
    // Every specialist is nearer to its own topic's mean than to any other topic's mean.
    const AtlasData a = syntheticAtlas(10, 64, 6, 3);
    std::vector<std::array<double, 4>> mean(6);
    for (const AtlasExpert& e : a.experts)
        if (e.topic >= 0) {
            auto& m = mean[size_t(e.topic)];
            m[0] += e.x, m[1] += e.y, m[2] += e.z, m[3] += 1;
        }
    int wrong = 0, n = 0;
    for (const AtlasExpert& e : a.experts) {
        if (e.topic < 0) continue;
        ++n;
        int best = -1;
        double bestD = 1e30;
        for (int t = 0; t < 6; ++t) {
            const auto& m = mean[size_t(t)];
            const double dx = e.x - m[0] / m[3], dy = e.y - m[1] / m[3], dz = e.z - m[2] / m[3];
            const double d = dx * dx + dy * dy + dz * dz;
            if (d < bestD) bestD = d, best = t;
        }
        wrong += best != e.topic;
    }
    EXPECT_EQ(wrong, 0) << "of " << n;
}

TEST(AtlasData, JsonRoundTrips) {
    const AtlasData a = syntheticAtlas(3, 8, 4, 5);
    auto r = parseAtlasJson(toAtlasJson(a), "atlas.json");
    ASSERT_TRUE(r.isOk()) << r.status().message();
    EXPECT_EQ(toAtlasJson(*r), toAtlasJson(a));
    EXPECT_EQ(r->nLayers, 3);
    EXPECT_EQ(r->nExperts, 8);
    EXPECT_EQ(r->topics.size(), 4u);
}

TEST(AtlasData, MalformedFilesAreRefusedWithTheFileAndTheProblem) {
    const std::string head = R"({"format":"colibri-atlas","version":1,"topics":["a","b"],)"
                             R"("layers":2,"experts_per_layer":4,"experts":[)";
    const std::string ok = R"({"layer":1,"expert":3,"position":[1,2,3],"dominant_topic":1,)"
                           R"("specialist":true,"shares":[0.2,0.8]})";
    ASSERT_TRUE(parseAtlasJson(head + ok + "]}", "a.json").isOk());
    const std::pair<std::string, std::string> cases[] = {
        {"{", "not valid JSON"},
        {R"({"format":"x","version":1})", "\"format\""},
        {R"({"format":"colibri-atlas","version":2})", "version"},
        {head + R"({"layer":2,"expert":0,"position":[0,0,0]}]})", "outside the model's 2 x 4"},
        {head + R"({"layer":0,"expert":0,"position":[0,0]}]})", "\"position\""},
        {head + R"({"layer":0,"expert":0,"position":[0,0,0],"dominant_topic":2}]})",
         "\"dominant_topic\""},
        {head + R"({"layer":0,"expert":0,"position":[0,0,0],"shares":[1]}]})", "\"shares\""},
        {head + ok + "," + ok + "]}", "listed twice"},
        {head + R"({"layer":"0","expert":0,"position":[0,0,0]}]})", "integers"},
    };
    for (const auto& [text, problem] : cases) {
        auto r = parseAtlasJson(text, "probe/atlas.json");
        ASSERT_FALSE(r.isOk()) << text;
        EXPECT_EQ(r.status().code(), ErrorCode::Malformed);
        EXPECT_NE(r.status().message().find("probe/atlas.json: "), std::string::npos);
        EXPECT_NE(r.status().message().find(problem), std::string::npos)
            << r.status().message() << " lacks " << problem;
    }
    auto missing = readAtlasJson("/nonexistent/atlas.json");
    ASSERT_FALSE(missing.isOk());
    EXPECT_EQ(missing.status().code(), ErrorCode::NotFound);
    EXPECT_NE(missing.status().message().find("/nonexistent/atlas.json"), std::string::npos);
}

TEST(AtlasData, SyntheticRouterRoutesKDistinctExpertsPerLayer) {
    const AtlasData a = syntheticAtlas(75, 256, 10, 1);
    std::vector<uint32_t> hits;
    uint64_t rng = 9;
    routeSyntheticToken(a, 4, 8, rng, hits);
    ASSERT_EQ(hits.size(), 19200u);
    for (int l = 0; l < 75; ++l) {
        int routed = 0, fromTopic = 0;
        for (int e = 0; e < 256; ++e) {
            const uint32_t h = hits[size_t(l) * 256 + e];
            ASSERT_LE(h, 1u);
            routed += int(h);
            if (h && a.experts[size_t(l) * 256 + e].topic == 4) ++fromTopic;
        }
        EXPECT_EQ(routed, 8);
        EXPECT_GE(fromTopic, 4); // half from the topic's specialists
    }
}
