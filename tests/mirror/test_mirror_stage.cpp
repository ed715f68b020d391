// `coli mirror` in the library (engine/mirror, docs/mirror.md): which files hold which experts,
// the plan's ranking and fit, staging (crash-safe, resumable, never over a foreign file, the
// receipt last), verify, and the plan's heat from the usage database.
#include "mirror_stage_util.h"

#include "convert/file_layer.h"
#include "convert/manifest.h"
#include "convert/sha256.h"
#include "io/safetensors.h"
#include "mirror/expert_files.h"
#include "mirror/mirror_heat.h"
#include "mirror/mirror_plan.h"
#include "mirror/mirror_receipt.h"
#include "mirror/mirror_stage.h"
#include "mirror/mirror_verify.h"
#include "storage/database.h"
#include "storage/model_identity.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <set>
#include <string>

using namespace coli;
using namespace coli::mirror;
using mirror_test::exists;
using mirror_test::readAll;
using mirror_test::writeAll;
namespace fs = std::filesystem;

namespace {

class MirrorStage : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        s_tmp = new st_test::TempDir();
        s_box = (s_tmp->path() / "box").string();
        mirror_test::makeContainer(s_box);
    }
    static void TearDownTestSuite() {
        delete s_tmp;
        s_tmp = nullptr;
    }
    void SetUp() override {
        mirrorDir = (dir.path() / "mirror").string();
        fs::create_directories(mirrorDir);
        auto f = findExpertFiles(s_box);
        ASSERT_TRUE(f.isOk()) << f.status().message();
        files = f.value();
        ASSERT_GE(files.files.size(), 3u) << "the container needs several expert shards";
    }

    static convert::Container manifest() {
        auto c = convert::openContainer(s_box);
        EXPECT_TRUE(c.isOk());
        return c.value();
    }
    // Plenty of room, no reserve: the plan holds every expert file.
    MirrorPlan roomyPlan(const ExpertHeatMap& heat = {}) {
        MirrorPlanOptions o;
        o.reserveBytes = 0;
        auto p = planMirrorFolder(files, heat, mirrorDir, o);
        EXPECT_TRUE(p.isOk()) << p.status().message();
        return p.value();
    }
    std::string primary(const std::string& rel) const { return s_box + "/" + rel; }
    std::string copy(const std::string& rel) const { return mirrorDir + "/" + rel; }

    static inline st_test::TempDir* s_tmp = nullptr;
    static inline std::string s_box;
    st_test::TempDir dir;
    std::string mirrorDir;
    ModelExpertFiles files;
};

// ---- which files hold which experts ----

TEST_F(MirrorStage, ContainerExpertsComeFromTheManifest) {
    const convert::Container c = manifest();
    EXPECT_TRUE(files.container);
    std::map<std::string, uint64_t> want; // file -> expert bytes
    for (const auto& e : c.experts)
        want[e.file] += e.length;
    std::map<std::string, uint64_t> got;
    size_t pieces = 0;
    for (const ExpertFile& f : files.files) {
        got[f.path] = f.expertBytes;
        pieces += f.pieces.size();
        EXPECT_EQ(f.size, fs::file_size(primary(f.path))) << f.path;
        EXPECT_LE(f.expertBytes, f.size);
    }
    EXPECT_EQ(got, want);
    EXPECT_EQ(pieces, c.experts.size());
    // Shards of dense tensors only are never candidates.
    EXPECT_LT(files.files.size(), c.shards.size());
}

TEST_F(MirrorStage, CheckpointExpertsComeFromTheIndexAndHeaders) {
    const std::string dir = mirror_test::fixture("mixtral");
    auto m = findExpertFiles(dir);
    ASSERT_TRUE(m.isOk()) << m.status().message();
    EXPECT_FALSE(m.value().container);
    // Independently: the bytes of every ".experts." tensor, per shard, from the headers.
    std::map<std::string, uint64_t> want;
    for (const auto& e : fs::directory_iterator(dir)) {
        if (e.path().extension() != ".safetensors") continue;
        auto st = SafetensorsFile::open(e.path().string());
        ASSERT_TRUE(st.isOk());
        for (const TensorInfo& t : st.value()->tensors())
            if (t.name.find(".experts.") != std::string::npos)
                want[e.path().filename().string()] += t.nbytes;
    }
    std::map<std::string, uint64_t> got;
    for (const ExpertFile& f : m.value().files)
        got[f.path] = f.expertBytes;
    EXPECT_EQ(got, want);
    // 2 layers x 8 experts, each with all its bytes somewhere.
    EXPECT_EQ(m.value().expertBytes.size(), 16u);
}

