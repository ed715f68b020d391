// The engine's use of a mirror (docs/mirror.md "The engine's use of a mirror"): files checked at
// load (a truncated or altered copy is refused, naming it, and the primary serves it), expert
// reads split by the documented hash weighted by the disks' weights (bytes per disk equal what
// the hash predicts for the experts the run actually read, from the cache's record of reads), a
// mirror folder removed in the middle of a generation (the same tokens, one message), and
// placement invariance with the mirror on: full, partial and failing mirrors give the tokens and
// logits of the resident model, bit for bit.
#include "mirror_test_util.h"

#include "convert/manifest.h"
#include "mirror/mirror_load.h"
#include "tiers/disk_router.h"
#include "tiers/expert_cache.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <unistd.h>

using namespace mirror_test;

namespace {

GenRun residentRun(const std::string& dir) {
    ModelLoadOptions o;
    o.threads = 2;
    auto m = Model::load(dir, o);
    EXPECT_TRUE(m.isOk()) << m.status().toString();
    return m.isOk() ? generate(**m) : GenRun{};
}

ModelLoadOptions streamed(const std::string& mirrorDir, std::pair<double, double> weights) {
    ModelLoadOptions o;
    o.threads = 2;
    o.tiers.stream = true;
    o.tiers.mirrorDir = mirrorDir;
    o.tiers.diskWeights = weights;
    return o;
}

int countContaining(const std::vector<std::string>& lines, const std::string& text) {
    int n = 0;
    for (const std::string& l : lines)
        n += l.find(text) != std::string::npos;
    return n;
}

// Bytes each disk should have served: the cache's record of completed loads per expert, each
// counted on the disk the documented hash gives it (mirror when its file is mirrored and
// mirrorPick(layer, expert) < share).
std::pair<uint64_t, uint64_t> predictedSplit(const tiers::ExpertCache& cache,
                                             const ModelConfig& cfg,
                                             const std::function<bool(int, int)>& mirrored,
                                             double share) {
    const std::vector<uint32_t> reads = cache.expertReads();
    uint64_t primary = 0, mirror = 0;
    for (int l = 0; l < cfg.nLayers; ++l)
        for (int e = 0; e < cfg.nExperts; ++e) {
            const uint64_t n = reads[size_t(l) * cfg.nExperts + e];
            const uint64_t bytes = n * cache.source().readBytes();
            if (mirrored(l, e) && tiers::mirrorPick(l, e) < share)
                mirror += bytes;
            else
                primary += bytes;
        }
    return {primary, mirror};
}

void truncateFile(const std::string& path, uint64_t size) {
    ASSERT_EQ(0, ::truncate(path.c_str(), off_t(size))) << path;
}

void flipByte(const std::string& path, uint64_t at) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f) << path;
    f.seekg(std::streamoff(at));
    char c = 0;
    f.read(&c, 1);
    c ^= 0x20;
    f.seekp(std::streamoff(at));
    f.write(&c, 1);
    ASSERT_TRUE(f.good());
}

} // namespace

TEST(MirrorReads, HashIsDeterministicAndSpread) {
    // The documented split: splitmix64 of (layer << 32 | expert), top 53 bits over 2^53.
    EXPECT_EQ(tiers::mirrorPick(3, 17), tiers::mirrorPick(3, 17));
    int below = 0;
    for (int l = 0; l < 16; ++l)
        for (int e = 0; e < 64; ++e) {
            const double u = tiers::mirrorPick(l, e);
            ASSERT_GE(u, 0.0);
            ASSERT_LT(u, 1.0);
            below += u < 0.25;
        }
    // 1024 draws: a quarter within a few standard deviations (sd ~ 14).
    EXPECT_GT(below, 256 - 60);
    EXPECT_LT(below, 256 + 60);
}

