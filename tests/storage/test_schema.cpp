// Schema migrations: from an empty file, from the checked-in v1 ... v6 fixtures (each older
// one upgraded to the current version keeping its rows), the mechanism taking a file to a
// (test-only) next version, a failing step rolled back, a newer file refused untouched, missing
// columns and search triggers refused.
#include "storage/database.h"
#include "storage/downloads.h"
#include "storage/migrations.h"
#include "storage/schema.h"
#include "storage/sessions.h"
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
    // One transaction per migration step.
    EXPECT_EQ(st.value()->commits(), uint64_t(kSchemaVersion));
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

TEST(Schema, V1FixtureIsUpgradedToV2WithEmptySessionTables) {
    TempDir t;
    const std::string path = t.file("v1.db");
    loadDump(path, fixtureSql("v1.sql"));
    {
        auto st = Storage::open(path);
        ASSERT_TRUE(st.isOk()) << st.status().toString();
        EXPECT_EQ(st.value()->commits(), 5u); // the v2 ... v6 steps, one transaction each
    }
    RawDb raw(path);
    EXPECT_EQ(raw.queryInt("PRAGMA user_version"), kSchemaVersion);
    EXPECT_EQ(raw.queryInt("PRAGMA application_id"), kApplicationId);
    // Every v1 row is kept.
    EXPECT_EQ(raw.queryInt("SELECT count(*) FROM models"), 2);
    EXPECT_EQ(raw.queryInt("SELECT count(*) FROM expert_usage"), 5);
    EXPECT_EQ(raw.queryInt("SELECT count(*) FROM pins"), 2);
    EXPECT_EQ(raw.queryInt("SELECT count(*) FROM file_hashes"), 1);
    EXPECT_EQ(raw.queryInt("SELECT sum(heat) FROM expert_usage WHERE model = 1"), 65);
    // The v2 tables exist and are empty, the search indexes consistent.
    for (const char* table :
         {"sessions", "messages", "runs", "app_state", "sessions_fts", "messages_fts"}) {
        EXPECT_EQ(raw.queryInt(std::string("SELECT count(*) FROM ") + table), 0) << table;
    }
    std::string err;
    EXPECT_EQ(raw.exec("INSERT INTO messages_fts(messages_fts) VALUES('integrity-check');"
                       "INSERT INTO sessions_fts(sessions_fts) VALUES('integrity-check');",
                       &err),
              SQLITE_OK)
        << err;
    EXPECT_EQ(raw.queryInt("SELECT count(*) FROM sqlite_master WHERE type = 'trigger'"), 6);
    // And the upgraded file is usable for sessions.
    auto st = Storage::open(path);
    ASSERT_TRUE(st.isOk()) << st.status().toString();
    EXPECT_EQ(st.value()->commits(), 0u);
    SessionStore sessions(*st.value());
    SessionInfo chat;
    chat.title = "first chat";
    auto id = sessions.createSession(chat);
    ASSERT_TRUE(id.isOk()) << id.status().toString();
    auto hits = sessions.searchSessions("first");
    ASSERT_TRUE(hits.isOk()) << hits.status().toString();
    ASSERT_EQ(hits.value().size(), 1u);
    EXPECT_EQ(hits.value()[0].session, id.value());
}