TEST_F(MirrorStage, AModelWithoutTheFilesItListsIsRefusedByName) {
    const std::string broken = (dir.path() / "broken").string();
    fs::create_directories(broken);
    for (const auto& e : fs::directory_iterator(s_box))
        fs::copy_file(e.path(), broken + "/" + e.path().filename().string());
    fs::remove(broken + "/" + files.files.back().path);
    auto m = findExpertFiles(broken);
    ASSERT_FALSE(m.isOk());
    EXPECT_NE(m.status().message().find(files.files.back().path), std::string::npos)
        << m.status().message();
}

// ---- the plan ----

// Heat on the experts of one file makes that file rank first; the rest follow by heat per byte.
TEST_F(MirrorStage, PlanRanksFilesByHeatPerByte) {
    // Hand-made heat: the experts of the LAST file (by name) are hot, those of the first file
    // lukewarm, the others cold (no record).
    const ExpertFile& hot = files.files.back();
    const ExpertFile& warm = files.files.front();
    ExpertHeatMap heat;
    for (const ExpertPiece& p : hot.pieces)
        heat[{p.layer, p.expert}] = 100;
    for (const ExpertPiece& p : warm.pieces)
        heat[{p.layer, p.expert}] = 1;
    const MirrorPlan plan = roomyPlan(heat);
    ASSERT_TRUE(plan.byHeat);
    ASSERT_EQ(plan.files.size(), files.files.size());
    EXPECT_EQ(plan.files[0].path, hot.path);
    EXPECT_EQ(plan.files[1].path, warm.path);
    EXPECT_DOUBLE_EQ(plan.files[0].heat, 100.0 * double(hot.pieces.size()));
    EXPECT_DOUBLE_EQ(plan.files[0].heatPerByte, plan.files[0].heat / double(hot.size));
    for (size_t i = 2; i < plan.files.size(); ++i)
        EXPECT_EQ(plan.files[i].heat, 0) << plan.files[i].path;
    // Every file fits: all chosen, all of the heat covered.
    for (const PlannedFile& f : plan.files)
        EXPECT_EQ(f.choice, FileChoice::Chosen) << f.path;
    EXPECT_DOUBLE_EQ(plan.coveredShare(), 1.0);
}

// Heat per byte, not heat: a small file with less heat in all beats a big one.
TEST_F(MirrorStage, PlanDividesHeatByTheFileSize) {
    std::vector<ExpertFile> bySize = files.files;
    std::sort(bySize.begin(), bySize.end(),
              [](const ExpertFile& a, const ExpertFile& b) { return a.size < b.size; });
    const ExpertFile& small = bySize.front();
    const ExpertFile& big = bySize.back();
    ASSERT_GT(double(big.size), 1.2 * double(small.size));
    ExpertHeatMap heat;
    // Per expert: small gets h, big gets slightly more per expert, yet less per byte.
    const double perByteSmall = 1.0 / double(small.size);
    for (const ExpertPiece& p : small.pieces)
        heat[{p.layer, p.expert}] = 1.0 / double(small.pieces.size());
    for (const ExpertPiece& p : big.pieces)
        heat[{p.layer, p.expert}] =
            0.9 * perByteSmall * double(big.size) / double(big.pieces.size());
    const MirrorPlan plan = roomyPlan(heat);
    EXPECT_EQ(plan.files[0].path, small.path);
    EXPECT_EQ(plan.files[1].path, big.path);
    EXPECT_GT(plan.files[1].heat, plan.files[0].heat); // more heat, less per byte
}