TEST(MirrorReads, NoReceiptMeansNoMirrorAndOneWarning) {
    const std::string dir = Containers::get().of("mixtral");
    ASSERT_FALSE(dir.empty());
    st_test::TempDir tmp;
    const std::string mirrorDir = (tmp.path() / "mirror").string();
    fs::create_directories(mirrorDir);
    for (const std::string& f : shardNames(dir)) // copies, but no receipt: staging unfinished
        fs::copy_file(fs::path(dir) / f, fs::path(mirrorDir) / f);
    auto m = Model::load(dir, streamed(mirrorDir, {1, 1}));
    ASSERT_TRUE(m.isOk()) << m.status().toString();
    ASSERT_EQ((*m)->warnings().size(), 1u);
    EXPECT_NE((*m)->warnings()[0].find("colibri-mirror.json"), std::string::npos)
        << (*m)->warnings()[0];
    tiers::ExpertCache* cache = (*m)->expertCache();
    EXPECT_FALSE(cache->mirrorStatus().configured);
    const GenRun got = generate(**m);
    cache->waitIdle();
    EXPECT_EQ(cache->counters().bytesReadMirror, 0u);
    EXPECT_EQ(cache->counters().bytesReadPrimary, cache->counters().bytesRead);
}

TEST(MirrorReads, TruncatedOrAlteredFileRefusedAtLoad) {
    const std::string dir = Containers::get().of("mixtral");
    ASSERT_FALSE(dir.empty());
    const std::vector<std::string> shards = shardNames(dir);
    ASSERT_GE(shards.size(), 3u) << "the container needs several shards";
    st_test::TempDir tmp;
    const std::string mirrorDir = (tmp.path() / "mirror").string();
    makeMirror(dir, mirrorDir, shards);
    const std::string truncated = shards[0], altered = shards[1];
    truncateFile(mirrorDir + "/" + truncated, fs::file_size(fs::path(dir) / truncated) - 4096);
    flipByte(mirrorDir + "/" + altered, 20); // inside the safetensors header's JSON

    auto m = Model::load(dir, streamed(mirrorDir, {1, 1}));
    ASSERT_TRUE(m.isOk()) << m.status().toString();
    const std::vector<std::string>& w = (*m)->warnings();
    EXPECT_EQ(w.size(), 2u);
    EXPECT_EQ(countContaining(w, mirrorDir + "/" + truncated), 1);
    EXPECT_EQ(countContaining(w, mirrorDir + "/" + altered), 1);
    EXPECT_EQ(countContaining(w, "size"), 1);
    EXPECT_EQ(countContaining(w, "differ from the primary"), 1);
    tiers::ExpertCache* cache = (*m)->expertCache();
    const tiers::MirrorStatus ms = cache->mirrorStatus();
    EXPECT_TRUE(ms.configured);
    EXPECT_EQ(ms.files, int(shards.size()) - 2);

    // The refused files' experts come from the primary; the tokens are the resident model's.
    const ModelConfig& cfg = (*m)->config();
    ASSERT_TRUE(cache->setBudget(0).isOk());
    expectSameRun(generate(**m), residentRun(dir));
    cache->waitIdle();
    Result<convert::Container> box = convert::openContainer(dir);
    ASSERT_TRUE(box.isOk());
    const auto mirrored = [&](int l, int e) {
        const convert::ExpertEntry* x = box->expert(l, e);
        return x && x->file != truncated && x->file != altered;
    };
    const auto [primary, mirror] = predictedSplit(*cache, cfg, mirrored, 0.5);
    const tiers::TierCounters c = cache->counters();
    EXPECT_EQ(c.bytesReadPrimary, primary);
    EXPECT_EQ(c.bytesReadMirror, mirror);
    EXPECT_GT(c.bytesReadMirror, 0u);
}

TEST(MirrorReads, BytesPerDiskFollowTheHashSplit) {
    for (const char* family : {"olmoe", "mixtral"})
        for (bool container : {true, false})
            for (std::pair<double, double> w : {std::pair{1.0, 1.0}, std::pair{1.0, 3.0}}) {
                SCOPED_TRACE(std::string(family) + (container ? " container" : " checkpoint") +
                             " weights " + std::to_string(w.first) + "," +
                             std::to_string(w.second));
                const std::string dir = container ? Containers::get().of(family) : fixture(family);
                ASSERT_FALSE(dir.empty());
                st_test::TempDir tmp;
                const std::string mirrorDir = (tmp.path() / "mirror").string();
                makeMirror(dir, mirrorDir, shardNames(dir)); // a full mirror
                auto m = Model::load(dir, streamed(mirrorDir, w));
                ASSERT_TRUE(m.isOk()) << m.status().toString();
                EXPECT_TRUE((*m)->warnings().empty());
                tiers::ExpertCache* cache = (*m)->expertCache();
                ASSERT_TRUE(cache->setBudget(0).isOk()); // read again and again
                (void)generate(**m);
                cache->waitIdle();
                const double share = w.second / (w.first + w.second);
                EXPECT_DOUBLE_EQ(cache->mirrorStatus().share, share);
                const auto [primary, mirror] = predictedSplit(
                    *cache, (*m)->config(), [](int, int) { return true; }, share);
                const tiers::TierCounters c = cache->counters();
                EXPECT_EQ(c.bytesReadPrimary, primary);
                EXPECT_EQ(c.bytesReadMirror, mirror);
                EXPECT_EQ(c.bytesReadPrimary + c.bytesReadMirror, c.bytesRead);
                EXPECT_GT(c.bytesReadPrimary, 0u);
                EXPECT_GT(c.bytesReadMirror, 0u);
                EXPECT_FALSE(cache->mirrorStatus().fellBack);
            }
}