TEST(Schema, CheckedInV2FixtureOpensValidatesAndReads) {
    TempDir t;
    const std::string path = t.file("v2.db");
    loadDump(path, fixtureSql("v2.sql"));
    auto st = Storage::open(path);
    ASSERT_TRUE(st.isOk()) << st.status().toString();
    EXPECT_EQ(st.value()->commits(), 4u); // the v3, v4, v5 and v6 steps
    Storage& db = *st.value();
    auto heat = db.loadHeat(1);
    ASSERT_TRUE(heat.isOk());
    EXPECT_EQ(heat.value().size(), 2u);
    SessionStore sessions(db);
    auto list = sessions.listSessions();
    ASSERT_TRUE(list.isOk()) << list.status().toString();
    ASSERT_EQ(list.value().size(), 2u);
    // Most recently updated first.
    const SessionInfo& sorting = list.value()[0];
    EXPECT_EQ(sorting.id, 2);
    EXPECT_EQ(sorting.title, "Sorting in C++");
    EXPECT_EQ(sorting.messageCount, 2);
    EXPECT_EQ(sorting.sampling, SamplingSettings{});
    EXPECT_FALSE(sorting.seed.has_value());
    const SessionInfo& creme = list.value()[1];
    EXPECT_EQ(creme.title, "Crème brûlée recipe");
    EXPECT_EQ(creme.modelPath, "/models/mixtral-tiny");
    EXPECT_EQ(creme.createdMs, 1764547200000);
    EXPECT_EQ(creme.updatedMs, 1764547265000);
    EXPECT_EQ(creme.systemPrompt, "You are a pastry chef.");
    EXPECT_EQ(creme.sampling.temperature, 0.7);
    EXPECT_EQ(creme.sampling.topK, 40);
    EXPECT_EQ(creme.sampling.maxNewTokens, 256);
    EXPECT_FALSE(creme.sampling.topP.has_value());
    EXPECT_EQ(creme.seed, 42u);
    EXPECT_EQ(creme.messageCount, 4);

    auto msgs = sessions.loadMessages(1);
    ASSERT_TRUE(msgs.isOk()) << msgs.status().toString();
    ASSERT_EQ(msgs.value().size(), 4u);
    EXPECT_EQ(msgs.value()[1].role, Role::Assistant);
    EXPECT_EQ(msgs.value()[1].text.substr(0, 8), "<think>\n");
    EXPECT_EQ(msgs.value()[1].stopReason, StopReason::Eos);
    EXPECT_EQ(msgs.value()[1].run, 1);
    EXPECT_FALSE(msgs.value()[3].stopReason.has_value()); // still streaming when saved
    EXPECT_FALSE(msgs.value()[2].sampling.has_value());
    auto code = sessions.loadMessages(2);
    ASSERT_TRUE(code.isOk());
    ASSERT_EQ(code.value().size(), 2u);
    EXPECT_EQ(code.value()[1].seed, 9301275439245913091u); // above 2^63: stored as its 64 bits
    EXPECT_EQ(code.value()[1].stopReason, StopReason::MaxTokens);
    EXPECT_EQ(code.value()[1].sampling->temperature, 0.0);

    auto runs = sessions.loadRuns(1);
    ASSERT_TRUE(runs.isOk()) << runs.status().toString();
    ASSERT_EQ(runs.value().size(), 1u);
    const RunRecord& r = runs.value()[0];
    EXPECT_EQ(r.generatedTokens, 120);
    EXPECT_EQ(r.tokensPerSecond, 18.5);
    EXPECT_EQ(r.split.expertFfnS, 3.0);
    EXPECT_EQ(r.tiers.bytesRead, 13841203200u);
    EXPECT_DOUBLE_EQ(r.expertHitRate(), (6144.0 + 20480 - 1024) / 30720);
    // Saved before the prompt's part was stored: the whole turn's figure, no prompt figure.
    EXPECT_FALSE(r.tiers.prefill.has_value());
    EXPECT_DOUBLE_EQ(r.mibReadPerDecodeToken(), 13841203200.0 / 1048576 / 162);
    EXPECT_EQ(r.mibReadPerPromptToken(), -1.0);

    auto last = sessions.lastSessionId();
    ASSERT_TRUE(last.isOk());
    EXPECT_EQ(last.value(), 2);
    // The search indexes were filled by the triggers as the dump's rows went in.
    auto hits = sessions.searchSessions("creme brulee");
    ASSERT_TRUE(hits.isOk()) << hits.status().toString();
    ASSERT_EQ(hits.value().size(), 1u);
    EXPECT_EQ(hits.value()[0].session, 1);
    auto fence = sessions.searchSessions("std::sort");
    ASSERT_TRUE(fence.isOk());
    ASSERT_EQ(fence.value().size(), 1u);
    EXPECT_EQ(fence.value()[0].session, 2);
}