// The hottest that fit: a file too big for what is left is passed over, a later smaller one is
// still taken; the reserve and the budget both shrink the room.
TEST_F(MirrorStage, PlanFitsTheHottestIntoFreeSpaceMinusReserveAndBudget) {
    // The ranking made by hand: f0, then the biggest other file f1, then the smallest f2, rest.
    std::vector<ExpertFile> order = files.files;
    std::sort(order.begin() + 1, order.end(),
              [](const ExpertFile& a, const ExpertFile& b) { return a.size > b.size; });
    std::rotate(order.begin() + 2, order.end() - 1, order.end());
    ExpertHeatMap heat;
    double h = 1e6;
    for (const ExpertFile& f : order) {
        for (const ExpertPiece& p : f.pieces)
            heat[{p.layer, p.expert}] = h * double(f.size) / double(f.pieces.size()); // per byte: h
        h /= 2;
    }
    auto state = scanMirrorFolder(mirrorDir, files);
    ASSERT_TRUE(state.isOk());
    const uint64_t block = 4096;
    const auto blocks = [&](uint64_t b) { return (b + block - 1) / block * block; };
    const ExpertFile& f0 = order[0];
    const ExpertFile& f1 = order[1];
    const ExpertFile& f2 = order[2];
    // Room for the first and the third, not the second.
    ASSERT_LT(f2.size, f1.size) << "the container needs expert shards of different sizes";
    const uint64_t receipt = blocks(512 + 200 * files.files.size());
    DiskSpace space;
    space.blockBytes = block;
    space.totalBytes = uint64_t(100) << 30;
    const uint64_t reserve = 7 * block;
    space.freeBytes = reserve + receipt + blocks(f0.size) + blocks(f2.size) + block / 2;
    MirrorPlanOptions o;
    o.reserveBytes = reserve;
    MirrorPlan plan = planMirror(files, heat, mirrorDir, space, state.value(), o);
    for (size_t i = 0; i < order.size(); ++i)
        ASSERT_EQ(plan.files[i].path, order[i].path) << i;
    EXPECT_EQ(plan.files[0].choice, FileChoice::Chosen);
    EXPECT_EQ(plan.files[1].choice, FileChoice::DoesNotFit);
    EXPECT_EQ(plan.files[2].choice, FileChoice::Chosen);
    for (size_t i = 3; i < plan.files.size(); ++i)
        EXPECT_EQ(plan.files[i].choice, FileChoice::DoesNotFit) << plan.files[i].path;
    EXPECT_EQ(plan.copyBytes, f0.size + f2.size);
    EXPECT_EQ(plan.stagePaths(), (std::vector<std::string>{f0.path, f2.path}));
    double total = 0;
    for (const auto& [id, v] : heat)
        total += v;
    EXPECT_NEAR(plan.coveredShare(), (plan.files[0].heat + plan.files[2].heat) / total, 1e-12);

    // Without the reserve's room, only the first file fits.
    space.freeBytes -= reserve;
    plan = planMirror(files, heat, mirrorDir, space, state.value(), o);
    EXPECT_EQ(plan.stagePaths(), (std::vector<std::string>{f0.path}));

    // The budget caps the mirror below the free space.
    space.freeBytes = uint64_t(50) << 30;
    o.budgetBytes = f0.size + f2.size;
    plan = planMirror(files, heat, mirrorDir, space, state.value(), o);
    EXPECT_EQ(plan.stagePaths(), (std::vector<std::string>{f0.path, f2.path}));

    // Default reserve: max(1 GiB, 5 %).
    EXPECT_EQ(defaultReserveBytes(uint64_t(10) << 30), uint64_t(1) << 30);
    EXPECT_EQ(defaultReserveBytes(uint64_t(100) << 30), uint64_t(5) << 30);
}

// No usage history: ranked by the share of the file that is experts, and said so.
TEST_F(MirrorStage, PlanWithoutHistoryRanksByExpertBytes) {
    const MirrorPlan plan = roomyPlan();
    EXPECT_FALSE(plan.byHeat);
    for (size_t i = 1; i < plan.files.size(); ++i) {
        const double a = double(plan.files[i - 1].expertBytes) / double(plan.files[i - 1].size);
        const double b = double(plan.files[i].expertBytes) / double(plan.files[i].size);
        EXPECT_GE(a, b);
    }
    EXPECT_DOUBLE_EQ(plan.coveredShare(), 1.0);
    // Heat for experts the model does not have is no history either.
    const MirrorPlan stray = roomyPlan({{{999, 0}, 5.0}});
    EXPECT_FALSE(stray.byHeat);
}

