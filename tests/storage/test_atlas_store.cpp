// The topic probe's tables (storage/atlas_store.h, schema v3): a probe saved in one transaction
// reads back row for row; the newest probe of a model wins; bad rows are refused with the row
// named and nothing written; a model without probes has none.
#include "storage/atlas_store.h"
#include "storage_test_util.h"

#include <cmath>
#include <gtest/gtest.h>
#include <limits>

using namespace coli;
using namespace coli::storage;
using storage_test::TempDir;

namespace {

AtlasProbe sampleProbe() {
    AtlasProbe p;
    p.topicSet = "default-model";
    p.topicSetSha256 = std::string(64, 'a');
    p.createdMs = 1000;
    p.nLayers = 2;
    p.nExperts = 4;
    p.topK = 2;
    p.topics = {{"kjv_en", "King James Bible", 20, 2100}, {"python", "Python", 21, 2500}};
    p.counts = {{0, 0, 0, 900}, {0, 0, 1, 10}, {0, 3, 1, 700}, {1, 2, 0, 1}};
    p.coactivation = {{0, 0, 0, 3, 5}, {0, 0, 1, 2, 7}, {0, 3, 1, 2, 1}};
    p.positions = {{0, 0, 0.5, -0.25, 1.0, 0, true},
                   {0, 3, -1.0, 0.0, 0.125, 1, true},
                   {1, 2, 0.0, 0.0, 0.0, std::nullopt, false}};
    return p;
}

} // namespace

TEST(AtlasStore, SavedProbeReadsBackRowForRowInOneTransaction) {
    TempDir t;
    auto db = Storage::open((t.path() / "c.db").string()).value();
    const int64_t m = db->modelId("m", "/m").value();
    AtlasStore atlas(*db);
    EXPECT_FALSE(atlas.newestProbe(m).value().has_value());
    EXPECT_EQ(atlas.probeCount(m).value(), 0);
    const uint64_t before = db->commits();
    const AtlasProbe p = sampleProbe();
    auto id = atlas.saveProbe(m, p);
    ASSERT_TRUE(id.isOk()) << id.status().message();
    EXPECT_GT(id.value(), 0);
    EXPECT_EQ(db->commits(), before + 1); // one transaction for every row

    auto back = atlas.newestProbe(m);
    ASSERT_TRUE(back.isOk()) << back.status().message();
    ASSERT_TRUE(back.value().has_value());
    const AtlasProbe& q = *back.value();
    EXPECT_EQ(q.id, id.value());
    EXPECT_EQ(q.topicSet, p.topicSet);
    EXPECT_EQ(q.topicSetSha256, p.topicSetSha256);
    EXPECT_EQ(q.createdMs, 1000);
    EXPECT_EQ(q.nLayers, 2);
    EXPECT_EQ(q.nExperts, 4);
    EXPECT_EQ(q.topK, 2);
    ASSERT_EQ(q.topics.size(), 2u);
    EXPECT_EQ(q.topics[1].name, "python");
    EXPECT_EQ(q.topics[1].label, "Python");
    EXPECT_EQ(q.topics[1].prompts, 21);
    EXPECT_EQ(q.topics[1].tokens, 2500);
    ASSERT_EQ(q.counts.size(), p.counts.size());
    for (size_t i = 0; i < p.counts.size(); ++i) {
        EXPECT_EQ(q.counts[i].layer, p.counts[i].layer);
        EXPECT_EQ(q.counts[i].expert, p.counts[i].expert);
        EXPECT_EQ(q.counts[i].topic, p.counts[i].topic);
        EXPECT_EQ(q.counts[i].routedSlots, p.counts[i].routedSlots);
    }
    ASSERT_EQ(q.coactivation.size(), p.coactivation.size());
    for (size_t i = 0; i < p.coactivation.size(); ++i) {
        EXPECT_EQ(q.coactivation[i].layerB, p.coactivation[i].layerB);
        EXPECT_EQ(q.coactivation[i].expertB, p.coactivation[i].expertB);
        EXPECT_EQ(q.coactivation[i].count, p.coactivation[i].count);
    }
    ASSERT_EQ(q.positions.size(), 3u);
    EXPECT_EQ(q.positions[0].x, 0.5); // REAL keeps the double's bits
    EXPECT_EQ(q.positions[0].y, -0.25);
    EXPECT_EQ(q.positions[1].dominantTopic, std::optional<int>(1));
    EXPECT_FALSE(q.positions[2].dominantTopic.has_value());
    EXPECT_FALSE(q.positions[2].specialist);
    EXPECT_TRUE(q.positions[0].specialist);
}