TEST(MirrorReads, MeasuredWeightsAtLoad) {
    // Without --disk-weights the two disks are measured (here: one disk twice; the split is
    // whatever the measurement gives, strictly between 0 and 1).
    const std::string dir = Containers::get().of("olmoe");
    ASSERT_FALSE(dir.empty());
    st_test::TempDir tmp;
    const std::string mirrorDir = (tmp.path() / "mirror").string();
    makeMirror(dir, mirrorDir, shardNames(dir));
    mirror::MirrorLoadOptions mo;
    mo.dir = mirrorDir;
    mo.measureBytes = 1 << 20;
    const mirror::PreparedMirror pm = mirror::prepareMirror(dir, mo);
    EXPECT_TRUE(pm.warnings.empty()) << pm.warnings[0];
    EXPECT_TRUE(pm.setup.measured);
    EXPECT_GT(pm.setup.primaryWeight, 0);
    EXPECT_GT(pm.setup.mirrorWeight, 0);
    EXPECT_GT(pm.setup.share, 0);
    EXPECT_LT(pm.setup.share, 1);
    EXPECT_EQ(pm.setup.files.size(), shardNames(dir).size());
}

TEST(MirrorReads, BadDiskWeightsRefused) {
    ModelLoadOptions o = streamed("", {0, 0});
    auto m = Model::load(fixture("olmoe"), o);
    ASSERT_FALSE(m.isOk());
    EXPECT_EQ(m.status().code(), ErrorCode::InvalidArgument);
    EXPECT_NE(m.status().message().find("both be 0"), std::string::npos);
    EXPECT_EQ(mirror::checkDiskWeights(-1, 1).empty(), false);
    EXPECT_EQ(mirror::checkDiskWeights(3, 0), "");
}

TEST(MirrorReads, FolderRemovedMidGeneration) {
    for (bool container : {true, false}) {
        SCOPED_TRACE(container ? "container" : "checkpoint");
        const std::string dir = container ? Containers::get().of("mixtral") : fixture("mixtral");
        ASSERT_FALSE(dir.empty());
        const GenRun want = residentRun(dir);
        st_test::TempDir tmp;
        const std::string mirrorDir = (tmp.path() / "mirror").string();
        makeMirror(dir, mirrorDir, shardNames(dir));
        auto m = Model::load(dir, streamed(mirrorDir, {1, 3}));
        ASSERT_TRUE(m.isOk()) << m.status().toString();
        tiers::ExpertCache* cache = (*m)->expertCache();
        ASSERT_TRUE(cache->setBudget(0).isOk());
        uint64_t mirrorBytesAtRemoval = 0;
        const GenRun got = generate(**m, [&](int pass, int i) {
            if (pass != 0 || i != 3) return;
            cache->waitIdle();
            mirrorBytesAtRemoval = cache->counters().bytesReadMirror;
            EXPECT_FALSE(cache->mirrorStatus().fellBack);
            fs::remove_all(mirrorDir);
        });
        expectSameRun(got, want);
        cache->waitIdle();
        const tiers::MirrorStatus ms = cache->mirrorStatus();
        EXPECT_TRUE(ms.fellBack);
        EXPECT_NE(ms.problem.find(mirrorDir), std::string::npos) << ms.problem;
        EXPECT_NE(ms.problem.find("removed"), std::string::npos) << ms.problem;
        const tiers::TierCounters c = cache->counters();
        EXPECT_GT(mirrorBytesAtRemoval, 0u);
        EXPECT_EQ(c.bytesReadMirror, mirrorBytesAtRemoval) << "read from a removed mirror";
        EXPECT_GT(c.bytesReadPrimary, 0u);
        EXPECT_TRUE(cache->checkConsistency().isOk());
    }
}

