// What coli convert refuses, and that a refusal leaves nothing behind it should not.
#include "convert/converter.h"
#include "convert_test_util.h"
#include "io/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>

namespace coli::convert {
namespace {

namespace fs = std::filesystem;
using convert_test::fixture;

TEST(ConvertRefuses, DestinationEqualToOrInsideTheSource) {
    st_test::TempDir tmp;
    const fs::path src = tmp.path() / "src";
    convert_test::copyDir(fixture("olmoe"), src);
    const size_t before = convert_test::allFiles(src).size();
    for (const fs::path& dst : {src, src / "converted", src / "." / "a" / ".." / "b"}) {
        FailureSide side = FailureSide::None;
        auto r = convertCheckpoint(src.string(), dst.string(), {}, posixFileSystem(), {}, nullptr,
                                   &side);
        ASSERT_FALSE(r) << dst;
        EXPECT_EQ(r.status().code(), ErrorCode::InvalidArgument);
        EXPECT_NE(r.status().message().find("source folder"), std::string::npos)
            << r.status().message();
        EXPECT_EQ(side, FailureSide::Destination);
    }
    EXPECT_FALSE(fs::exists(src / "converted"));
    EXPECT_EQ(convert_test::allFiles(src).size(), before);
}

TEST(ConvertRefuses, NonEmptyDestinationUnlessForced) {
    st_test::TempDir tmp;
    const fs::path dst = tmp.path() / "dst";
    fs::create_directories(dst);
    st_test::writeText(dst / "notes.txt", "mine");
    auto r = convertCheckpoint(fixture("olmoe"), dst.string(), {});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.status().code(), ErrorCode::InvalidArgument);
    EXPECT_NE(r.status().message().find("not empty"), std::string::npos) << r.status().message();
    EXPECT_EQ(convert_test::allFiles(dst).size(), 1u);

    ConvertOptions force;
    force.force = true;
    auto ok = convertCheckpoint(fixture("olmoe"), dst.string(), force);
    ASSERT_TRUE(ok) << ok.status().toString();
    EXPECT_TRUE(fs::exists(dst / "notes.txt")); // --force writes into the folder, deletes nothing

    // A finished container is not empty either: converting again needs --force.
    auto again = convertCheckpoint(fixture("olmoe"), dst.string(), {});
    ASSERT_FALSE(again);
    EXPECT_NE(again.status().message().find("already holds a colibri container"), std::string::npos)
        << again.status().message();

    // A destination that is a file.
    st_test::writeText(tmp.path() / "file", "x");
    auto file = convertCheckpoint(fixture("olmoe"), (tmp.path() / "file").string(), force);
    ASSERT_FALSE(file);
    EXPECT_EQ(file.status().code(), ErrorCode::InvalidArgument);
}

TEST(ConvertRefuses, InterruptedStateOfOtherOptionsIsNotResumed) {
    st_test::TempDir tmp;
    ConvertOptions opt;
    opt.plan.maxShardBytes = 64 << 10;
    const std::string dst = tmp.file("dst");
    FaultyFileSystem disk(posixFileSystem(), 100 << 10);
    ASSERT_FALSE(convertCheckpoint(fixture("olmoe"), dst, opt, disk));
    ASSERT_TRUE(fs::exists(fs::path(dst) / kStateName));
    ConvertOptions other = opt;
    other.plan.experts = StoredFormat::Q8_G64;
    auto r = convertCheckpoint(fixture("olmoe"), dst, other);
    ASSERT_FALSE(r);
    EXPECT_NE(r.status().message().find("not empty"), std::string::npos);
    other.force = true;
    auto forced = convertCheckpoint(fixture("olmoe"), dst, other);
    ASSERT_TRUE(forced) << forced.status().toString();
    EXPECT_EQ(forced->shardsReused, 0u);
    EXPECT_EQ(forced->manifest.quantisation.at("experts"), "int8-g64");
}

// A checkpoint whose attention weight is stored as I64: a dtype the reader parses but nothing
// can be quantised from.
TEST(ConvertRefuses, UnconvertibleDtype) {
    st_test::TempDir tmp;
    const fs::path src = tmp.path() / "src";
    convert_test::copyDir(fixture("olmoe"), src);
    std::vector<st_test::Tensor> ts;
    const std::string bad = "model.layers.0.self_attn.q_proj.weight";
    {
        auto ck = Checkpoint::open(src.string());
        ASSERT_TRUE(ck);
        for (const TensorInfo* t : ck.value()->tensors()) {
            st_test::Tensor x{t->name, dtypeName(t->dtype), t->shape, {}};
            x.data.resize(t->nbytes);
            ASSERT_TRUE(ck.value()->readRaw(*t, 0, t->nbytes, x.data.data()));
            if (t->name == bad) {
                x.dtype = "I64";
                x.data.assign(size_t(t->numel()) * 8, 0);
            }
            ts.push_back(std::move(x));
        }
    }
    st_test::writeSafetensors(src / "model.safetensors", ts);
    FailureSide side = FailureSide::None;
    const fs::path dst = tmp.path() / "dst";
    auto r =
        convertCheckpoint(src.string(), dst.string(), {}, posixFileSystem(), {}, nullptr, &side);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.status().code(), ErrorCode::Unsupported);
    EXPECT_NE(r.status().message().find(bad), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("I64"), std::string::npos) << r.status().message();
    EXPECT_EQ(side, FailureSide::Source);
    EXPECT_FALSE(fs::exists(dst)); // refused before the destination was touched
}