// ---- staging and verify ----

TEST_F(MirrorStage, StageCopiesVerifiesAndWritesTheReceiptLast) {
    const MirrorPlan plan = roomyPlan();
    convert::FaultyFileSystem disk(convert::posixFileSystem());
    StageOptions so;
    so.fs = &disk;
    auto r = stageMirror(plan, so);
    ASSERT_TRUE(r.isOk()) << r.status().message();
    EXPECT_EQ(r.value().copied, int(files.files.size()));
    EXPECT_EQ(r.value().kept, 0);
    // Every copy went through a temporary.
    for (const std::string& created : disk.created())
        EXPECT_TRUE(created.ends_with(kPartialSuffix)) << created;
    EXPECT_EQ(disk.created().size(), files.files.size());

    auto receipt = readMirrorReceipt(mirrorDir);
    ASSERT_TRUE(receipt.isOk()) << receipt.status().message();
    EXPECT_EQ(fs::path(receipt.value().primary), fs::canonical(s_box));
    ASSERT_EQ(receipt.value().files.size(), files.files.size());
    for (const MirrorFile& f : receipt.value().files) {
        EXPECT_EQ(readAll(copy(f.path)), readAll(primary(f.path))) << f.path;
        auto want = convert::sha256File(primary(f.path));
        ASSERT_TRUE(want.isOk());
        EXPECT_EQ(f.sha256, want.value()) << f.path;
        EXPECT_EQ(f.size, fs::file_size(primary(f.path)));
        EXPECT_FALSE(exists(copy(f.path) + kPartialSuffix));
    }
    auto v = verifyMirror(s_box, mirrorDir);
    ASSERT_TRUE(v.isOk()) << v.status().message();
    EXPECT_TRUE(v.value().findings.empty());
    EXPECT_EQ(v.value().filesOk, int(files.files.size()));
}

// A disk that fills during the second file: the first stays, the second's temporary is kept,
// no receipt; the rerun keeps the first without copying it again and finishes.
TEST_F(MirrorStage, ResumeAfterAFailedWriteKeepsFinishedFiles) {
    const MirrorPlan plan = roomyPlan();
    const std::vector<std::string> paths = plan.stagePaths();
    const uint64_t first = fs::file_size(primary(paths[0]));
    convert::FaultyFileSystem full(convert::posixFileSystem(), first + 1000);
    StageOptions so;
    so.fs = &full;
    bool mirrorSide = false;
    so.mirrorSide = &mirrorSide;
    auto r = stageMirror(plan, so);
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), ErrorCode::NoSpace);
    EXPECT_TRUE(mirrorSide);
    const std::string msg = r.status().message();
    EXPECT_NE(msg.find("disk full"), std::string::npos) << msg;
    EXPECT_NE(msg.find(paths[1]), std::string::npos) << msg;
    EXPECT_NE(msg.find("kept"), std::string::npos) << msg;
    EXPECT_TRUE(exists(copy(paths[0])));
    EXPECT_EQ(fs::file_size(copy(paths[1]) + kPartialSuffix), 1000u);
    EXPECT_FALSE(exists(copy(paths[1])));
    EXPECT_FALSE(exists(mirrorDir + "/" + kMirrorReceiptName));

    // The rerun: the plan keeps the finished file (Staged), the temporary restarts.
    const MirrorPlan again = roomyPlan();
    EXPECT_EQ(again.stagePaths(), paths);
    EXPECT_EQ(again.files[0].choice, FileChoice::Staged);
    convert::FaultyFileSystem roomy(convert::posixFileSystem());
    so.fs = &roomy;
    r = stageMirror(again, so);
    ASSERT_TRUE(r.isOk()) << r.status().message();
    EXPECT_EQ(r.value().kept, 1);
    EXPECT_EQ(r.value().copied, int(paths.size()) - 1);
    for (const std::string& created : roomy.created())
        EXPECT_NE(created, copy(paths[0]) + kPartialSuffix) << "a finished file was copied again";
    auto v = verifyMirror(s_box, mirrorDir);
    ASSERT_TRUE(v.isOk());
    EXPECT_TRUE(v.value().findings.empty());
    EXPECT_EQ(v.value().filesOk, int(paths.size()));
}

