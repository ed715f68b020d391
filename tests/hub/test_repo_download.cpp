// A whole repo downloaded (engine/hub/repo_download.h) from the local Hub with its record in the
// database (schema v4): every file installed with the Hub's hashes and the receipt written last;
// a pause keeps the .parts and the record, and the next run resumes them (bytes transferred in
// both runs stay near the repo's size); a full disk pauses with the .part kept and a rerun
// finishes; a cancel deletes the .parts; the whole-repo progress adds up.
#include "hub/download_receipt.h"
#include "hub/repo_download.h"
#include "hub_test_server.h"
#include "storage/database.h"
#include "storage/downloads.h"

#include <gtest/gtest.h>

using namespace coli::hub;
using coli::ErrorCode;
using coli::hub_test::HubServer;
using coli::hub_test::TempDir;
namespace hub_test = coli::hub_test;
namespace fsys = std::filesystem;

using coli::hub_test::supportedConfig;

namespace {

// A repo of ~3.3 MiB: config.json, a tokenizer, two LFS shards of 1.5 and 1.75 MiB.
struct Fixture {
    TempDir t;
    fsys::path repo = t.path() / "repo";
    fsys::path dest = t.path() / "models" / "tiny";
    std::unique_ptr<HubServer> server;
    std::unique_ptr<coli::storage::Storage> db;
    uint64_t repoBytes = 0;
    explicit Fixture(const std::vector<std::string>& extra = {}) {
        const std::pair<const char*, std::string> files[] = {
            {"config.json", supportedConfig()},
            {"tokenizer.json", "{\"model\": {}}"},
            {"model-00001-of-00002.safetensors", hub_test::randomBytes(1536u << 10, 7)},
            {"model-00002-of-00002.safetensors", hub_test::randomBytes(1792u << 10, 8)},
        };
        for (const auto& [name, bytes] : files) {
            hub_test::writeBytes(repo / name, bytes);
            repoBytes += bytes.size();
        }
        hub_test::HubServerOptions o;
        o.repos = {{"t/tiny", repo.string()}};
        o.extraArgs = extra;
        std::string error;
        server = HubServer::start(o, &error);
        EXPECT_TRUE(server) << error;
        auto st = coli::storage::Storage::open((t.path() / "colibri.db").string());
        EXPECT_TRUE(st.isOk()) << st.status().toString();
        if (st.isOk()) db = std::move(st.value());
    }
    RepoDownloadOptions options() {
        RepoDownloadOptions o;
        o.request.repo = "t/tiny";
        o.request.dir = dest.string();
        o.request.marginBytes = 0;
        o.retry.initialBackoffSeconds = 0.05;
        o.retry.maxBackoffSeconds = 0.2;
        o.retry.stallSeconds = 5;
        o.record = db.get();
        return o;
    }
    HubApi api() { return HubApi(HubEndpoint{server->endpoint(), "", ""}, ApiRetry{2, 0.05, 0.2}); }
    std::optional<coli::storage::DownloadRecord> record() {
        coli::storage::DownloadStore store(*db);
        auto r = store.findByDir(fsys::weakly_canonical(dest).string());
        EXPECT_TRUE(r.isOk()) << r.status().toString();
        return r.isOk() ? r.value() : std::nullopt;
    }
    void expectInstalled() {
        for (const auto& e : fsys::directory_iterator(repo)) {
            const auto name = e.path().filename();
            EXPECT_EQ(hub_test::readBytes(dest / name), hub_test::readBytes(e.path())) << name;
            EXPECT_FALSE(fsys::exists(dest / (name.string() + ".part"))) << name;
        }
    }
};

} // namespace

TEST(RepoDownload, InstallsEveryFileWritesTheReceiptAndRecordsDone) {
    Fixture fx;
    ASSERT_TRUE(fx.server && fx.db);
    HubApi api = fx.api();
    RepoDownloadOptions o = fx.options();
    std::vector<RepoProgress> seen;
    o.progress = [&](const RepoProgress& p) { seen.push_back(p); };
    auto r = downloadRepo(api, o);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    fx.expectInstalled();
    EXPECT_EQ(r.value().bytesTransferred, fx.repoBytes);
    EXPECT_EQ(r.value().filesFetched, 4);
    auto receipt = readDownloadReceipt(fx.dest.string());
    ASSERT_TRUE(receipt.isOk()) << receipt.status().toString();
    EXPECT_EQ(receipt.value().repo, "t/tiny");
    EXPECT_EQ(receipt.value().commit, r.value().plan.info.commit);
    EXPECT_EQ(receipt.value().files.size(), 4u);
    auto rec = fx.record();
    ASSERT_TRUE(rec.has_value());
    EXPECT_EQ(rec->state, coli::storage::DownloadState::Done);
    for (const auto& f : rec->files)
        EXPECT_EQ(f.state, coli::storage::DownloadFileState::Done) << f.path;
    // Whole-repo progress: totals fixed, done never going back, ending at the total.
    ASSERT_FALSE(seen.empty());
    uint64_t last = 0;
    for (const auto& p : seen) {
        if (std::string(p.phase) == "planning") continue;
        EXPECT_EQ(p.bytesTotal, fx.repoBytes);
        EXPECT_EQ(p.fileCount, 4u);
        EXPECT_GE(p.bytesDone, last);
        last = p.bytesDone;
    }
    EXPECT_STREQ(seen.back().phase, "done");
    EXPECT_EQ(seen.back().bytesDone, fx.repoBytes);
    // A second run finds everything in place and fetches nothing.
    auto again = downloadRepo(api, o);
    ASSERT_TRUE(again.isOk()) << again.status().toString();
    EXPECT_EQ(again.value().bytesTransferred, 0u);
    EXPECT_EQ(again.value().filesPresent, 4);
}