TEST(AtlasStore, NewestProbeOfTheModelWins) {
    TempDir t;
    auto db = Storage::open((t.path() / "c.db").string()).value();
    const int64_t m = db->modelId("m", "/m").value();
    const int64_t other = db->modelId("o", "/o").value();
    AtlasStore atlas(*db);
    AtlasProbe old = sampleProbe();
    old.createdMs = 500;
    old.topicSet = "old";
    AtlasProbe fresh = sampleProbe();
    fresh.createdMs = 2000;
    fresh.topicSet = "fresh";
    AtlasProbe foreign = sampleProbe();
    foreign.createdMs = 9000;
    foreign.topicSet = "other model";
    ASSERT_TRUE(atlas.saveProbe(m, fresh).isOk());
    ASSERT_TRUE(atlas.saveProbe(m, old).isOk()); // saved later, but older
    ASSERT_TRUE(atlas.saveProbe(other, foreign).isOk());
    EXPECT_EQ(atlas.newestProbe(m).value()->topicSet, "fresh");
    EXPECT_EQ(atlas.newestProbe(other).value()->topicSet, "other model");
    EXPECT_EQ(atlas.probeCount(m).value(), 2);
    // Same time: the later saved (larger id) is the newer.
    AtlasProbe again = fresh;
    again.topicSet = "again";
    ASSERT_TRUE(atlas.saveProbe(m, again).isOk());
    EXPECT_EQ(atlas.newestProbe(m).value()->topicSet, "again");
}

TEST(AtlasStore, BadRowsAreRefusedByNameAndNothingIsWritten) {
    TempDir t;
    auto db = Storage::open((t.path() / "c.db").string()).value();
    const int64_t m = db->modelId("m", "/m").value();
    AtlasStore atlas(*db);
    auto refused = [&](AtlasProbe p, const std::string& words) {
        auto r = atlas.saveProbe(m, p);
        ASSERT_FALSE(r.isOk()) << words;
        EXPECT_EQ(r.status().code(), ErrorCode::InvalidArgument) << r.status().message();
        EXPECT_NE(r.status().message().find(words), std::string::npos) << r.status().message();
        EXPECT_NE(r.status().message().find("c.db"), std::string::npos) << r.status().message();
    };
    AtlasProbe p = sampleProbe();
    p.counts.push_back({2, 0, 0, 1});
    refused(p, "layer 2 expert 0 is outside the model");
    p = sampleProbe();
    p.counts[0].topic = 5;
    refused(p, "names topic 5 of 2");
    p = sampleProbe();
    p.coactivation[0] = {0, 3, 0, 0, 5};
    refused(p, "not in (layer, expert) order");
    p = sampleProbe();
    p.coactivation[0].count = 0;
    refused(p, "count below 1");
    p = sampleProbe();
    p.positions[0].x = std::numeric_limits<double>::quiet_NaN();
    refused(p, "not finite");
    p = sampleProbe();
    p.positions[1].dominantTopic = 2;
    refused(p, "dominant topic 2 of 2");
    p = sampleProbe();
    p.positions.push_back(p.positions[0]);
    refused(p, "layer 0 expert 0 given twice");
    p = sampleProbe();
    p.topics.clear();
    refused(p, "no topics");
    EXPECT_EQ(atlas.probeCount(m).value(), 0);

    auto missing = atlas.saveProbe(m + 100, sampleProbe());
    ASSERT_FALSE(missing.isOk());
    EXPECT_EQ(missing.status().code(), ErrorCode::NotFound);
    EXPECT_EQ(atlas.probeCount(m + 100).value(), 0);
}

TEST(AtlasStore, DeletingTheModelDeletesItsProbes) {
    TempDir t;
    const std::string path = (t.path() / "c.db").string();
    auto db = Storage::open(path).value();
    const int64_t m = db->modelId("m", "/m").value();
    AtlasStore atlas(*db);
    ASSERT_TRUE(atlas.saveProbe(m, sampleProbe()).isOk());
    storage_test::RawDb raw(path);
    ASSERT_EQ(
        raw.exec("PRAGMA foreign_keys = ON; DELETE FROM models WHERE id = " + std::to_string(m)),
        SQLITE_OK);
    EXPECT_EQ(raw.queryInt("SELECT count(*) FROM atlas_positions"), 0);
    EXPECT_EQ(raw.queryInt("SELECT count(*) FROM atlas_counts"), 0);
    EXPECT_FALSE(atlas.newestProbe(m).value().has_value());
}
