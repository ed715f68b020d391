// User pins and pin exclusions (storage/user_pins.h, schema v3): round trips per model, the
// application order (oldest first), one transaction per call, errors naming the file, a locked
// database, and `coli usage reset` forgetting exclusions but keeping user pins.
#include "storage/database.h"
#include "storage/user_pins.h"
#include "storage_test_util.h"

using namespace coli::storage;
using coli::ErrorCode;
using storage_test::RawDb;
using storage_test::TempDir;

namespace {

std::unique_ptr<Storage> openOk(const std::string& path, const OpenOptions& o = {}) {
    auto st = Storage::open(path, o);
    EXPECT_TRUE(st.isOk()) << st.status().toString();
    return st.isOk() ? std::move(st.value()) : nullptr;
}

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

} // namespace

TEST(UserPins, RoundTripPerModelOldestFirst) {
    TempDir t;
    auto db = openOk(t.file("c.db"));
    ASSERT_TRUE(db);
    UserPinStore pins(*db);
    const int64_t m = db->modelId("m", "/m").value();
    const int64_t o = db->modelId("o", "/o").value();
    EXPECT_EQ(pins.pin(m, 3, 7, 2000).value(), true);
    EXPECT_EQ(pins.pin(m, 1, 2, 1000).value(), true);
    EXPECT_EQ(pins.pin(m, 1, 2, 5000).value(), false); // already: keeps its time
    EXPECT_EQ(pins.pin(o, 0, 0).value(), true);
    EXPECT_EQ(pins.exclude(m, 2, 4, 3000).value(), true);
    EXPECT_EQ(pins.exclude(m, 0, 9, 4000).value(), true);
    EXPECT_EQ(pins.exclude(m, 0, 9).value(), false);
    const UserPinLists l = pins.load(m).value();
    EXPECT_EQ(l.pins, (std::vector<PinnedExpert>{{1, 2, 1000}, {3, 7, 2000}}));
    EXPECT_EQ(l.exclusions, (std::vector<PinnedExpert>{{0, 9, 4000}, {2, 4, 3000}}));
    const UserPinLists lo = pins.load(o).value();
    ASSERT_EQ(lo.pins.size(), 1u);
    EXPECT_GT(lo.pins[0].createdMs, 0); // 0 = now
    EXPECT_TRUE(lo.exclusions.empty());
    EXPECT_TRUE(pins.load(12345).value().pins.empty()); // an unknown model has none

    EXPECT_EQ(pins.unpin(m, 3, 7).value(), true);
    EXPECT_EQ(pins.unpin(m, 3, 7).value(), false);
    EXPECT_EQ(pins.load(m).value().pins, (std::vector<PinnedExpert>{{1, 2, 1000}}));
    EXPECT_EQ(pins.resetExclusions(m).value(), 2);
    EXPECT_TRUE(pins.load(m).value().exclusions.empty());
    EXPECT_EQ(pins.load(m).value().pins.size(), 1u); // reset touches exclusions only
}

TEST(UserPins, EachCallIsOneTransaction) {
    TempDir t;
    auto db = openOk(t.file("c.db"));
    ASSERT_TRUE(db);
    UserPinStore pins(*db);
    const int64_t m = db->modelId("m", "/m").value();
    uint64_t before = db->commits();
    ASSERT_TRUE(pins.pin(m, 0, 1).isOk());
    EXPECT_EQ(db->commits() - before, 1u);
    before = db->commits();
    ASSERT_TRUE(pins.exclude(m, 0, 2).isOk());
    EXPECT_EQ(db->commits() - before, 1u);
    before = db->commits();
    ASSERT_TRUE(pins.unpin(m, 0, 1).isOk());
    EXPECT_EQ(db->commits() - before, 1u);
    before = db->commits();
    ASSERT_TRUE(pins.resetExclusions(m).isOk());
    EXPECT_EQ(db->commits() - before, 1u);
}

TEST(UserPins, BadArgumentsNameTheFileAndWriteNothing) {
    TempDir t;
    const std::string path = t.file("c.db");
    auto db = openOk(path);
    ASSERT_TRUE(db);
    UserPinStore pins(*db);
    const int64_t m = db->modelId("m", "/m").value();
    auto neg = pins.pin(m, -1, 2);
    ASSERT_FALSE(neg.isOk());
    EXPECT_EQ(neg.status().code(), ErrorCode::InvalidArgument);
    EXPECT_TRUE(contains(neg.status().message(), path)) << neg.status().message();
    EXPECT_EQ(pins.exclude(m, 0, -3).status().code(), ErrorCode::InvalidArgument);
    EXPECT_EQ(pins.unpin(m, -1, 0).status().code(), ErrorCode::InvalidArgument);
    auto unknown = pins.pin(m + 100, 0, 0);
    ASSERT_FALSE(unknown.isOk());
    EXPECT_EQ(unknown.status().code(), ErrorCode::NotFound);
    EXPECT_TRUE(contains(unknown.status().message(), path));
    EXPECT_EQ(pins.resetExclusions(m + 100).status().code(), ErrorCode::NotFound);
    const UserPinLists l = pins.load(m).value();
    EXPECT_TRUE(l.pins.empty());
    EXPECT_TRUE(l.exclusions.empty());
}

TEST(UserPins, LockedDatabaseGivesIoAndRecovers) {
    TempDir t;
    const std::string path = t.file("c.db");
    OpenOptions o;
    o.busyTimeoutMs = 100;
    auto db = openOk(path, o);
    ASSERT_TRUE(db);
    UserPinStore pins(*db);
    const int64_t m = db->modelId("m", "/m").value();
    {
        RawDb other(path);
        ASSERT_EQ(other.exec("BEGIN EXCLUSIVE; DELETE FROM file_hashes;"), SQLITE_OK);
        auto r = pins.pin(m, 1, 1);
        ASSERT_FALSE(r.isOk());
        EXPECT_EQ(r.status().code(), ErrorCode::Io);
        EXPECT_TRUE(contains(r.status().message(), path)) << r.status().message();
        EXPECT_TRUE(contains(r.status().message(), "locked")) << r.status().message();
        EXPECT_EQ(other.exec("COMMIT"), SQLITE_OK);
    }
    EXPECT_TRUE(pins.pin(m, 1, 1).value());
}

TEST(UserPins, ResetUsageForgetsExclusionsButKeepsUserPins) {
    TempDir t;
    auto db = openOk(t.file("c.db"));
    ASSERT_TRUE(db);
    UserPinStore pins(*db);
    const int64_t m = db->modelId("m", "/m").value();
    ASSERT_TRUE(pins.pin(m, 0, 1).isOk());
    ASSERT_TRUE(pins.exclude(m, 0, 2).isOk());
    ASSERT_EQ(db->resetUsage(m).value(), 1);
    const UserPinLists l = pins.load(m).value();
    EXPECT_EQ(l.pins.size(), 1u);
    EXPECT_TRUE(l.exclusions.empty());
}