TEST(Schema, V2FixtureIsUpgradedToV3KeepingEveryRow) {
    TempDir t;
    const std::string path = t.file("v2.db");
    loadDump(path, fixtureSql("v2.sql"));
    RawDb before(path);
    const auto count = [](RawDb& db, const char* table) {
        return db.queryInt(std::string("SELECT count(*) FROM ") + table);
    };
    const char* v2Tables[] = {"models",       "expert_usage", "pins", "file_hashes",
                              "sessions",     "messages",     "runs", "app_state",
                              "sessions_fts", "messages_fts"};
    std::vector<int64_t> rows;
    for (const char* table : v2Tables)
        rows.push_back(count(before, table));
    {
        auto st = Storage::open(path);
        ASSERT_TRUE(st.isOk()) << st.status().toString();
        EXPECT_EQ(st.value()->commits(), 4u); // v3, v4, v5 and v6
    }
    RawDb raw(path);
    EXPECT_EQ(raw.queryInt("PRAGMA user_version"), kSchemaVersion);
    for (size_t i = 0; i < std::size(v2Tables); ++i)
        EXPECT_EQ(count(raw, v2Tables[i]), rows[i]) << v2Tables[i];
    for (const char* table : {"user_pins", "pin_exclusions", "atlas_probes", "atlas_topics",
                              "atlas_counts", "atlas_coactivation", "atlas_positions"})
        EXPECT_EQ(count(raw, table), 0) << table;
    // The new tables take rows, and their foreign keys cascade from the model.
    std::string err;
    EXPECT_EQ(raw.exec("PRAGMA foreign_keys = ON;"
                       "INSERT INTO user_pins VALUES(1, 0, 3, 1);"
                       "INSERT INTO atlas_probes VALUES(7, 1, 'x', 'y', 1, 6, 16, 2);"
                       "INSERT INTO atlas_positions VALUES(7, 0, 3, 0, 0, 0, NULL, 0);"
                       "DELETE FROM models WHERE id = 1;",
                       &err),
              SQLITE_OK)
        << err;
    EXPECT_EQ(count(raw, "user_pins"), 0);
    EXPECT_EQ(count(raw, "atlas_positions"), 0);
    // A co-activation pair is stored once, in (layer, expert) order.
    EXPECT_NE(raw.exec("INSERT INTO atlas_probes VALUES(8, 2, 'x', 'y', 1, 6, 16, 2);"
                       "INSERT INTO atlas_coactivation VALUES(8, 1, 0, 0, 5, 3);"),
              SQLITE_OK);
}

TEST(Schema, CheckedInV3FixtureOpensValidatesAndReads) {
    TempDir t;
    const std::string path = t.file("v3.db");
    loadDump(path, fixtureSql("v3.sql"));
    auto st = Storage::open(path);
    ASSERT_TRUE(st.isOk()) << st.status().toString();
    EXPECT_EQ(st.value()->commits(), 3u); // the v4, v5 and v6 steps
    Storage& db = *st.value();
    auto heat = db.loadHeat(1);
    ASSERT_TRUE(heat.isOk());
    EXPECT_EQ(heat.value().size(), 2u);
    SessionStore sessions(db);
    auto list = sessions.listSessions();
    ASSERT_TRUE(list.isOk()) << list.status().toString();
    EXPECT_EQ(list.value().size(), 2u);
    RawDb raw(path);
    EXPECT_EQ(raw.queryInt("SELECT count(*) FROM user_pins WHERE model = 1"), 2);
    EXPECT_EQ(raw.queryInt("SELECT count(*) FROM pin_exclusions"), 1);
    EXPECT_EQ(raw.queryInt("SELECT sum(slots) FROM atlas_counts WHERE probe = 1"), 3340);
    EXPECT_EQ(raw.queryInt("SELECT count(*) FROM atlas_positions WHERE dominant_topic IS NULL"), 1);
    EXPECT_EQ(raw.queryInt("SELECT top_k FROM atlas_probes WHERE id = 1"), 2);
}

