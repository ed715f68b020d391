// Failure handling: a garbage or damaged file, another program's database, a locked database, a
// read-only file or folder, a folder that cannot be created. Each gives a Status naming the file
// and the problem, nothing crashes, and an existing file is never changed.
#include "storage/database.h"
#include "storage_test_util.h"

#include <chrono>
#include <filesystem>
#include <sys/stat.h>

using namespace coli::storage;
using coli::ErrorCode;
using storage_test::fileBytes;
using storage_test::RawDb;
using storage_test::TempDir;
namespace fs = std::filesystem;

namespace {

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

// A good database with one model's heat, closed.
void makeGoodDb(const std::string& path) {
    auto st = Storage::open(path);
    ASSERT_TRUE(st.isOk()) << st.status().toString();
    const int64_t m = st.value()->modelId("m", "/m").value();
    ASSERT_TRUE(st.value()->saveHeat(m, {{0, 0, 1.0}, {1, 1, 2.0}}, 10).isOk());
}

void expectStillGood(const std::string& path) {
    auto st = Storage::open(path);
    ASSERT_TRUE(st.isOk()) << st.status().toString();
    auto m = st.value()->findModel("m");
    ASSERT_TRUE(m.isOk() && m.value().has_value());
    EXPECT_EQ(st.value()->loadHeat(*m.value()).value().size(), 2u);
}

} // namespace

TEST(Failures, GarbageFileIsMalformedAndUntouched) {
    TempDir t;
    const std::string path = t.file("colibri.db");
    std::vector<char> garbage(8192);
    for (size_t i = 0; i < garbage.size(); ++i)
        garbage[i] = char((i * 131 + 7) % 251);
    storage_test::writeBytes(path, garbage);
    auto st = Storage::open(path);
    ASSERT_FALSE(st.isOk());
    EXPECT_EQ(st.status().code(), ErrorCode::Malformed);
    EXPECT_TRUE(contains(st.status().message(), path)) << st.status().message();
    EXPECT_TRUE(contains(st.status().message(), "not a SQLite database")) << st.status().message();
    EXPECT_EQ(fileBytes(path), garbage);
}

TEST(Failures, DamagedDatabaseIsMalformedAndUntouched) {
    TempDir t;
    const std::string path = t.file("colibri.db");
    {
        auto st = Storage::open(path);
        ASSERT_TRUE(st.isOk());
        const int64_t m = st.value()->modelId("m", "/m").value();
        std::vector<ExpertHeat> many;
        for (int e = 0; e < 2000; ++e)
            many.push_back({e / 64, e % 64, 1.0 + e});
        ASSERT_TRUE(st.value()->saveHeat(m, many, 1).isOk());
    }
    std::vector<char> bytes = fileBytes(path);
    ASSERT_GT(bytes.size(), 4u * 4096);
    // Scribble over the pages after the first (the header stays valid).
    for (size_t i = 4096 + 100; i < bytes.size(); i += 7)
        bytes[i] = char(0xA5);
    storage_test::writeBytes(path, bytes);
    auto st = Storage::open(path);
    ASSERT_FALSE(st.isOk());
    EXPECT_EQ(st.status().code(), ErrorCode::Malformed);
    EXPECT_TRUE(contains(st.status().message(), path)) << st.status().message();
    EXPECT_EQ(fileBytes(path), bytes);
}

TEST(Failures, AnotherProgramsDatabaseIsRefusedAndUntouched) {
    TempDir t;
    const std::string a = t.file("app.db");
    {
        RawDb raw(a);
        ASSERT_EQ(raw.exec("CREATE TABLE notes(x); INSERT INTO notes VALUES(1);"), SQLITE_OK);
    }
    const auto before = fileBytes(a);
    auto st = Storage::open(a);
    ASSERT_FALSE(st.isOk());
    EXPECT_EQ(st.status().code(), ErrorCode::Malformed);
    EXPECT_TRUE(contains(st.status().message(), "not a Colibri database"));
    EXPECT_EQ(fileBytes(a), before);

    const std::string b = t.file("other.db");
    {
        RawDb raw(b);
        ASSERT_EQ(raw.exec("PRAGMA application_id = 42; PRAGMA user_version = 1;"), SQLITE_OK);
    }
    st = Storage::open(b);
    ASSERT_FALSE(st.isOk());
    EXPECT_EQ(st.status().code(), ErrorCode::Malformed);
    EXPECT_TRUE(contains(st.status().message(), "another program"));
}