TEST_F(MirrorStage, CtrlCStopsCleanlyKeepingTheTemporary) {
    const MirrorPlan plan = roomyPlan();
    std::atomic<bool> cancel{false};
    StageOptions so;
    so.cancel = &cancel;
    std::string copying;
    so.progress = [&](const StageProgress& p) {
        if (std::string(p.phase) == "copying" && p.fileDone > 0 && p.fileIndex == 1) {
            cancel = true;
            copying = p.path;
        }
    };
    auto r = stageMirror(plan, so);
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), ErrorCode::Cancelled);
    EXPECT_EQ(copying, plan.stagePaths()[1]);
    EXPECT_TRUE(exists(copy(plan.stagePaths()[0])));
    EXPECT_TRUE(exists(copy(copying) + kPartialSuffix));
    EXPECT_FALSE(exists(mirrorDir + "/" + kMirrorReceiptName));
    // The next run finishes.
    r = stageMirror(roomyPlan());
    ASSERT_TRUE(r.isOk()) << r.status().message();
    EXPECT_FALSE(exists(copy(copying) + kPartialSuffix));
}

// Files that are not staging's own are never deleted or overwritten.
TEST_F(MirrorStage, StageNeverOverwritesAForeignFile) {
    const std::vector<std::string> paths = roomyPlan().stagePaths();
    // Same size, other bytes: planned as staged, found different, left alone.
    std::string sameSize = readAll(primary(paths[0]));
    sameSize[sameSize.size() / 2] ^= 0x5a;
    writeAll(copy(paths[0]), sameSize);
    // Another size: a conflict at once.
    writeAll(copy(paths[1]), "not a model file");
    const MirrorPlan plan = roomyPlan();
    for (const PlannedFile& f : plan.files) {
        if (f.path == paths[0]) {
            EXPECT_EQ(f.choice, FileChoice::Staged);
        }
        if (f.path == paths[1]) {
            EXPECT_EQ(f.choice, FileChoice::Conflict);
            EXPECT_NE(f.note.find("another size"), std::string::npos) << f.note;
        }
    }
    auto r = stageMirror(plan);
    ASSERT_TRUE(r.isOk()) << r.status().message();
    ASSERT_EQ(r.value().conflicts.size(), 1u);
    EXPECT_NE(r.value().conflicts[0].find(paths[0]), std::string::npos);
    EXPECT_EQ(readAll(copy(paths[0])), sameSize);
    EXPECT_EQ(readAll(copy(paths[1])), "not a model file");
    auto receipt = readMirrorReceipt(mirrorDir);
    ASSERT_TRUE(receipt.isOk());
    EXPECT_EQ(receipt.value().files.size(), paths.size() - 2);
    for (const MirrorFile& f : receipt.value().files)
        EXPECT_TRUE(f.path != paths[0] && f.path != paths[1]) << f.path;
}

// A temporary of a file the plan no longer holds is staging's own: removed.
TEST_F(MirrorStage, StaleTemporariesAreRemoved) {
    const std::vector<std::string> paths = roomyPlan().stagePaths();
    writeAll(copy(paths.back()) + kPartialSuffix, std::string(5000, 'x'));
    MirrorPlanOptions o;
    o.reserveBytes = 0;
    o.budgetBytes = fs::file_size(primary(paths[0])); // only the first fits
    auto plan = planMirrorFolder(files, {}, mirrorDir, o);
    ASSERT_TRUE(plan.isOk());
    EXPECT_EQ(plan.value().stagePaths(), std::vector<std::string>{paths[0]});
    EXPECT_EQ(plan.value().staleTemporaries, std::vector<std::string>{paths.back()});
    auto r = stageMirror(plan.value());
    ASSERT_TRUE(r.isOk()) << r.status().message();
    EXPECT_EQ(r.value().removedTemporaries, std::vector<std::string>{paths.back()});
    EXPECT_FALSE(exists(copy(paths.back()) + kPartialSuffix));
}