TEST(Schema, V1V2V3FixturesAreUpgradedToV4KeepingEveryRow) {
    const auto count = [](RawDb& db, const std::string& table) {
        return db.queryInt("SELECT count(*) FROM " + table);
    };
    for (const char* name : {"v1.sql", "v2.sql", "v3.sql"}) {
        SCOPED_TRACE(name);
        TempDir t;
        const std::string path = t.file("old.db");
        loadDump(path, fixtureSql(name));
        std::vector<std::pair<std::string, int64_t>> rows;
        {
            RawDb before(path);
            sqlite3_stmt* s = nullptr;
            ASSERT_EQ(sqlite3_prepare_v2(before.get(),
                                         "SELECT name FROM sqlite_master WHERE type = 'table' AND "
                                         "name NOT LIKE 'sqlite_%' AND name NOT LIKE '%fts_%'",
                                         -1, &s, nullptr),
                      SQLITE_OK);
            std::vector<std::string> tables;
            while (sqlite3_step(s) == SQLITE_ROW)
                tables.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)));
            sqlite3_finalize(s);
            ASSERT_FALSE(tables.empty());
            for (const auto& table : tables)
                rows.emplace_back(table, count(before, table));
        }
        {
            auto st = Storage::open(path);
            ASSERT_TRUE(st.isOk()) << st.status().toString();
        }
        RawDb raw(path);
        EXPECT_EQ(raw.queryInt("PRAGMA user_version"), kSchemaVersion);
        for (const auto& [table, n] : rows)
            EXPECT_EQ(count(raw, table), n) << table;
        EXPECT_EQ(count(raw, "downloads"), 0);
        EXPECT_EQ(count(raw, "download_files"), 0);
        // The new tables take rows; a download's files go with it.
        std::string err;
        EXPECT_EQ(raw.exec("PRAGMA foreign_keys = ON;"
                           "INSERT INTO downloads VALUES(1, 'o/n', 'main', 'c', 'e', '/d', '[]', "
                           "'active', '', 1, 1);"
                           "INSERT INTO download_files VALUES(1, 'a.json', 3, 'b', NULL, '', 0, "
                           "'pending');"
                           "DELETE FROM downloads WHERE id = 1;",
                           &err),
                  SQLITE_OK)
            << err;
        EXPECT_EQ(count(raw, "download_files"), 0);
        // A state outside the list, includes that are not a JSON array, a second record of one
        // folder: refused.
        EXPECT_NE(raw.exec("INSERT INTO downloads VALUES(2, 'o/n', 'main', 'c', 'e', '/d', '[]', "
                           "'running', '', 1, 1);"),
                  SQLITE_OK);
        EXPECT_NE(raw.exec("INSERT INTO downloads VALUES(2, 'o/n', 'main', 'c', 'e', '/d', '{}', "
                           "'active', '', 1, 1);"),
                  SQLITE_OK);
        EXPECT_EQ(raw.exec("INSERT INTO downloads VALUES(2, 'o/n', 'main', 'c', 'e', '/d', '[]', "
                           "'active', '', 1, 1);"),
                  SQLITE_OK);
        EXPECT_NE(raw.exec("INSERT INTO downloads VALUES(3, 'o/m', 'main', 'c', 'e', '/d', '[]', "
                           "'active', '', 1, 1);"),
                  SQLITE_OK);
    }
}