TEST(Failures, LockedWhileSavingGivesIoAndRecovers) {
    TempDir t;
    const std::string path = t.file("colibri.db");
    makeGoodDb(path);
    OpenOptions o;
    o.busyTimeoutMs = 100;
    auto st = Storage::open(path, o);
    ASSERT_TRUE(st.isOk()) << st.status().toString();
    Storage& db = *st.value();
    const int64_t m = db.findModel("m").value().value();
    {
        RawDb other(path);
        ASSERT_EQ(other.exec("BEGIN EXCLUSIVE; DELETE FROM file_hashes;"), SQLITE_OK);
        const auto t0 = std::chrono::steady_clock::now();
        const coli::Status s = db.saveHeat(m, {{2, 2, 3.0}}, 20);
        const double waited =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        ASSERT_FALSE(s.isOk());
        EXPECT_EQ(s.code(), ErrorCode::Io);
        EXPECT_TRUE(contains(s.message(), path)) << s.message();
        EXPECT_TRUE(contains(s.message(), "locked")) << s.message();
        EXPECT_GE(waited, 0.09); // it waited for the lock first
        // Reading still works in WAL mode while another connection writes.
        EXPECT_EQ(db.loadHeat(m).value().size(), 2u);
        EXPECT_EQ(other.exec("COMMIT"), SQLITE_OK);
    }
    EXPECT_TRUE(db.saveHeat(m, {{2, 2, 3.0}}, 20).isOk());
    EXPECT_EQ(db.loadHeat(m).value().size(), 3u);
}

TEST(Failures, LockedAtOpenGivesIoAndLeavesTheFile) {
    TempDir t;
    const std::string path = t.file("colibri.db");
    RawDb other(path);
    ASSERT_EQ(other.exec("BEGIN EXCLUSIVE"), SQLITE_OK); // a rollback-journal exclusive lock
    OpenOptions o;
    o.busyTimeoutMs = 50;
    auto st = Storage::open(path, o);
    ASSERT_FALSE(st.isOk());
    EXPECT_EQ(st.status().code(), ErrorCode::Io);
    EXPECT_TRUE(contains(st.status().message(), path)) << st.status().message();
    EXPECT_TRUE(contains(st.status().message(), "locked")) << st.status().message();
    EXPECT_EQ(other.exec("COMMIT"), SQLITE_OK);
    EXPECT_TRUE(Storage::open(path).isOk());
}

TEST(Failures, FolderThatCannotBeCreated) {
    TempDir t;
    storage_test::writeBytes(t.path() / "plainfile", {'x'});
    const std::string path = (t.path() / "plainfile" / "sub" / "colibri.db").string();
    auto st = Storage::open(path);
    ASSERT_FALSE(st.isOk());
    EXPECT_EQ(st.status().code(), ErrorCode::Io);
    EXPECT_TRUE(contains(st.status().message(), path)) << st.status().message();
    EXPECT_TRUE(contains(st.status().message(), "cannot create the folder"));
}

TEST(Failures, PathIsAFolder) {
    TempDir t;
    auto st = Storage::open(t.path().string());
    ASSERT_FALSE(st.isOk());
    EXPECT_EQ(st.status().code(), ErrorCode::InvalidArgument);
    EXPECT_EQ(Storage::open("").status().code(), ErrorCode::InvalidArgument);
}

// The permission cases run as an unprivileged user (root ignores permission bits).
TEST(Failures, ReadOnlyFileIsIoAndUntouched) {
    TempDir t;
    storage_test::makeReachable(t.path());
    const std::string path = t.file("colibri.db");
    makeGoodDb(path);
    ::chmod(path.c_str(), 0444);
    const auto before = fileBytes(path);
    const std::string r = storage_test::runUnprivileged([&]() -> std::string {
        auto st = Storage::open(path);
        if (st.isOk()) return "opened a read-only file";
        if (st.status().code() != ErrorCode::Io) return "code: " + st.status().toString();
        if (!contains(st.status().message(), path) || !contains(st.status().message(), "read-only"))
            return "message: " + st.status().message();
        return "";
    });
    EXPECT_EQ(r, "");
    EXPECT_EQ(fileBytes(path), before);
    ::chmod(path.c_str(), 0644);
    expectStillGood(path);
}

TEST(Failures, ReadOnlyFolderIsIo) {
    TempDir t;
    storage_test::makeReachable(t.path());
    const fs::path ro = t.path() / "ro";
    fs::create_directory(ro);
    const std::string existing = (ro / "good.db").string();
    makeGoodDb(existing);
    ::chmod(existing.c_str(), 0666); // the file itself is writable, its folder is not
    ::chmod(ro.c_str(), 0555);
    const auto before = fileBytes(existing);
    const std::string fresh = (ro / "colibri.db").string();
    const std::string deeper = (ro / "sub" / "colibri.db").string();
    const std::string r = storage_test::runUnprivileged([&]() -> std::string {
        std::string bad;
        for (const std::string& p : {fresh, deeper, existing}) {
            auto st = Storage::open(p);
            if (st.isOk()) {
                bad += p + ": opened in a read-only folder; ";
                continue;
            }
            if (st.status().code() != ErrorCode::Io || !contains(st.status().message(), p))
                bad += st.status().toString() + "; ";
        }
        return bad;
    });
    EXPECT_EQ(r, "");
    ::chmod(ro.c_str(), 0755);
    EXPECT_FALSE(fs::exists(fresh));
    EXPECT_EQ(fileBytes(existing), before);
    expectStillGood(existing);
}
