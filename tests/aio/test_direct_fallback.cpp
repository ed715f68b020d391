// The O_DIRECT check of each file (engine/aio/direct_probe.h) and what the pool does with it
// (docs/tiers.md "Buffered or O_DIRECT"): under DirectIo::Auto a refused file is read buffered
// with one note naming the file and its file system; under On it is an Unsupported error naming
// both; under Off nothing is checked. Refusals are injected through the test hook (the option
// and the environment variable), since this machine's file systems all accept O_DIRECT.
#include "aio/direct_probe.h"
#include "aio_test_util.h"

#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/statfs.h>
#include <unistd.h>

namespace coli::aio {
namespace {

using test::alignedBuffer;
using test::workDir;
using test::writeRandomFile;

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

std::string fsNameOf(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return "";
    const std::string name = fileSystemName(fd);
    ::close(fd);
    return name;
}

std::unique_ptr<IoPool> makePool(DirectIo mode, const std::string& refuse) {
    IoOptions io;
    io.backend = IoBackend::PreadThreads;
    io.queueDepth = 2;
    io.directIo = mode;
    io.testRefuseDirect = refuse;
    auto p = IoPool::create(io);
    EXPECT_TRUE(p.isOk()) << p.status().toString();
    return p.isOk() ? std::move(p).value() : nullptr;
}

TEST(DirectFallback, AutoReadsARefusedFileBufferedWithOneNote) {
    const std::string dir = workDir("fallback-auto");
    const auto okBytes = writeRandomFile(dir + "/ok.bin", 64 << 10, 1);
    const auto refusedBytes = writeRandomFile(dir + "/refused.bin", 64 << 10, 2);
    auto pool = makePool(DirectIo::Auto, "refused");
    ASSERT_TRUE(pool);
    EXPECT_EQ(pool->directIoMode(), DirectIo::Auto);
    auto ok = pool->openFile(dir + "/ok.bin");
    auto refused = pool->openFile(dir + "/refused.bin");
    ASSERT_TRUE(ok.isOk()) << ok.status().toString();
    ASSERT_TRUE(refused.isOk()) << refused.status().toString();

    EXPECT_TRUE(pool->fileDirect(*ok));
    EXPECT_EQ(pool->fileNote(*ok), "");
    EXPECT_FALSE(pool->fileDirect(*refused));
    const std::string note = pool->fileNote(*refused);
    EXPECT_TRUE(contains(note, dir + "/refused.bin")) << note;
    EXPECT_TRUE(contains(note, "read buffered")) << note;
    const std::string fs = fsNameOf(dir + "/refused.bin");
    EXPECT_TRUE(contains(note, "O_DIRECT refused on this file system (" + fs + ")")) << note;
    EXPECT_TRUE(contains(note, kRefuseDirectEnv)) << note; // says the refusal was injected
    EXPECT_FALSE(pool->directIo());
    EXPECT_EQ(pool->readModeText(), "O_DIRECT (1 of 2 files buffered)");

    // The refused file takes any range (buffered); the other still insists on alignment.
    std::vector<unsigned char> buf(1000);
    ASSERT_TRUE(pool->readNow({*refused, 123, buf.size(), buf.data()}).isOk());
    EXPECT_EQ(std::memcmp(buf.data(), refusedBytes.data() + 123, buf.size()), 0);
    EXPECT_EQ(pool->readNow({*ok, 123, buf.size(), buf.data()}).code(), ErrorCode::InvalidArgument);
    auto aligned = alignedBuffer(2 * kDirectIoAlign);
    ASSERT_TRUE(pool->readNow({*ok, kDirectIoAlign, 2 * kDirectIoAlign, aligned.get()}).isOk());
    EXPECT_EQ(std::memcmp(aligned.get(), okBytes.data() + kDirectIoAlign, 2 * kDirectIoAlign), 0);
}

TEST(DirectFallback, OnRefusesNamingTheFileAndFileSystem) {
    const std::string dir = workDir("fallback-on");
    writeRandomFile(dir + "/refused.bin", 16 << 10, 3);
    auto pool = makePool(DirectIo::On, "refused");
    ASSERT_TRUE(pool);
    auto f = pool->openFile(dir + "/refused.bin");
    ASSERT_FALSE(f.isOk());
    EXPECT_EQ(f.status().code(), ErrorCode::Unsupported);
    const std::string m = f.status().message();
    EXPECT_TRUE(contains(m, dir + "/refused.bin")) << m;
    const std::string fs = fsNameOf(dir + "/refused.bin");
    EXPECT_TRUE(contains(m, "O_DIRECT refused on this file system (" + fs + ")")) << m;
    EXPECT_TRUE(contains(m, "--buffered")) << m;
    // buffered = true is the caller's choice and is never refused.
    auto b = pool->openFile(dir + "/refused.bin", true);
    ASSERT_TRUE(b.isOk()) << b.status().toString();
    EXPECT_FALSE(pool->fileDirect(*b));
    EXPECT_EQ(pool->fileNote(*b), "");
    EXPECT_EQ(pool->readModeText(), "buffered");
}

TEST(DirectFallback, OffChecksNothing) {
    const std::string dir = workDir("fallback-off");
    writeRandomFile(dir + "/refused.bin", 16 << 10, 4);
    auto pool = makePool(DirectIo::Off, "refused");
    ASSERT_TRUE(pool);
    auto f = pool->openFile(dir + "/refused.bin");
    ASSERT_TRUE(f.isOk()) << f.status().toString();
    EXPECT_FALSE(pool->fileDirect(*f));
    EXPECT_EQ(pool->fileNote(*f), "");
    EXPECT_FALSE(pool->directIo());
    EXPECT_EQ(pool->readModeText(), "buffered");
    EXPECT_FALSE(pool->fileDirect(99));
    EXPECT_EQ(pool->fileNote(-1), "");
}

TEST(DirectFallback, EnvironmentVariableInjectsToo) {
    const std::string dir = workDir("fallback-env");
    writeRandomFile(dir + "/by-env.bin", 16 << 10, 5);
    ASSERT_EQ(::setenv(kRefuseDirectEnv, "by-env", 1), 0);
    EXPECT_EQ(refuseDirectPattern(""), "by-env");
    EXPECT_EQ(refuseDirectPattern("option"), "option"); // the option wins
    auto pool = makePool(DirectIo::Auto, "");
    ::unsetenv(kRefuseDirectEnv);
    ASSERT_TRUE(pool);
    auto f = pool->openFile(dir + "/by-env.bin");
    ASSERT_TRUE(f.isOk()) << f.status().toString();
    EXPECT_FALSE(pool->fileDirect(*f));
    EXPECT_TRUE(contains(pool->fileNote(*f), "by-env.bin")) << pool->fileNote(*f);
    EXPECT_EQ(refuseDirectPattern(""), "");
}

TEST(DirectFallback, ProbeOfAReadableFileAndOfAMissingOne) {
    const std::string dir = workDir("probe");
    writeRandomFile(dir + "/small.bin", 1000, 6); // shorter than one block: a short test read
    auto p = probeDirectRead(dir + "/small.bin", "");
    ASSERT_TRUE(p.isOk()) << p.status().toString();
    EXPECT_EQ(p->fsName, fsNameOf(dir + "/small.bin"));
    EXPECT_FALSE(p->fsName.empty());
    if (p->fd >= 0) {
        EXPECT_EQ(p->reason, "");
        ::close(p->fd);
    } else {
        // Not this machine's case; still a well-formed refusal.
        EXPECT_FALSE(p->reason.empty());
        std::printf("[aio] %s refuses O_DIRECT here: %s\n", p->fsName.c_str(), p->reason.c_str());
    }
    auto missing = probeDirectRead(dir + "/missing.bin", "");
    ASSERT_FALSE(missing.isOk());
    EXPECT_EQ(missing.status().code(), ErrorCode::Io);
    EXPECT_TRUE(contains(missing.status().message(), dir + "/missing.bin"))
        << missing.status().message();
}

TEST(DirectFallback, DioAlignFigures) {
    EXPECT_EQ(dioAlignProblem(512, 512), ""); // ext4 on this machine
    EXPECT_EQ(dioAlignProblem(4, 4096), "");  // a buffer alignment of 4 bytes is fine
    EXPECT_EQ(dioAlignProblem(0, 4096), "");  // no buffer alignment reported
    EXPECT_TRUE(contains(dioAlignProblem(512, 0), "no direct I/O"));
    EXPECT_TRUE(contains(dioAlignProblem(512, 8192), "8192-byte offsets"));
    EXPECT_TRUE(contains(dioAlignProblem(8192, 512), "8192-byte buffers"));
    EXPECT_TRUE(contains(dioAlignProblem(512, 3000), "3000-byte offsets")); // does not divide 4096
}

TEST(DirectFallback, FileSystemNames) {
    struct statfs fs {};
    if (::statfs("/proc", &fs) == 0) {
        // procfs is not in the list: its magic in hex.
        const int fd = ::open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
        ASSERT_GE(fd, 0);
        EXPECT_EQ(fileSystemName(fd), "0x9fa0");
        ::close(fd);
    }
    EXPECT_EQ(fileSystemName(-1), "unknown");
}

// tmpfs: refused before Linux 6.6 (a real refusal, then read buffered with a note naming tmpfs),
// accepted since. Either way the bytes read are the file's.
TEST(DirectFallback, TmpfsIsReadEitherWay) {
    struct statfs fs {};
    if (::statfs("/dev/shm", &fs) != 0 || fs.f_type != 0x01021994)
        GTEST_SKIP() << "/dev/shm is not a tmpfs here";
    const std::string path = "/dev/shm/coli-fallback-" + std::to_string(::getpid()) + ".bin";
    const auto bytes = writeRandomFile(path, 64 << 10, 7);
    EXPECT_EQ(fsNameOf(path), "tmpfs");
    auto pool = makePool(DirectIo::Auto, "");
    ASSERT_TRUE(pool);
    auto f = pool->openFile(path);
    ASSERT_TRUE(f.isOk()) << f.status().toString();
    if (!pool->fileDirect(*f)) {
        const std::string note = pool->fileNote(*f);
        EXPECT_TRUE(contains(note, path)) << note;
        EXPECT_TRUE(contains(note, "(tmpfs)")) << note;
    }
    std::printf("[aio] tmpfs here: %s\n",
                pool->fileDirect(*f) ? "O_DIRECT accepted" : pool->fileNote(*f).c_str());
    auto buf = alignedBuffer(8192);
    const Status s = pool->readNow({*f, 4096, 8192, buf.get()});
    std::filesystem::remove(path);
    ASSERT_TRUE(s.isOk()) << s.toString();
    EXPECT_EQ(std::memcmp(buf.get(), bytes.data() + 4096, 8192), 0);
}

} // namespace
} // namespace coli::aio