TEST(Schema, CheckedInV4FixtureOpensValidatesAndReads) {
    TempDir t;
    const std::string path = t.file("v4.db");
    loadDump(path, fixtureSql("v4.sql"));
    auto st = Storage::open(path);
    ASSERT_TRUE(st.isOk()) << st.status().toString();
    EXPECT_EQ(st.value()->commits(), 2u); // the v5 and v6 steps
    DownloadStore downloads(*st.value());
    auto unfinished = downloads.list(true);
    ASSERT_TRUE(unfinished.isOk()) << unfinished.status().toString();
    ASSERT_EQ(unfinished.value().size(), 1u);
    EXPECT_EQ(unfinished.value()[0].repo, "allenai/OLMoE-1B-7B-0924");
    EXPECT_EQ(unfinished.value()[0].state, DownloadState::Paused);
    auto rec = downloads.findByDir("/data/models/qwen3");
    ASSERT_TRUE(rec.isOk()) << rec.status().toString();
    ASSERT_TRUE(rec.value().has_value());
    EXPECT_EQ(rec.value()->revision, "v1.0");
    EXPECT_EQ(rec.value()->commit, "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567");
    EXPECT_EQ(rec.value()->includes,
              (std::vector<std::string>{"*.json", "model-0000[1-2]-*.safetensors"}));
    EXPECT_EQ(rec.value()->state, DownloadState::Done);
    auto paused = downloads.findByDir(unfinished.value()[0].dir);
    ASSERT_TRUE(paused.isOk());
    ASSERT_EQ(paused.value()->files.size(), 3u);
    const DownloadFileRecord& half = paused.value()->files[1];
    EXPECT_EQ(half.path, "model-00001-of-00003.safetensors");
    EXPECT_EQ(half.size, 4997184512u);
    EXPECT_EQ(half.bytesDone, 2147483648u);
    EXPECT_EQ(half.etag, "\"cdn-0f1e2d3c4b5a6978\"");
    EXPECT_EQ(half.lfsSha256.size(), 64u);
    EXPECT_EQ(half.state, DownloadFileState::Pending);
    EXPECT_TRUE(paused.value()->files[0].lfsSha256.empty());
    EXPECT_EQ(paused.value()->files[0].state, DownloadFileState::Done);
}

TEST(Schema, V4FixtureIsUpgradedToV5WithThePromptPartUnknown) {
    TempDir t;
    const std::string path = t.file("v4.db");
    loadDump(path, fixtureSql("v4.sql"));
    {
        auto st = Storage::open(path);
        ASSERT_TRUE(st.isOk()) << st.status().toString();
        SessionStore sessions(*st.value());
        auto runs = sessions.loadRuns(2);
        ASSERT_TRUE(runs.isOk()) << runs.status().toString();
        ASSERT_EQ(runs.value().size(), 1u);
        const RunRecord& r = runs.value()[0];
        EXPECT_EQ(r.tiers.bytesRead, 146800640000u); // every counter kept
        EXPECT_FALSE(r.tiers.prefill.has_value());   // the old run's prompt part: unknown
        EXPECT_DOUBLE_EQ(r.mibReadPerDecodeToken(), 146800640000.0 / 1048576 / 352);
        EXPECT_EQ(r.mibReadPerPromptToken(), -1.0);
    }
    RawDb raw(path);
    EXPECT_EQ(raw.queryInt("PRAGMA user_version"), kSchemaVersion);
    EXPECT_EQ(raw.queryInt("SELECT count(*) FROM runs WHERE prefill_bytes_read IS NULL AND "
                           "prefill_tier_tokens IS NULL"),
              2);
    // The new columns refuse negative values, as every counter does.
    EXPECT_NE(raw.exec("UPDATE runs SET prefill_bytes_read = -1 WHERE id = 1"), SQLITE_OK);
    EXPECT_NE(raw.exec("UPDATE runs SET prefill_tier_tokens = -1 WHERE id = 1"), SQLITE_OK);
}