TEST(ConvertRefuses, NotEnoughFreeSpace) {
    st_test::TempDir tmp;
    FaultyFileSystem disk(posixFileSystem());
    disk.reportedFree = 100 << 10;
    FailureSide side = FailureSide::None;
    auto r = convertCheckpoint(fixture("olmoe"), tmp.file("dst"), {}, disk, {}, nullptr, &side);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.status().code(), ErrorCode::NoSpace);
    EXPECT_NE(r.status().message().find("not enough free space"), std::string::npos)
        << r.status().message();
    EXPECT_EQ(side, FailureSide::Destination);
    EXPECT_TRUE(disk.created().empty());
}

TEST(ConvertRefuses, DiskFullNamesTheFile) {
    st_test::TempDir tmp;
    FaultyFileSystem disk(posixFileSystem(), 10000);
    const std::string dst = tmp.file("dst");
    auto r = convertCheckpoint(fixture("qwen2moe"), dst, {}, disk);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.status().message(),
              "disk full writing " + dst + "/model-00001-of-00001.safetensors.partial");
    // Nothing that looks finished: no shard under its final name, no manifest.
    EXPECT_FALSE(fs::exists(fs::path(dst) / "model-00001-of-00001.safetensors"));
    EXPECT_FALSE(fs::exists(fs::path(dst) / kManifestName));
}

TEST(ConvertRefuses, SourceChangedDuringConversion) {
    st_test::TempDir tmp;
    const fs::path src = tmp.path() / "src";
    convert_test::copyDir(fixture("olmoe"), src);
    bool touched = false;
    auto touch = [&](const ConvertProgress& p) {
        if (touched || std::strcmp(p.phase, "converting") != 0) return;
        touched = true;
        const fs::path f = src / "model.safetensors";
        fs::last_write_time(f, fs::last_write_time(f) + std::chrono::seconds(5));
    };
    FailureSide side = FailureSide::None;
    const fs::path dst = tmp.path() / "dst";
    auto r =
        convertCheckpoint(src.string(), dst.string(), {}, posixFileSystem(), touch, nullptr, &side);
    ASSERT_TRUE(touched);
    ASSERT_FALSE(r);
    EXPECT_NE(r.status().message().find("source changed during conversion"), std::string::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find("model.safetensors"), std::string::npos);
    EXPECT_EQ(side, FailureSide::Source);
    EXPECT_FALSE(fs::exists(dst / "model-00001-of-00001.safetensors"));
    EXPECT_FALSE(fs::exists(dst / kManifestName));
}

TEST(ConvertRefuses, CancelledBetweenTensors) {
    st_test::TempDir tmp;
    std::atomic<bool> cancel{true};
    auto r =
        convertCheckpoint(fixture("olmoe"), tmp.file("dst"), {}, posixFileSystem(), {}, &cancel);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.status().code(), ErrorCode::Cancelled);
}

// Ctrl+C in the middle: the run stops between tensors, and the same command resumes it to the
// bytes of an uninterrupted conversion.
TEST(ConvertRefuses, CancelledMidwayResumesToTheSameBytes) {
    st_test::TempDir tmp;
    ConvertOptions opt;
    opt.plan.maxShardBytes = 64 << 10;
    const std::string ref = tmp.file("ref"), dst = tmp.file("dst");
    ASSERT_TRUE(convertCheckpoint(fixture("qwen3moe"), ref, opt));
    std::atomic<bool> cancel{false};
    auto stopHalfway = [&](const ConvertProgress& p) {
        if (std::strcmp(p.phase, "converting") == 0 && p.itemsDone * 2 >= p.itemsTotal)
            cancel = true;
    };
    auto r =
        convertCheckpoint(fixture("qwen3moe"), dst, opt, posixFileSystem(), stopHalfway, &cancel);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.status().code(), ErrorCode::Cancelled);
    auto again = convertCheckpoint(fixture("qwen3moe"), dst, opt);
    ASSERT_TRUE(again) << again.status().toString();
    EXPECT_GT(again->shardsReused, 0u);
    EXPECT_GT(again->shardsWritten, 0u);
    const auto fr = convert_test::allFiles(ref), fd = convert_test::allFiles(dst);
    ASSERT_EQ(fr.size(), fd.size());
    for (const auto& [name, bytes] : fr)
        EXPECT_TRUE(fd.count(name) && bytes == fd.at(name)) << name;
}

} // namespace
} // namespace coli::convert
