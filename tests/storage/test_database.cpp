// Round trips through the database: models, heat (one transaction per save), pins, reset, the
// file-hash cache, folder creation.
#include "storage/database.h"
#include "storage_test_util.h"

#include <filesystem>

using namespace coli::storage;
using coli::ErrorCode;
using storage_test::RawDb;
using storage_test::TempDir;

namespace {

std::unique_ptr<Storage> openOk(const std::string& path) {
    auto st = Storage::open(path);
    EXPECT_TRUE(st.isOk()) << st.status().toString();
    return st.isOk() ? std::move(st.value()) : nullptr;
}

} // namespace

TEST(Database, OpenCreatesMissingFolders) {
    TempDir t;
    const auto path = t.path() / "a" / "b" / "colibri" / "colibri.db";
    auto db = openOk(path.string());
    ASSERT_TRUE(db);
    EXPECT_TRUE(std::filesystem::is_regular_file(path));
    EXPECT_EQ(db->path(), path.string());
}

TEST(Database, ModelIdGetsOrCreatesAndRecordsThePath) {
    TempDir t;
    auto db = openOk(t.file("c.db"));
    ASSERT_TRUE(db);
    auto a = db->modelId("aaaa", "/m/a");
    auto b = db->modelId("bbbb", "/m/b");
    ASSERT_TRUE(a.isOk() && b.isOk());
    EXPECT_NE(a.value(), b.value());
    auto a2 = db->modelId("aaaa", "/m/a.colibri");
    ASSERT_TRUE(a2.isOk());
    EXPECT_EQ(a2.value(), a.value());
    RawDb raw(t.file("c.db"));
    EXPECT_EQ(raw.queryInt("SELECT count(*) FROM models WHERE path = '/m/a.colibri'"), 1);
    EXPECT_EQ(raw.queryInt("SELECT count(*) FROM models"), 2);
    auto f = db->findModel("bbbb");
    ASSERT_TRUE(f.isOk());
    EXPECT_EQ(f.value(), std::optional<int64_t>(b.value()));
    auto none = db->findModel("cccc");
    ASSERT_TRUE(none.isOk());
    EXPECT_FALSE(none.value().has_value());
    EXPECT_EQ(db->modelId("", "/m").status().code(), ErrorCode::InvalidArgument);
}

TEST(Database, HeatRoundTripUpsertAndTokenClock) {
    TempDir t;
    auto db = openOk(t.file("c.db"));
    ASSERT_TRUE(db);
    const int64_t m = db->modelId("m", "/m").value();
    const int64_t other = db->modelId("o", "/o").value();
    ASSERT_TRUE(db->saveHeat(m, {{1, 2, 3.5}, {0, 7, 1.25}, {0, 1, 0.0}}, 100).isOk());
    ASSERT_TRUE(db->saveHeat(other, {{0, 0, 9.0}}, 5).isOk());
    auto h = db->loadHeat(m);
    ASSERT_TRUE(h.isOk());
    ASSERT_EQ(h.value().size(), 3u);
    EXPECT_EQ(h.value()[0].expert, 1); // sorted by (layer, expert)
    EXPECT_EQ(h.value()[1].expert, 7);
    EXPECT_EQ(h.value()[1].heat, 1.25);
    EXPECT_EQ(h.value()[1].lastSeen, 100);
    EXPECT_EQ(h.value()[2].layer, 1);
    // A later save replaces the experts it names and keeps the others.
    ASSERT_TRUE(db->saveHeat(m, {{0, 7, 6.0}}, 250).isOk());
    h = db->loadHeat(m);
    ASSERT_EQ(h.value().size(), 3u);
    EXPECT_EQ(h.value()[1].heat, 6.0);
    EXPECT_EQ(h.value()[1].lastSeen, 250);
    EXPECT_EQ(h.value()[2].heat, 3.5);
    EXPECT_EQ(h.value()[2].lastSeen, 100);
    EXPECT_EQ(db->tokenClock(m).value(), 250);
    EXPECT_EQ(db->tokenClock(other).value(), 5);
    EXPECT_EQ(db->tokenClock(999).value(), 0);
    EXPECT_TRUE(db->loadHeat(999).value().empty());
    // Another model's history is separate.
    EXPECT_EQ(db->loadHeat(other).value().size(), 1u);
}