TEST(Schema, CheckedInV5FixtureOpensValidatesAndReads) {
    TempDir t;
    const std::string path = t.file("v5.db");
    loadDump(path, fixtureSql("v5.sql"));
    auto st = Storage::open(path);
    ASSERT_TRUE(st.isOk()) << st.status().toString();
    EXPECT_EQ(st.value()->commits(), 1u); // the v6 step
    SessionStore sessions(*st.value());
    auto first = sessions.loadRuns(1);
    ASSERT_TRUE(first.isOk()) << first.status().toString();
    ASSERT_EQ(first.value().size(), 1u);
    const RunRecord& r1 = first.value()[0];
    ASSERT_TRUE(r1.tiers.prefill.has_value());
    EXPECT_EQ(r1.tiers.prefill->bytesRead, 1073741824u);
    EXPECT_EQ(r1.tiers.prefill->tokens, 42u);
    // 120 decode steps read the rest: (13841203200 - 2^30) bytes.
    EXPECT_DOUBLE_EQ(r1.mibReadPerDecodeToken(), (13841203200.0 - 1073741824) / 1048576 / 120);
    EXPECT_DOUBLE_EQ(r1.mibReadPerPromptToken(), 1024.0 / 42);
    auto second = sessions.loadRuns(2);
    ASSERT_TRUE(second.isOk()) << second.status().toString();
    ASSERT_EQ(second.value().size(), 2u);
    EXPECT_FALSE(second.value()[0].tiers.prefill.has_value());
    const RunRecord& r3 = second.value()[1];
    ASSERT_TRUE(r3.tiers.prefill.has_value());
    EXPECT_EQ(r3.mibReadPerPromptToken(), 0.0); // two prompt tokens, nothing read
    EXPECT_DOUBLE_EQ(r3.mibReadPerDecodeToken(), 1342177280.0 / 1048576 / 20);
}

TEST(Schema, V5FixtureIsUpgradedToV6RecoveringVramHits) {
    TempDir t;
    const std::string path = t.file("v5.db");
    loadDump(path, fixtureSql("v5.sql"));
    {
        // A run a version-5 app saved with a GPU tier: its VRAM hits were counted in `routed`
        // only (routed = pinned + cache + misses + VRAM hits).
        RawDb raw(path);
        ASSERT_EQ(raw.exec("INSERT INTO runs VALUES(4, 1, 1764547300000, 180, 160, 60, 7.25, 0.9, "
                           "0.4, 8.28, 1.2, 5.1, 0.3, 0.03, 1.65, 30720, 2048, 8192, 512, 1024, "
                           "268435456, 96, 640, 512, 80, 33554432, 20)"),
                  SQLITE_OK);
    }
    {
        auto st = Storage::open(path);
        ASSERT_TRUE(st.isOk()) << st.status().toString();
        EXPECT_EQ(st.value()->commits(), 1u); // the v6 step
        SessionStore sessions(*st.value());
        auto runs = sessions.loadRuns(1);
        ASSERT_TRUE(runs.isOk()) << runs.status().toString();
        ASSERT_EQ(runs.value().size(), 2u);
        EXPECT_EQ(runs.value()[0].tiers.hitsVram, 0u); // no GPU tier: every access elsewhere
        const RunRecord& gpu = runs.value()[1];
        EXPECT_EQ(gpu.tiers.hitsVram, 30720u - 2048 - 8192 - 1024); // the rest of routed
        EXPECT_EQ(gpu.tiers.routed, 30720u);                        // every counter kept
        EXPECT_EQ(gpu.tiers.misses, 1024u);
        // Found ready in VRAM or RAM (tiers::hitRate): VRAM + pinned + cache - in flight.
        EXPECT_DOUBLE_EQ(gpu.expertHitRate(), (19456.0 + 2048 + 8192 - 512) / 30720);
        auto others = sessions.loadRuns(2);
        ASSERT_TRUE(others.isOk());
        for (const RunRecord& r : others.value())
            EXPECT_EQ(r.tiers.hitsVram, 0u);
    }
    RawDb raw(path);
    EXPECT_EQ(raw.queryInt("PRAGMA user_version"), kSchemaVersion);
    EXPECT_EQ(raw.queryInt("SELECT count(*) FROM runs"), 4);
    // The new column refuses negative values and NULL, as every counter does.
    EXPECT_NE(raw.exec("UPDATE runs SET hits_vram = -1 WHERE id = 1"), SQLITE_OK);
    EXPECT_NE(raw.exec("UPDATE runs SET hits_vram = NULL WHERE id = 1"), SQLITE_OK);
}