// Placement invariance with the mirror on: a full mirror (split 1:1), a partial one (every other
// file, most of their experts from the mirror), and a failing one (every mirrored expert from the
// mirror, whose files are truncated after load: every mirror read fails once, then the primary
// serves the rest of the run), each at budget 0 and at half the experts, with prefetch, O_DIRECT
// and both I/O backends among them.
TEST(MirrorReads, PlacementInvarianceWithMirror) {
    struct Case {
        const char* name;
        enum { Full, Partial, Failing } kind;
        bool halfBudget, direct;
        aio::IoBackend backend;
    };
    const Case cases[] = {
        {"full-budget0", Case::Full, false, false, aio::IoBackend::Auto},
        {"full-half-direct-pread", Case::Full, true, true, aio::IoBackend::PreadThreads},
        {"partial-budget0-direct", Case::Partial, false, true, aio::IoBackend::Auto},
        {"partial-half-pread", Case::Partial, true, false, aio::IoBackend::PreadThreads},
        {"failing-budget0", Case::Failing, false, false, aio::IoBackend::Auto},
        {"failing-half-direct-pread", Case::Failing, true, true, aio::IoBackend::PreadThreads},
    };
    for (const char* family : {"olmoe", "mixtral", "qwen2moe"})
        for (bool container : {true, false}) {
            const std::string dir = container ? Containers::get().of(family) : fixture(family);
            ASSERT_FALSE(dir.empty());
            const GenRun want = residentRun(dir);
            const std::vector<std::string> shards = shardNames(dir);
            for (const Case& k : cases) {
                SCOPED_TRACE(std::string(family) + (container ? " container " : " checkpoint ") +
                             k.name);
                st_test::TempDir tmp;
                const std::string mirrorDir = (tmp.path() / "mirror").string();
                // A partial mirror: every other shard (the first among them holds experts).
                std::vector<std::string> files;
                for (size_t i = 0; i < shards.size(); ++i)
                    if (k.kind != Case::Partial || i % 2 == 0) files.push_back(shards[i]);
                makeMirror(dir, mirrorDir, files);
                const std::pair<double, double> w = k.kind == Case::Full      ? std::pair{1.0, 1.0}
                                                    : k.kind == Case::Partial ? std::pair{1.0, 4.0}
                                                                              : std::pair{0.0, 1.0};
                ModelLoadOptions o = streamed(mirrorDir, w);
                o.tiers.directIo = k.direct ? aio::DirectIo::On : aio::DirectIo::Off;
                o.tiers.ioBackend = k.backend;
                o.tiers.prefetch = true;
                auto m = Model::load(dir, o);
                ASSERT_TRUE(m.isOk()) << m.status().toString();
                EXPECT_TRUE((*m)->warnings().empty()) << (*m)->warnings()[0];
                tiers::ExpertCache* cache = (*m)->expertCache();
                const uint64_t budget = k.halfBudget
                                            ? std::max(cache->minimumBudget(),
                                                       cache->telemetry().residency.totalExperts /
                                                           2 * cache->slotBytes())
                                            : 0;
                ASSERT_TRUE(cache->setBudget(budget).isOk());
                if (k.kind == Case::Failing)
                    for (const std::string& f : shards)
                        truncateFile(mirrorDir + "/" + f, 0); // reads past the end fail
                expectSameRun(generate(**m), want);
                cache->waitIdle();
                EXPECT_TRUE(cache->checkConsistency().isOk());
                const tiers::TierCounters c = cache->counters();
                const tiers::MirrorStatus ms = cache->mirrorStatus();
                EXPECT_EQ(c.bytesReadPrimary + c.bytesReadMirror, c.bytesRead);
                EXPECT_EQ(c.failedReads, 0u) << "a mirror failure is not the cache's failure";
                if (k.kind == Case::Failing) {
                    EXPECT_TRUE(ms.fellBack);
                    EXPECT_EQ(c.bytesReadMirror, 0u);
                    EXPECT_NE(ms.problem.find(mirrorDir), std::string::npos) << ms.problem;
                } else {
                    EXPECT_FALSE(ms.fellBack) << ms.problem;
                    EXPECT_GT(c.bytesReadMirror, 0u);
                    EXPECT_GT(c.bytesReadPrimary, 0u);
                }
            }
        }
}
