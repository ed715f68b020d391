// Schema migrations: from an empty file, from the checked-in v1 fixture, the mechanism taking a
// file from v1 to a (test-only) v2, a failing step rolled back, a newer file refused untouched.
#include "storage/database.h"
#include "storage/migrations.h"
#include "storage/schema.h"
#include "storage_test_util.h"

#include <fstream>
#include <sstream>

using namespace coli::storage;
using storage_test::RawDb;
using storage_test::TempDir;

namespace {

std::string fixtureSql(const std::string& name) {
    std::ifstream f(std::string(COLI_SOURCE_DIR) + "/tests/storage/fixtures/" + name);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// A database file made from a checked-in dump, as the sqlite3 CLI would (`sqlite3 f < dump`).
void loadDump(const std::string& path, const std::string& dump) {
    RawDb db(path);
    ASSERT_TRUE(db.ok());
    std::string err;
    ASSERT_EQ(db.exec(dump, &err), SQLITE_OK) << err;
}

} // namespace

TEST(Schema, MigrationsAreNumberedFromOne) {
    const auto& steps = schemaMigrations();
    ASSERT_EQ(int(steps.size()), kSchemaVersion);
    for (size_t i = 0; i < steps.size(); ++i)
        EXPECT_EQ(steps[i].toVersion, int(i) + 1);
}

TEST(Schema, EmptyFileIsMigratedToCurrentVersionWithWalAndForeignKeys) {
    TempDir t;
    const std::string path = t.file("colibri.db");
    { std::ofstream(path).flush(); } // an existing, empty file
    auto st = Storage::open(path);
    ASSERT_TRUE(st.isOk()) << st.status().toString();
    EXPECT_EQ(st.value()->commits(), 1u); // one migration step, one transaction
    RawDb raw(path);
    EXPECT_EQ(raw.queryInt("PRAGMA user_version"), kSchemaVersion);
    EXPECT_EQ(raw.queryInt("PRAGMA application_id"), kApplicationId);
    sqlite3_stmt* s = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(raw.get(), "PRAGMA journal_mode", -1, &s, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
    EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)), "wal");
    sqlite3_finalize(s);
    // Foreign keys are on in the Storage connection: heat for a missing model is refused.
    EXPECT_EQ(st.value()->saveHeat(42, {{0, 0, 1.0}}, 1).code(), coli::ErrorCode::NotFound);
    // Reopening an up-to-date file migrates nothing.
    st.value().reset();
    auto again = Storage::open(path);
    ASSERT_TRUE(again.isOk()) << again.status().toString();
    EXPECT_EQ(again.value()->commits(), 0u);
}

TEST(Schema, CheckedInV1FixtureOpensAndKeepsItsData) {
    TempDir t;
    const std::string path = t.file("v1.db");
    loadDump(path, fixtureSql("v1.sql"));
    auto st = Storage::open(path);
    ASSERT_TRUE(st.isOk()) << st.status().toString();
    Storage& db = *st.value();
    auto id = db.findModel("3f0c6d0d7a1e4c1b8f5e2a9d6b7c8e1f0a2b3c4d5e6f708192a3b4c5d6e7f809");
    ASSERT_TRUE(id.isOk());
    ASSERT_TRUE(id.value().has_value());
    EXPECT_EQ(*id.value(), 1);
    auto heat = db.loadHeat(1);
    ASSERT_TRUE(heat.isOk());
    ASSERT_EQ(heat.value().size(), 4u);
    EXPECT_EQ(heat.value()[2].layer, 1);
    EXPECT_EQ(heat.value()[2].expert, 0);
    EXPECT_EQ(heat.value()[2].heat, 40.0);
    EXPECT_EQ(heat.value()[2].lastSeen, 2048);
    auto clock = db.tokenClock(1);
    ASSERT_TRUE(clock.isOk());
    EXPECT_EQ(clock.value(), 4096);
    // At 6144 with a half-life of 1024: (0,3) and (0,7), 12.5 saved at 4096, decay two
    // half-lives to 3.125 (a tie broken by expert index); (1,0), 40 saved at 2048, four to 2.5.
    auto top = db.hottest(1, 3, 6144, 1024);
    ASSERT_TRUE(top.isOk());
    ASSERT_EQ(top.value().size(), 3u);
    EXPECT_EQ(top.value()[0].expert, 3);
    EXPECT_EQ(top.value()[0].heat, 3.125);
    EXPECT_EQ(top.value()[1].expert, 7);
    EXPECT_EQ(top.value()[1].heat, 3.125);
    EXPECT_EQ(top.value()[2].layer, 1);
    EXPECT_EQ(top.value()[2].heat, 2.5);
    auto pins = db.getPins(1);
    ASSERT_TRUE(pins.isOk());
    ASSERT_EQ(pins.value().size(), 2u);
    EXPECT_EQ(pins.value()[0].expert, 3);
    EXPECT_EQ(pins.value()[0].tier, PinTier::Vram);
    EXPECT_EQ(pins.value()[1].tier, PinTier::Ram);
    auto h = db.findFileHash(
        {"/models/mixtral-tiny/model-00001-of-00003.safetensors", 415832, 1764547200123456789});
    ASSERT_TRUE(h.isOk());
    ASSERT_TRUE(h.value().has_value());
    EXPECT_EQ(h.value()->substr(0, 8), "5d41402a");
}