TEST(Database, SaveIsOneTransactionWhateverItsSize) {
    TempDir t;
    auto db = openOk(t.file("c.db"));
    ASSERT_TRUE(db);
    const int64_t m = db->modelId("m", "/m").value();
    std::vector<ExpertHeat> big;
    for (int l = 0; l < 48; ++l)
        for (int e = 0; e < 64; ++e)
            big.push_back({l, e, double(l * 64 + e)});
    const uint64_t before = db->commits();
    RawDb raw(t.file("c.db"));
    const int changesBefore = sqlite3_total_changes(raw.get());
    ASSERT_TRUE(db->saveHeat(m, big, 4096).isOk());
    EXPECT_EQ(db->commits() - before, 1u);
    EXPECT_EQ(sqlite3_total_changes(raw.get()), changesBefore); // no write on the other side
    EXPECT_EQ(raw.queryInt("SELECT count(*) FROM expert_usage"), 48 * 64);
    ASSERT_TRUE(db->saveHeat(m, big, 8192).isOk());
    EXPECT_EQ(db->commits() - before, 2u);
}

TEST(Database, InvalidSaveWritesNothing) {
    TempDir t;
    auto db = openOk(t.file("c.db"));
    ASSERT_TRUE(db);
    const int64_t m = db->modelId("m", "/m").value();
    ASSERT_TRUE(db->saveHeat(m, {{0, 0, 1.0}}, 10).isOk());
    const uint64_t before = db->commits();
    EXPECT_EQ(db->saveHeat(m, {{0, 1, 2.0}, {0, -1, 1.0}}, 20).code(), ErrorCode::InvalidArgument);
    EXPECT_EQ(db->saveHeat(m, {{0, 1, 2.0}, {0, 2, -1.0}}, 20).code(), ErrorCode::InvalidArgument);
    EXPECT_EQ(db->saveHeat(m, {{0, 1, std::nan("")}}, 20).code(), ErrorCode::InvalidArgument);
    EXPECT_EQ(db->saveHeat(m, {{0, 1, 1.0}, {0, 1, 2.0}}, 20).code(), ErrorCode::InvalidArgument);
    EXPECT_EQ(db->saveHeat(m, {{0, 1, 1.0}}, -1).code(), ErrorCode::InvalidArgument);
    const coli::Status missing = db->saveHeat(777, {{0, 1, 1.0}}, 20);
    EXPECT_EQ(missing.code(), ErrorCode::NotFound);
    EXPECT_NE(missing.message().find("777"), std::string::npos);
    EXPECT_EQ(db->commits(), before);
    auto h = db->loadHeat(m);
    ASSERT_EQ(h.value().size(), 1u);
    EXPECT_EQ(h.value()[0].heat, 1.0);
}

TEST(Database, HottestUsesDecayedHeatAndBudget) {
    TempDir t;
    auto db = openOk(t.file("c.db"));
    ASSERT_TRUE(db);
    const int64_t m = db->modelId("m", "/m").value();
    ASSERT_TRUE(db->saveHeat(m, {{0, 0, 16.0}, {0, 1, 1.0}}, 0).isOk());
    ASSERT_TRUE(db->saveHeat(m, {{1, 0, 2.0}, {1, 1, 2.0}, {2, 0, 0.5}}, 3000).isOk());
    // At 3000 with half-life 1000: (0,0) 16 -> 2 ties with (1,0) and (1,1); (0,1) -> 0.125.
    auto top = db->hottest(m, 4, 3000, 1000);
    ASSERT_TRUE(top.isOk());
    ASSERT_EQ(top.value().size(), 4u);
    EXPECT_EQ(top.value()[0].layer, 0);
    EXPECT_EQ(top.value()[0].heat, 2.0);
    EXPECT_EQ(top.value()[1].layer, 1);
    EXPECT_EQ(top.value()[1].expert, 0);
    EXPECT_EQ(top.value()[2].expert, 1);
    EXPECT_EQ(top.value()[3].layer, 2);
    EXPECT_EQ(top.value()[3].heat, 0.5);
    EXPECT_EQ(db->hottest(m, 1, 3000, 0).status().code(), ErrorCode::InvalidArgument);
    EXPECT_EQ(db->hottest(m, 1, 3000, std::nan("")).status().code(), ErrorCode::InvalidArgument);
    EXPECT_TRUE(db->hottest(m, 0, 3000).value().empty());
}

