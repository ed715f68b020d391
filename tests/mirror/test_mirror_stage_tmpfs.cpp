// Staging onto a disk that really fills up: a small tmpfs, mounted in a private mount namespace
// (as root: unshare(CLONE_NEWNS); otherwise in a user namespace too, as `unshare -rm` does). The
// plan fits the free space; another writer then takes most of it; staging stops with NoSpace
// naming the file, the partial temporary kept and no receipt; once the space is freed the same
// stage finishes. Where no tmpfs can be mounted the test exits 77, which CTest counts as skipped
// (SKIP_RETURN_CODE), saying why; the injected full disk (test_mirror_stage,
// test_mirror_stage_cli) runs everywhere.
#include "mirror_stage_util.h"

#include "mirror/expert_files.h"
#include "mirror/mirror_plan.h"
#include "mirror/mirror_receipt.h"
#include "mirror/mirror_stage.h"
#include "mirror/mirror_verify.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sched.h>
#include <string>
#include <sys/mount.h>
#include <unistd.h>

using namespace coli;
using namespace coli::mirror;
using mirror_test::exists;
namespace fs = std::filesystem;

namespace {

bool writeProc(const char* path, const std::string& text) {
    const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const bool ok = ::write(fd, text.data(), text.size()) == ssize_t(text.size());
    ::close(fd);
    return ok;
}

// A private mount namespace for this (still single-threaded) process; "" or why not.
std::string enterMountNamespace() {
    std::string why;
    if (::geteuid() == 0 && ::unshare(CLONE_NEWNS) == 0) {
        // Done.
    } else {
        why = std::string("unshare(CLONE_NEWNS): ") + std::strerror(errno);
        const uid_t uid = ::geteuid();
        const gid_t gid = ::getegid();
        if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
            return why + "; unshare(CLONE_NEWUSER | CLONE_NEWNS): " + std::strerror(errno);
        writeProc("/proc/self/setgroups", "deny");
        if (!writeProc("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1\n") ||
            !writeProc("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1\n"))
            return "cannot map the user in a new user namespace: " +
                   std::string(std::strerror(errno));
    }
    // Mounts made here must not reach the parent's namespace.
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
        return std::string("making / private: ") + std::strerror(errno);
    // A tmpfs may still be refused (a container's seccomp or LSM policy): try one.
    st_test::TempDir probe;
    if (::mount("tmpfs", probe.path().c_str(), "tmpfs", 0, "size=64k") != 0)
        return std::string("mount -t tmpfs: ") + std::strerror(errno);
    ::umount2(probe.path().c_str(), MNT_DETACH);
    return {};
}

uint64_t blocks(uint64_t bytes, uint64_t block) {
    return (bytes + block - 1) / block * block;
}

TEST(MirrorStageTmpfs, DiskFullDuringStagingKeepsThePartialCopyAndTheRerunFinishes) {
    st_test::TempDir tmp;
    const std::string box = (tmp.path() / "box").string();
    mirror_test::makeContainer(box);
    auto files = findExpertFiles(box);
    ASSERT_TRUE(files.isOk()) << files.status().message();
    uint64_t all = 0;
    for (const ExpertFile& f : files.value().files)
        all += blocks(f.size, 4096);

    const std::string mnt = (tmp.path() / "disk").string();
    fs::create_directories(mnt);
    const std::string opts = "size=" + std::to_string(all + (64 << 10));
    ASSERT_EQ(::mount("tmpfs", mnt.c_str(), "tmpfs", 0, opts.c_str()), 0) << std::strerror(errno);
    struct Unmount {
        std::string at;
        ~Unmount() { ::umount2(at.c_str(), MNT_DETACH); }
    } unmount{mnt};
    const std::string mirrorDir = mnt + "/mirror";
    fs::create_directories(mirrorDir);

    MirrorPlanOptions o;
    o.reserveBytes = 0;
    auto plan = planMirrorFolder(files.value(), {}, mirrorDir, o);
    ASSERT_TRUE(plan.isOk()) << plan.status().message();
    const std::vector<std::string> paths = plan.value().stagePaths();
    ASSERT_EQ(paths.size(), files.value().files.size()) << "the plan must fit the whole tmpfs";

    // Another program takes the room of everything but the first file and a few blocks.
    auto space = diskSpace(mirrorDir);
    ASSERT_TRUE(space.isOk());
    const uint64_t block = space.value().blockBytes;
    const uint64_t keep = blocks(fs::file_size(box + "/" + paths[0]), block) + 3 * block;
    ASSERT_GT(space.value().freeBytes, keep);
    const std::string filler = mnt + "/filler";
    mirror_test::writeAll(filler, std::string(space.value().freeBytes - keep, 'f'));
    ASSERT_EQ(fs::file_size(filler), space.value().freeBytes - keep);

    auto r = stageMirror(plan.value());
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), ErrorCode::NoSpace);
    const std::string msg = r.status().message();
    EXPECT_NE(msg.find("disk is full"), std::string::npos) << msg;
    EXPECT_NE(msg.find(paths[1]), std::string::npos) << msg;
    EXPECT_NE(msg.find("kept"), std::string::npos) << msg;
    EXPECT_TRUE(exists(mirrorDir + "/" + paths[0]));
    const std::string partial = mirrorDir + "/" + paths[1] + kPartialSuffix;
    ASSERT_TRUE(exists(partial));
    EXPECT_GT(fs::file_size(partial), 0u);
    EXPECT_LT(fs::file_size(partial), fs::file_size(box + "/" + paths[1]));
    EXPECT_FALSE(exists(mirrorDir + "/" + paths[1]));
    EXPECT_FALSE(exists(mirrorDir + "/" + kMirrorReceiptName));

    // Space freed: the same stage (planned again) finishes, keeping the first file.
    fs::remove(filler);
    plan = planMirrorFolder(files.value(), {}, mirrorDir, o);
    ASSERT_TRUE(plan.isOk()) << plan.status().message();
    EXPECT_EQ(plan.value().stagePaths(), paths);
    r = stageMirror(plan.value());
    ASSERT_TRUE(r.isOk()) << r.status().message();
    EXPECT_EQ(r.value().kept, 1);
    EXPECT_EQ(r.value().copied, int(paths.size()) - 1);
    EXPECT_FALSE(exists(partial));
    auto v = verifyMirror(box, mirrorDir);
    ASSERT_TRUE(v.isOk()) << v.status().message();
    EXPECT_TRUE(v.value().findings.empty());
    EXPECT_EQ(v.value().filesOk, int(paths.size()));
}

} // namespace

int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    // Before any thread starts: unshare(CLONE_NEWUSER) needs a single-threaded process.
    const std::string why = enterMountNamespace();
    if (!why.empty()) {
        std::printf("SKIPPED: no tmpfs can be mounted here (%s); the injected disk-full tests "
                    "still run (test_mirror_stage, test_mirror_stage_cli)\n",
                    why.c_str());
        return 77;
    }
    return RUN_ALL_TESTS();
}
