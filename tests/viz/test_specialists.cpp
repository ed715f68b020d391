// viz/specialists.h: the specialist definition shared with `coli route-stats`, leave-one-prompt-out
// agreement and k-nearest-neighbour topic purity, on hand-made cases.
#include "viz/specialists.h"

#include <gtest/gtest.h>

using namespace coli;
using namespace coli::viz;

TEST(Specialists, RouteStatsDefinition) {
    // Exactly 3x the balanced share passes (route-stats tests share >= 3 x balanced).
    ExpertLabel l = labelExpert(std::vector<double>{0.375, 0.125, 0.0, 0.0});
    EXPECT_DOUBLE_EQ(l.balanced, 0.125);
    EXPECT_EQ(l.topTopic, 0);
    EXPECT_DOUBLE_EQ(l.topRatio, 3.0);
    EXPECT_EQ(l.dominant, 0);
    EXPECT_TRUE(l.specialist());
    // 2x is a generalist, though topic 0 is still its top topic.
    l = labelExpert(std::vector<double>{0.25, 0.125, 0.125, 0.0});
    EXPECT_EQ(l.topTopic, 0);
    EXPECT_EQ(l.dominant, kGeneralist);
    // 4x but under 1 % balanced share: never a specialist.
    l = labelExpert(std::vector<double>{0.03, 0.0, 0.0, 0.0});
    EXPECT_DOUBLE_EQ(l.topRatio, 4.0);
    EXPECT_EQ(l.dominant, kGeneralist);
    EXPECT_FALSE(isSpecialistShare(0.03, 0.0075));
    EXPECT_TRUE(isSpecialistShare(0.03, 0.01));
    // Never routed: no top topic.
    l = labelExpert(std::vector<double>{0.0, 0.0, 0.0, 0.0});
    EXPECT_EQ(l.topTopic, kGeneralist);
    EXPECT_EQ(l.dominant, kGeneralist);
    // Two topics at 3x: the lower index is the dominant one.
    l = labelExpert(std::vector<double>{0.0, 0.3, 0.3, 0.0, 0.0, 0.0});
    EXPECT_EQ(l.dominant, 1);
    EXPECT_DOUBLE_EQ(routingShare(6, 4, 2), 0.75);
    EXPECT_DOUBLE_EQ(routingShare(6, 0, 2), 0.0);

    auto all =
        labelExperts(std::vector<double>{0.375, 0.125, 0.0, 0.0, 0.25, 0.125, 0.125, 0.0}, 2, 4);
    ASSERT_TRUE(all.isOk());
    EXPECT_EQ((*all)[0].dominant, 0);
    EXPECT_EQ((*all)[1].dominant, kGeneralist);
    EXPECT_FALSE(labelExperts(std::vector<double>{0.1, 0.2, 0.3}, 2, 2).isOk());
}

namespace {

// 4 topics, 2 prompts each of 10 tokens, top-1, 3 experts. e0 is routed for every token of both
// topic-0 prompts, e1 only for prompt 1 (topic 0), e2 for 2 tokens of every prompt.
PromptRouting handMadePrompts() {
    PromptRouting r;
    r.nExperts = 3;
    r.nTopics = 4;
    r.topK = 1;
    r.topic = {0, 0, 1, 1, 2, 2, 3, 3};
    r.tokens.assign(8, 10);
    for (int p = 0; p < 8; ++p) {
        r.routedSlots.push_back(p < 2 ? 10 : 0);
        r.routedSlots.push_back(p == 1 ? 10 : 0);
        r.routedSlots.push_back(2);
    }
    return r;
}

} // namespace

TEST(Specialists, TopicSharesPoolPromptsPerTopic) {
    auto s = topicShares(handMadePrompts());
    ASSERT_TRUE(s.isOk()) << s.status().toString();
    ASSERT_EQ(s->size(), 12u);
    EXPECT_DOUBLE_EQ((*s)[0], 1.0);  // e0, topic 0: 20 of 20 slots
    EXPECT_DOUBLE_EQ((*s)[1], 0.0);  // e0, topic 1
    EXPECT_DOUBLE_EQ((*s)[4], 0.5);  // e1, topic 0: 10 of 20
    EXPECT_DOUBLE_EQ((*s)[11], 0.2); // e2, topic 3: 4 of 20
}

TEST(Specialists, LeaveOnePromptOutAgreement) {
    auto a = leaveOnePromptOut(handMadePrompts());
    ASSERT_TRUE(a.isOk()) << a.status().toString();
    // e0 stays a topic-0 specialist whichever prompt is left out (8 of 8); e1 rests on prompt 1
    // alone and becomes a generalist without it (7 of 8); e2 is a generalist and not counted.
    EXPECT_EQ(a->cases, 16);
    EXPECT_EQ(a->agreed, 15);
    EXPECT_DOUBLE_EQ(a->overall, 15.0 / 16.0);
    EXPECT_EQ(a->specialists, (std::vector<int>{2, 0, 0, 0}));
    EXPECT_DOUBLE_EQ(a->perTopic[0], 15.0 / 16.0);
    EXPECT_DOUBLE_EQ(a->perTopic[1], 0.0);
}