TEST(Schema, CheckedInV6FixtureOpensValidatesAndReads) {
    TempDir t;
    const std::string path = t.file("v6.db");
    loadDump(path, fixtureSql("v6.sql"));
    auto st = Storage::open(path);
    ASSERT_TRUE(st.isOk()) << st.status().toString();
    EXPECT_EQ(st.value()->commits(), 0u); // nothing to migrate
    SessionStore sessions(*st.value());
    auto runs = sessions.loadRuns(1);
    ASSERT_TRUE(runs.isOk()) << runs.status().toString();
    ASSERT_EQ(runs.value().size(), 2u);
    EXPECT_EQ(runs.value()[0].tiers.hitsVram, 0u);
    const RunTierCounters& gpu = runs.value()[1].tiers;
    EXPECT_EQ(gpu.hitsVram, 19456u);
    EXPECT_EQ(gpu.routed, gpu.hitsPinned + gpu.hitsCache + gpu.misses + gpu.hitsVram);
    ASSERT_TRUE(gpu.prefill.has_value());
    EXPECT_EQ(gpu.prefill->tokens, 20u);
    // A run saved again keeps its VRAM hits.
    RunRecord copy = runs.value()[1];
    copy.createdMs = 1764547400000;
    auto id = sessions.addRun(copy);
    ASSERT_TRUE(id.isOk()) << id.status().toString();
    auto again = sessions.loadRuns(1);
    ASSERT_TRUE(again.isOk());
    ASSERT_EQ(again.value().size(), 3u);
    copy.id = id.value();
    EXPECT_EQ(again.value()[2], copy);
}

TEST(Schema, MissingSearchTriggerIsMalformed) {
    TempDir t;
    const std::string path = t.file("broken.db");
    loadDump(path, fixtureSql("v2.sql"));
    {
        RawDb raw(path);
        ASSERT_EQ(raw.exec("DROP TRIGGER messages_fts_update"), SQLITE_OK);
    }
    auto st = Storage::open(path);
    ASSERT_FALSE(st.isOk());
    EXPECT_EQ(st.status().code(), coli::ErrorCode::Malformed);
    EXPECT_NE(st.status().message().find("messages_fts_update"), std::string::npos)
        << st.status().message();
}

TEST(Schema, MechanismTakesTheFileToANextVersionAndKeepsRows) {
    TempDir t;
    const std::string path = t.file("v1.db");
    loadDump(path, fixtureSql("v1.sql"));
    RawDb raw(path);
    const int next = kSchemaVersion + 1;
    std::vector<Migration> steps = schemaMigrations();
    steps.push_back({next, "CREATE TABLE notes(id INTEGER PRIMARY KEY, model INTEGER NOT NULL "
                           "REFERENCES models(id), body TEXT);"
                           "ALTER TABLE models ADD COLUMN note TEXT DEFAULT 'x';"});
    ASSERT_TRUE(applyMigrations(raw.get(), steps, path).isOk());
    EXPECT_EQ(raw.queryInt("PRAGMA user_version"), next);
    EXPECT_EQ(raw.queryInt("SELECT count(*) FROM expert_usage"), 5);
    EXPECT_EQ(raw.queryInt("SELECT count(*) FROM notes"), 0);
    EXPECT_EQ(raw.queryInt("SELECT count(*) FROM models WHERE note = 'x'"), 2);
    // Applying again is a no-op.
    ASSERT_TRUE(applyMigrations(raw.get(), steps, path).isOk());
    EXPECT_EQ(raw.queryInt("PRAGMA user_version"), next);
    // This code knows only kSchemaVersion: the newer file is refused and left as it is.
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
    // Steps up to v1 as released, then a v2 that fails half-way.
    steps.resize(1);
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