TEST_F(MirrorStage, VerifyNamesEveryAlteredOrMissingFile) {
    ASSERT_TRUE(stageMirror(roomyPlan()).isOk());
    const std::vector<std::string> paths = roomyPlan().stagePaths();
    ASSERT_GE(paths.size(), 3u);
    // One byte flipped, one truncated, one removed.
    std::string bytes = readAll(copy(paths[0]));
    bytes[bytes.size() - 1] ^= 1;
    writeAll(copy(paths[0]), bytes);
    fs::resize_file(copy(paths[1]), fs::file_size(copy(paths[1])) / 2);
    fs::remove(copy(paths[2]));
    auto v = verifyMirror(s_box, mirrorDir);
    ASSERT_TRUE(v.isOk()) << v.status().message();
    std::map<std::string, std::string> found;
    for (const VerifyFinding& f : v.value().findings)
        found[f.path] = f.problem;
    ASSERT_EQ(found.size(), 3u);
    EXPECT_NE(found[paths[0]].find("SHA-256"), std::string::npos) << found[paths[0]];
    EXPECT_NE(found[paths[1]].find("bytes"), std::string::npos) << found[paths[1]];
    EXPECT_NE(found[paths[2]].find("not found"), std::string::npos) << found[paths[2]];
    EXPECT_EQ(v.value().filesOk, int(paths.size()) - 3);

    // Against another model folder: the receipt says whose mirror it is.
    auto other = verifyMirror(mirror_test::fixture("mixtral"), mirrorDir);
    ASSERT_TRUE(other.isOk());
    ASSERT_FALSE(other.value().findings.empty());
    EXPECT_EQ(other.value().findings[0].path, kMirrorReceiptName);

    // No receipt: not a mirror (yet).
    auto none = verifyMirror(s_box, (dir.path()).string());
    ASSERT_FALSE(none.isOk());
    EXPECT_EQ(none.status().code(), ErrorCode::NotFound);
}

TEST_F(MirrorStage, ThePlanRefusesTheModelFolderAndAMissingFolder) {
    auto same = planMirrorFolder(files, {}, s_box, {});
    ASSERT_FALSE(same.isOk());
    EXPECT_EQ(same.status().code(), ErrorCode::InvalidArgument);
    auto missing = planMirrorFolder(files, {}, mirrorDir + "/nope", {});
    ASSERT_FALSE(missing.isOk());
    EXPECT_EQ(missing.status().code(), ErrorCode::NotFound);
    EXPECT_NE(missing.status().message().find("create"), std::string::npos);
}

// ---- heat from the usage database ----

TEST_F(MirrorStage, HeatComesFromTheUsageDatabaseByModelIdentity) {
    const std::string dbPath = (dir.path() / "usage.db").string();
    // No database: no history, and none is created.
    auto none = loadModelHeat(s_box, dbPath);
    ASSERT_TRUE(none.isOk()) << none.status().message();
    EXPECT_FALSE(none.value().known);
    EXPECT_FALSE(exists(dbPath));

    {
        auto db = storage::Storage::open(dbPath);
        ASSERT_TRUE(db.isOk());
        // The checkpoint's identity: the container converted from it shares it.
        auto identity = storage::modelIdentity(mirror_test::fixture("qwen3moe"), nullptr);
        ASSERT_TRUE(identity.isOk());
        auto id = db.value()->modelId(identity.value(), "x");
        ASSERT_TRUE(id.isOk());
        ASSERT_TRUE(db.value()->saveHeat(id.value(), {{0, 1, 8.0}, {1, 2, 2.0}}, 10000).isOk());
        // Saved earlier: decays by one half-life to the model's clock.
        ASSERT_TRUE(db.value()
                        ->saveHeat(id.value(), {{0, 3, 4.0}},
                                   10000 - int64_t(storage::kDefaultHalfLifeTokens))
                        .isOk());
    }
    auto h = loadModelHeat(s_box, dbPath);
    ASSERT_TRUE(h.isOk()) << h.status().message();
    EXPECT_TRUE(h.value().known);
    const ExpertHeatMap want = {{{0, 1}, 8.0}, {{0, 3}, 2.0}, {{1, 2}, 2.0}};
    EXPECT_EQ(h.value().heat, want);
}

} // namespace