TEST(Specialists, LeaveOnePromptOutRefusesBadCounts) {
    PromptRouting r = handMadePrompts();
    r.topic[3] = 4;
    auto a = leaveOnePromptOut(r);
    ASSERT_FALSE(a.isOk());
    EXPECT_NE(a.status().message().find("prompt 3 has topic 4"), std::string::npos);
    r = handMadePrompts();
    r.routedSlots[0] = 11;
    EXPECT_NE(leaveOnePromptOut(r).status().message().find("11 times in 10 tokens"),
              std::string::npos);
    r = handMadePrompts();
    r.routedSlots.pop_back();
    EXPECT_FALSE(topicShares(r).isOk());
}

TEST(Specialists, NearestNeighbourTopicPurity) {
    // Topic 0's three specialists near x = 0, topic 1's near x = 10, a generalist between them.
    const std::vector<double> xyz = {0, 0,  0, 1, 0,  0, 0, 1, 0, 10, 0,
                                     0, 11, 0, 0, 10, 1, 0, 5, 0, 0};
    const std::vector<int> label = {0, 0, 0, 1, 1, 1, kGeneralist};
    // k = 2: both neighbours share the topic. k = 5: 2 of 5 do.
    auto p2 = topicPurity(xyz, label, 2, 2);
    ASSERT_TRUE(p2.isOk()) << p2.status().toString();
    EXPECT_DOUBLE_EQ(p2->overall, 1.0);
    auto p5 = topicPurity(xyz, label, 2);
    ASSERT_TRUE(p5.isOk()) << p5.status().toString();
    EXPECT_DOUBLE_EQ(p5->overall, 0.4);
    EXPECT_DOUBLE_EQ(p5->perTopic[1], 0.4);
    // Moving one topic-1 specialist into topic 0's group: with k = 2, topic 0's specialists and
    // the moved one see one or two of the wrong topic.
    std::vector<double> mixed = xyz;
    mixed[9] = 0.5;
    mixed[10] = 0.5;
    auto pm = topicPurity(mixed, label, 2, 2);
    ASSERT_TRUE(pm.isOk());
    EXPECT_LT(pm->overall, 1.0);

    auto few = topicPurity(xyz, label, 2, 6);
    ASSERT_FALSE(few.isOk());
    EXPECT_NE(few.status().message().find("there are 6"), std::string::npos);
    EXPECT_FALSE(topicPurity(xyz, std::vector<int>{0, 0, 0, 1, 1, 1, 2}, 2).isOk());
    EXPECT_FALSE(topicPurity(std::vector<double>{0, 0}, label, 2).isOk());
}

TEST(Specialists, NeighbourhoodPurityCountsEveryExpertByItsLeaning) {
    // Two groups of four experts: around x = 0 one topic-0 specialist with three generalists
    // leaning to topic 0; around x = 10 one topic-1 specialist, two leaning to 1, one to 0.
    const std::vector<double> xyz = {0,  0, 0, 1,  0, 0, 0,  1, 0, 1,  1, 0,
                                     10, 0, 0, 11, 0, 0, 10, 1, 0, 11, 1, 0};
    const std::vector<int> dominant = {0, kGeneralist, kGeneralist, kGeneralist,
                                       1, kGeneralist, kGeneralist, kGeneralist};
    const std::vector<int> leaning = {0, 0, 0, 0, 1, 1, 1, 0};
    auto p3 = neighbourhoodPurity(xyz, dominant, leaning, 2, 3);
    ASSERT_TRUE(p3.isOk()) << p3.status().toString();
    EXPECT_DOUBLE_EQ(p3->perTopic[0], 1.0);       // its 3 neighbours all lean to 0
    EXPECT_DOUBLE_EQ(p3->perTopic[1], 2.0 / 3.0); // one of its 3 leans to 0
    EXPECT_DOUBLE_EQ(p3->overall, (1.0 + 2.0 / 3.0) / 2);
    // Random placement: 4 of the 7 others lean to 0 for the first, 2 of 7 to 1 for the second.
    EXPECT_DOUBLE_EQ(p3->chance, (4.0 / 7 + 2.0 / 7) / 2);
    // One specialist per topic: topicPurity could find no same-topic specialist at all.
    EXPECT_DOUBLE_EQ(p3->specialistsCap, 0.0);
    // The specialists swapped to the far group: the figure drops.
    std::vector<double> swapped = xyz;
    std::swap_ranges(swapped.begin(), swapped.begin() + 3, swapped.begin() + 12);
    auto ps = neighbourhoodPurity(swapped, dominant, leaning, 2, 3);
    ASSERT_TRUE(ps.isOk());
    EXPECT_LT(ps->overall, 0.5);

    EXPECT_FALSE(neighbourhoodPurity(xyz, std::vector<int>(8, kGeneralist), leaning, 2).isOk());
    EXPECT_FALSE(neighbourhoodPurity(xyz, dominant, std::vector<int>(7, 0), 2).isOk());
    EXPECT_FALSE(neighbourhoodPurity(xyz, dominant, std::vector<int>(8, 2), 2).isOk());
    EXPECT_FALSE(neighbourhoodPurity(xyz, dominant, leaning, 2, 8).isOk());
}
