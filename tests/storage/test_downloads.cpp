// Download records (storage/downloads.h, schema v4): a record with its files round-trips, one
// record per folder (a new one replaces the old with its files), file progress and states, the
// unfinished list a restarted app offers, deletion cascading to files, errors naming the file.
#include "storage/database.h"
#include "storage/downloads.h"
#include "storage_test_util.h"

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

DownloadRecord sample(const std::string& dir) {
    DownloadRecord r;
    r.repo = "owner/model";
    r.revision = "main";
    r.commit = std::string(40, 'a');
    r.endpoint = "http://127.0.0.1:1";
    r.dir = dir;
    r.includes = {"*.json", "model-*.safetensors"};
    r.files = {{"config.json", 10, std::string(40, 'b'), "", "", 0, DownloadFileState::Pending},
               {"model-1.safetensors", 1ull << 33, std::string(40, 'c'), std::string(64, 'd'), "",
                0, DownloadFileState::Pending}};
    return r;
}

} // namespace

TEST(Downloads, RecordRoundTripsWithItsFiles) {
    TempDir t;
    auto db = openOk(t.file("c.db"));
    ASSERT_TRUE(db);
    DownloadStore store(*db);
    const DownloadRecord r = sample("/models/a");
    auto id = store.create(r);
    ASSERT_TRUE(id.isOk()) << id.status().toString();
    auto back = store.findByDir("/models/a");
    ASSERT_TRUE(back.isOk()) << back.status().toString();
    ASSERT_TRUE(back.value().has_value());
    const DownloadRecord& b = *back.value();
    EXPECT_EQ(b.id, id.value());
    EXPECT_EQ(b.repo, r.repo);
    EXPECT_EQ(b.commit, r.commit);
    EXPECT_EQ(b.endpoint, r.endpoint);
    EXPECT_EQ(b.includes, r.includes);
    EXPECT_EQ(b.state, DownloadState::Active);
    EXPECT_GT(b.createdMs, 0);
    EXPECT_EQ(b.files, r.files); // sizes above 2^32 kept
    auto none = store.findByDir("/models/b");
    ASSERT_TRUE(none.isOk());
    EXPECT_FALSE(none.value().has_value());
}

TEST(Downloads, ProgressStatesAndTheUnfinishedList) {
    TempDir t;
    auto db = openOk(t.file("c.db"));
    ASSERT_TRUE(db);
    DownloadStore store(*db);
    const int64_t a = store.create(sample("/models/a")).value();
    const int64_t b = store.create(sample("/models/b")).value();
    ASSERT_TRUE(
        store.updateFile(a, "model-1.safetensors", "\"etag-1\"", 4096, DownloadFileState::Pending)
            .isOk());
    ASSERT_TRUE(store.updateFile(a, "config.json", "\"x\"", 10, DownloadFileState::Done).isOk());
    ASSERT_TRUE(store.setState(a, DownloadState::Paused, "the disk is full").isOk());
    ASSERT_TRUE(store.setState(b, DownloadState::Done).isOk());
    auto rec = store.findByDir("/models/a").value();
    ASSERT_TRUE(rec.has_value());
    EXPECT_EQ(rec->state, DownloadState::Paused);
    EXPECT_EQ(rec->message, "the disk is full");
    EXPECT_EQ(rec->files[0].state, DownloadFileState::Done);
    EXPECT_EQ(rec->files[1].etag, "\"etag-1\"");
    EXPECT_EQ(rec->files[1].bytesDone, 4096u);
    auto unfinished = store.list(true);
    ASSERT_TRUE(unfinished.isOk());
    ASSERT_EQ(unfinished.value().size(), 1u);
    EXPECT_EQ(unfinished.value()[0].id, a);
    EXPECT_EQ(store.list().value().size(), 2u);
    // Unknown file or record: NotFound naming the database file.
    const auto s = store.updateFile(a, "nope.bin", "", 0, DownloadFileState::Done);
    EXPECT_EQ(s.code(), ErrorCode::NotFound);
    EXPECT_NE(s.message().find(t.file("c.db")), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("nope.bin"), std::string::npos) << s.message();
    EXPECT_EQ(store.setState(999, DownloadState::Done).code(), ErrorCode::NotFound);
}

TEST(Downloads, ANewRecordOfAFolderReplacesTheOldOneAndRemoveCascades) {
    TempDir t;
    const std::string path = t.file("c.db");
    auto db = openOk(path);
    ASSERT_TRUE(db);
    DownloadStore store(*db);
    ASSERT_TRUE(store.create(sample("/models/a")).isOk());
    DownloadRecord other = sample("/models/a");
    other.repo = "owner/other";
    other.files.resize(1);
    const int64_t second = store.create(other).value();
    auto rec = store.findByDir("/models/a").value();
    EXPECT_EQ(rec->repo, "owner/other");
    EXPECT_EQ(rec->files.size(), 1u);
    RawDb raw(path);
    EXPECT_EQ(raw.queryInt("SELECT count(*) FROM download_files"), 1);
    EXPECT_EQ(store.remove(second).value(), true);
    EXPECT_EQ(store.remove(second).value(), false);
    EXPECT_EQ(raw.queryInt("SELECT count(*) FROM download_files"), 0);
    // A file listed twice is refused before anything is written.
    DownloadRecord twice = sample("/models/c");
    twice.files.push_back(twice.files[0]);
    EXPECT_EQ(store.create(twice).status().code(), ErrorCode::InvalidArgument);
    EXPECT_EQ(raw.queryInt("SELECT count(*) FROM downloads"), 0);
}