TEST(Schema, MechanismTakesV1ToV2AndKeepsRows) {
    TempDir t;
    const std::string path = t.file("v1.db");
    loadDump(path, fixtureSql("v1.sql"));
    RawDb raw(path);
    std::vector<Migration> steps = schemaMigrations();
    steps.push_back({2, "CREATE TABLE sessions(id INTEGER PRIMARY KEY, model INTEGER NOT NULL "
                        "REFERENCES models(id), title TEXT);"
                        "ALTER TABLE models ADD COLUMN note TEXT DEFAULT 'x';"});
    ASSERT_TRUE(applyMigrations(raw.get(), steps, path).isOk());
    EXPECT_EQ(raw.queryInt("PRAGMA user_version"), 2);
    EXPECT_EQ(raw.queryInt("SELECT count(*) FROM expert_usage"), 5);
    EXPECT_EQ(raw.queryInt("SELECT count(*) FROM sessions"), 0);
    EXPECT_EQ(raw.queryInt("SELECT count(*) FROM models WHERE note = 'x'"), 2);
    // Applying again is a no-op.
    ASSERT_TRUE(applyMigrations(raw.get(), steps, path).isOk());
    EXPECT_EQ(raw.queryInt("PRAGMA user_version"), 2);
    // This code knows only v1: the v2 file is refused and left as it is.
    const auto before = storage_test::fileBytes(path);
    auto st = Storage::open(path);
    ASSERT_FALSE(st.isOk());
    EXPECT_EQ(st.status().code(), coli::ErrorCode::Unsupported);
    EXPECT_NE(st.status().message().find(path), std::string::npos);
    EXPECT_NE(st.status().message().find("newer"), std::string::npos);
    EXPECT_EQ(storage_test::fileBytes(path), before);
}

TEST(Schema, FailingStepIsRolledBackWhole) {
    TempDir t;
    const std::string path = t.file("v1.db");
    loadDump(path, fixtureSql("v1.sql"));
    RawDb raw(path);
    std::vector<Migration> steps = schemaMigrations();
    steps.push_back({2, "CREATE TABLE sessions(id INTEGER PRIMARY KEY);"
                        "INSERT INTO no_such_table VALUES(1);"});
    const coli::Status s = applyMigrations(raw.get(), steps, path);
    ASSERT_FALSE(s.isOk());
    EXPECT_NE(s.message().find(path), std::string::npos);
    EXPECT_NE(s.message().find("version 2"), std::string::npos) << s.message();
    EXPECT_EQ(raw.queryInt("PRAGMA user_version"), 1);
    EXPECT_EQ(raw.queryInt("SELECT count(*) FROM sqlite_master WHERE name = 'sessions'"), 0);
    EXPECT_EQ(raw.queryInt("SELECT count(*) FROM expert_usage"), 5);
}

TEST(Schema, BadlyNumberedStepsAreRefused) {
    TempDir t;
    RawDb raw(t.file("x.db"));
    std::vector<Migration> steps = {{1, "CREATE TABLE a(x);"}, {3, "CREATE TABLE b(x);"}};
    EXPECT_EQ(applyMigrations(raw.get(), steps, "x.db").code(), coli::ErrorCode::InvalidArgument);
    EXPECT_EQ(raw.queryInt("PRAGMA user_version"), 0);
}

TEST(Schema, MissingColumnAtCurrentVersionIsMalformed) {
    TempDir t;
    const std::string path = t.file("broken.db");
    std::string dump = fixtureSql("v1.sql");
    const std::string col = "    sha256 TEXT NOT NULL);";
    const size_t at = dump.find(col);
    ASSERT_NE(at, std::string::npos);
    dump.replace(at, col.size(), "    other TEXT);");
    // The fixture's row has four values; the broken table still has four columns.
    loadDump(path, dump);
    auto st = Storage::open(path);
    ASSERT_FALSE(st.isOk());
    EXPECT_EQ(st.status().code(), coli::ErrorCode::Malformed);
    EXPECT_NE(st.status().message().find("sha256"), std::string::npos) << st.status().message();
}