TEST(Database, PinsRoundTripAndReplace) {
    TempDir t;
    auto db = openOk(t.file("c.db"));
    ASSERT_TRUE(db);
    const int64_t m = db->modelId("m", "/m").value();
    const int64_t o = db->modelId("o", "/o").value();
    ASSERT_TRUE(db->setPins(m, {{3, 1, PinTier::Ram}, {0, 2, PinTier::Vram}}).isOk());
    ASSERT_TRUE(db->setPins(o, {{0, 0, PinTier::Ram}}).isOk());
    auto p = db->getPins(m);
    ASSERT_TRUE(p.isOk());
    ASSERT_EQ(p.value().size(), 2u);
    EXPECT_EQ(p.value()[0].layer, 0);
    EXPECT_EQ(p.value()[0].tier, PinTier::Vram);
    EXPECT_EQ(p.value()[1].layer, 3);
    EXPECT_EQ(p.value()[1].tier, PinTier::Ram);
    ASSERT_TRUE(db->setPins(m, {{5, 5, PinTier::Ram}}).isOk());
    p = db->getPins(m);
    ASSERT_EQ(p.value().size(), 1u);
    EXPECT_EQ(p.value()[0].layer, 5);
    EXPECT_EQ(db->getPins(o).value().size(), 1u);
    EXPECT_EQ(db->setPins(m, {{1, 1, PinTier::Ram}, {1, 1, PinTier::Vram}}).code(),
              ErrorCode::InvalidArgument);
    EXPECT_EQ(db->setPins(m, {{-1, 1, PinTier::Ram}}).code(), ErrorCode::InvalidArgument);
    EXPECT_EQ(db->setPins(12345, {}).code(), ErrorCode::NotFound);
    EXPECT_EQ(db->getPins(m).value().size(), 1u); // refused calls changed nothing
    ASSERT_TRUE(db->setPins(m, {}).isOk());
    EXPECT_TRUE(db->getPins(m).value().empty());
    EXPECT_STREQ(pinTierName(PinTier::Vram), "vram");
}

TEST(Database, ResetUsageOfOneModelOrAll) {
    TempDir t;
    auto db = openOk(t.file("c.db"));
    ASSERT_TRUE(db);
    const int64_t m = db->modelId("m", "/m").value();
    const int64_t o = db->modelId("o", "/o").value();
    ASSERT_TRUE(db->saveHeat(m, {{0, 0, 1.0}, {0, 1, 1.0}}, 1).isOk());
    ASSERT_TRUE(db->saveHeat(o, {{0, 0, 1.0}}, 1).isOk());
    ASSERT_TRUE(db->setPins(m, {{0, 0, PinTier::Ram}}).isOk());
    ASSERT_TRUE(db->setPins(o, {{0, 0, PinTier::Ram}}).isOk());
    const uint64_t before = db->commits();
    auto r = db->resetUsage(m);
    ASSERT_TRUE(r.isOk());
    EXPECT_EQ(r.value(), 3); // two heat rows and one pin
    EXPECT_EQ(db->commits() - before, 1u);
    EXPECT_TRUE(db->loadHeat(m).value().empty());
    EXPECT_TRUE(db->getPins(m).value().empty());
    EXPECT_EQ(db->loadHeat(o).value().size(), 1u);
    r = db->resetUsage(std::nullopt);
    ASSERT_TRUE(r.isOk());
    EXPECT_EQ(r.value(), 2);
    EXPECT_TRUE(db->loadHeat(o).value().empty());
    EXPECT_TRUE(db->getPins(o).value().empty());
    // The models stay known (same ids afterwards).
    EXPECT_EQ(db->modelId("m", "/m").value(), m);
}

TEST(Database, FileHashCacheMatchesOnlyTheExactStamp) {
    TempDir t;
    auto db = openOk(t.file("c.db"));
    ASSERT_TRUE(db);
    const FileStamp s{"/x/model.safetensors", 1000, 123456789};
    EXPECT_FALSE(db->findHash(s).has_value());
    db->rememberHash(s, std::string(64, 'a'));
    EXPECT_EQ(db->findHash(s), std::optional<std::string>(std::string(64, 'a')));
    EXPECT_FALSE(db->findHash({s.path, 1001, s.mtimeNs}).has_value());
    EXPECT_FALSE(db->findHash({s.path, s.bytes, s.mtimeNs + 1}).has_value());
    ASSERT_TRUE(db->storeFileHash({s.path, 2000, 5}, std::string(64, 'b')).isOk());
    EXPECT_FALSE(db->findHash(s).has_value()); // replaced
    EXPECT_EQ(db->findHash({s.path, 2000, 5}), std::optional<std::string>(std::string(64, 'b')));
}