TEST(RepoDownload, PauseKeepsThePartsAndTheNextRunResumesThem) {
    TempDir logs;
    const std::string log = (logs.path() / "requests.log").string();
    Fixture fx({"--log", log});
    ASSERT_TRUE(fx.server && fx.db);
    HubApi api = fx.api();
    RepoDownloadOptions o = fx.options();
    std::atomic<bool> stop{false};
    o.stop = &stop;
    // Pause in the middle of the second shard.
    o.progress = [&](const RepoProgress& p) {
        if (p.fileIndex == 3 && p.file.bytesDone >= (512u << 10)) stop = true;
    };
    auto first = downloadRepo(api, o);
    ASSERT_EQ(first.status().code(), ErrorCode::Cancelled) << first.status().toString();
    const fsys::path part = fx.dest / "model-00002-of-00002.safetensors.part";
    ASSERT_TRUE(fsys::exists(part));
    const uint64_t partBytes = fsys::file_size(part);
    EXPECT_GE(partBytes, 512u << 10);
    EXPECT_FALSE(fsys::exists(fx.dest / kDownloadReceiptName));
    auto rec = fx.record();
    ASSERT_TRUE(rec.has_value());
    EXPECT_EQ(rec->state, coli::storage::DownloadState::Paused);
    ASSERT_EQ(rec->files.size(), 4u); // by path
    EXPECT_EQ(rec->files[2].path, "model-00002-of-00002.safetensors");
    EXPECT_FALSE(rec->files[2].etag.empty()); // the If-Range of the resume
    EXPECT_EQ(rec->files[2].state, coli::storage::DownloadFileState::Pending);
    EXPECT_EQ(rec->files[1].state, coli::storage::DownloadFileState::Done);
    o.stop = nullptr;
    o.progress = {};
    auto second = downloadRepo(api, o);
    ASSERT_TRUE(second.isOk()) << second.status().toString();
    fx.expectInstalled();
    EXPECT_FALSE(second.value().restarted);
    EXPECT_EQ(second.value().bytesTransferred, (1792u << 10) - partBytes);
    EXPECT_EQ(fx.record()->state, coli::storage::DownloadState::Done);
    // The resumed run asked for the recorded commit, not for "main" (which could have moved).
    const std::string commit = second.value().plan.info.commit;
    EXPECT_EQ(commit, rec->commit);
    const std::string asked = hub_test::readBytes(log);
    EXPECT_NE(asked.find("/api/models/t/tiny/revision/main"), std::string::npos);
    EXPECT_NE(asked.find("/api/models/t/tiny/revision/" + commit), std::string::npos) << asked;
    EXPECT_EQ(second.value().plan.info.revision, "main");
}

TEST(RepoDownload, DiskFullPausesKeepsThePartAndARerunFinishes) {
    Fixture fx;
    ASSERT_TRUE(fx.server && fx.db);
    HubApi api = fx.api();
    RepoDownloadOptions o = fx.options();
    // The disk fills 1 MiB into the first shard.
    coli::convert::FaultyFileSystem full(coli::convert::posixFileSystem(),
                                         supportedConfig().size() + 13 + (1u << 20));
    o.fs = &full;
    auto r = downloadRepo(api, o);
    ASSERT_EQ(r.status().code(), ErrorCode::NoSpace) << r.status().toString();
    EXPECT_NE(r.status().message().find("disk full"), std::string::npos) << r.status().message();
    const fsys::path part = fx.dest / "model-00001-of-00002.safetensors.part";
    ASSERT_TRUE(fsys::exists(part));
    EXPECT_EQ(fsys::file_size(part), 1u << 20);
    auto rec = fx.record();
    ASSERT_TRUE(rec.has_value());
    EXPECT_EQ(rec->state, coli::storage::DownloadState::Paused);
    EXPECT_NE(rec->message.find("disk full"), std::string::npos) << rec->message;
    o.fs = nullptr;
    auto again = downloadRepo(api, o);
    ASSERT_TRUE(again.isOk()) << again.status().toString();
    fx.expectInstalled();
    EXPECT_EQ(again.value().bytesTransferred,
              fx.repoBytes - supportedConfig().size() - 13 - (1u << 20));
}

TEST(RepoDownload, CancelDeletesThePartsAndRecordsCancelled) {
    Fixture fx;
    ASSERT_TRUE(fx.server && fx.db);
    HubApi api = fx.api();
    RepoDownloadOptions o = fx.options();
    std::atomic<bool> stop{false}, discard{false};
    o.stop = &stop;
    o.discard = &discard;
    o.progress = [&](const RepoProgress& p) {
        if (p.fileIndex == 2 && p.file.bytesDone >= (256u << 10)) {
            discard = true;
            stop = true;
        }
    };
    auto r = downloadRepo(api, o);
    ASSERT_EQ(r.status().code(), ErrorCode::Cancelled) << r.status().toString();
    EXPECT_FALSE(fsys::exists(fx.dest / "model-00001-of-00002.safetensors.part"));
    EXPECT_TRUE(fsys::exists(fx.dest / "config.json")); // installed files stay
    EXPECT_EQ(fx.record()->state, coli::storage::DownloadState::Cancelled);
}
