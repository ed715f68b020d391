// IoPool (engine/aio/io_pool.h) on both backends: the bytes read are the file's bytes, the queue
// depth bounds the reads in flight, O_DIRECT rules, errors through the callback, failure
// injection, the destructor draining the queue, and the difference of two stats snapshots.
#include "aio_test_util.h"

#include <atomic>
#include <chrono>
#include <cstring>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <thread>

namespace coli::aio {
namespace {

using test::alignedBuffer;
using test::Latch;
using test::workDir;
using test::writeRandomFile;

class IoPoolBackend : public ::testing::TestWithParam<IoBackend> {};

std::string backendTestName(const ::testing::TestParamInfo<IoBackend>& info) {
    return info.param == IoBackend::Uring ? "Uring" : "PreadThreads";
}

TEST_P(IoPoolBackend, RandomReadsReturnTheFileBytes) {
    for (const bool direct : {false, true}) {
        SCOPED_TRACE(direct ? "O_DIRECT" : "buffered");
        const std::string dir = workDir(std::string("random-") + backendTestName({GetParam(), 0}) +
                                        (direct ? "-direct" : ""));
        const auto bytes = writeRandomFile(dir + "/a.bin", 3 << 20, 7);
        const auto other = writeRandomFile(dir + "/b.bin", 1 << 20, 8);
        COLI_MAKE_POOL(pool, GetParam(), 6, direct);
        EXPECT_EQ(pool->backend(), GetParam());
        EXPECT_EQ(pool->directIo(), direct);
        EXPECT_EQ(pool->queueDepth(), 6);
        auto a = pool->openFile(dir + "/a.bin");
        auto b = pool->openFile(dir + "/b.bin");
        ASSERT_TRUE(a.isOk() && b.isOk()) << a.status().toString() << b.status().toString();
        EXPECT_EQ(pool->fileSize(a.value()).value(), bytes.size());
        EXPECT_EQ(pool->fileSize(b.value()).value(), other.size());

        constexpr int kReads = 300;
        std::mt19937 rng(42);
        struct Job {
            int file;
            uint64_t offset, length;
            test::AlignedBuffer buf;
            Status status{ErrorCode::Internal, "never completed"};
        };
        std::vector<Job> jobs(kReads);
        uint64_t expectBytes = 0;
        for (Job& j : jobs) {
            const bool useA = rng() % 4 != 0;
            const uint64_t size = useA ? bytes.size() : other.size();
            j.file = useA ? a.value() : b.value();
            if (direct) { // whole 4096-byte blocks
                j.length = (1 + rng() % 64) * kDirectIoAlign;
                j.offset = rng() % ((size - j.length) / kDirectIoAlign + 1) * kDirectIoAlign;
            } else {
                j.length = 1 + rng() % 200000;
                j.offset = rng() % (size - j.length + 1);
            }
            j.buf = alignedBuffer(j.length);
            expectBytes += j.length;
        }
        Latch latch;
        for (Job& j : jobs)
            pool->submit({j.file, j.offset, j.length, j.buf.get()}, [&j, &latch](const Status& s) {
                j.status = s;
                latch.arrive();
            });
        latch.wait(kReads);
        for (const Job& j : jobs) {
            ASSERT_TRUE(j.status.isOk()) << j.status.toString();
            const auto& src = j.file == a.value() ? bytes : other;
            ASSERT_EQ(std::memcmp(j.buf.get(), src.data() + j.offset, j.length), 0)
                << "offset " << j.offset << " length " << j.length;
        }
        const IoStats st = pool->stats();
        EXPECT_EQ(st.reads, uint64_t(kReads));
        EXPECT_EQ(st.failed, 0u);
        EXPECT_EQ(st.bytes, expectBytes);
        EXPECT_GT(st.busySeconds, 0.0);
        EXPECT_GE(st.maxInFlight, 1);
        EXPECT_LE(st.maxInFlight, 6);
    }
}

TEST_P(IoPoolBackend, QueueDepthBoundsReadsInFlight) {
    const std::string dir = workDir("depth-" + backendTestName({GetParam(), 0}));
    const auto bytes = writeRandomFile(dir + "/a.bin", 8 << 20, 3);
    // O_DIRECT reads go to the disk every time, so reads last long enough to overlap.
    COLI_MAKE_POOL(pool, GetParam(), 4, true);
    const int f = pool->openFile(dir + "/a.bin").value();
    constexpr int kReads = 64;
    constexpr uint64_t kLen = 256 << 10;
    std::vector<test::AlignedBuffer> bufs;
    Latch latch;
    std::atomic<int> failures{0};
    for (int i = 0; i < kReads; ++i) {
        bufs.push_back(alignedBuffer(kLen));
        const uint64_t offset = uint64_t(i * 7 % 32) * kLen;
        pool->submit({f, offset, kLen, bufs.back().get()}, [&, i, offset](const Status& s) {
            if (!s.isOk() || std::memcmp(bufs[size_t(i)].get(), bytes.data() + offset, kLen) != 0)
                ++failures;
            latch.arrive();
        });
    }
    latch.wait(kReads);
    EXPECT_EQ(failures.load(), 0);
    const IoStats st = pool->stats();
    EXPECT_LE(st.maxInFlight, 4);
    EXPECT_GT(st.maxInFlight, 1) << "64 queued reads never overlapped";
    EXPECT_EQ(st.bytes, kReads * kLen);
}

TEST_P(IoPoolBackend, DirectIoRefusesMisalignedRequests) {
    const std::string dir = workDir("misaligned-" + backendTestName({GetParam(), 0}));
    writeRandomFile(dir + "/a.bin", 1 << 20);
    COLI_MAKE_POOL(pool, GetParam(), 2, true);
    const int f = pool->openFile(dir + "/a.bin").value();
    auto buf = alignedBuffer(3 * kDirectIoAlign);
    const ReadRequest bad[] = {
        {f, 100, kDirectIoAlign, buf.get()},     // offset
        {f, 0, 1000, buf.get()},                 // length
        {f, 0, kDirectIoAlign, buf.get() + 512}, // destination
        {f, 0, 0, buf.get()},                    // zero length
        {f, 0, kDirectIoAlign, nullptr},         // null destination
        {f + 5, 0, kDirectIoAlign, buf.get()},   // unknown file
    };
    Latch latch;
    std::vector<Status> got(std::size(bad));
    const auto caller = std::this_thread::get_id();
    std::atomic<bool> onCaller{false};
    for (size_t i = 0; i < std::size(bad); ++i)
        pool->submit(bad[i], [&, i](const Status& s) {
            got[i] = s;
            if (std::this_thread::get_id() == caller) onCaller = true;
            latch.arrive();
        });
    latch.wait(std::size(bad));
    EXPECT_FALSE(onCaller.load()) << "a callback ran inside submit()";
    for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].code(), ErrorCode::InvalidArgument) << i << ": " << got[i].toString();
        EXPECT_EQ(pool->readNow(bad[i]).code(), ErrorCode::InvalidArgument) << i;
    }
    EXPECT_NE(got[0].message().find("a.bin"), std::string::npos) << got[0].message();
    EXPECT_NE(got[0].message().find("4096"), std::string::npos) << got[0].message();
    EXPECT_EQ(pool->stats().failed, std::size(bad));
    // Aligned reads still work after the refusals.
    EXPECT_TRUE(pool->readNow({f, kDirectIoAlign, 2 * kDirectIoAlign, buf.get()}).isOk());
}

TEST_P(IoPoolBackend, ShortFileIsAnIoErrorNamingFileAndOffset) {
    for (const bool direct : {false, true}) {
        SCOPED_TRACE(direct ? "O_DIRECT" : "buffered");
        const std::string dir = workDir("short-" + backendTestName({GetParam(), 0}));
        writeRandomFile(dir + "/short.bin", 10000); // not a multiple of 4096
        COLI_MAKE_POOL(pool, GetParam(), 2, direct);
        const int f = pool->openFile(dir + "/short.bin").value();
        auto buf = alignedBuffer(4 * kDirectIoAlign);
        Latch latch;
        Status got;
        pool->submit({f, 8192, 8192, buf.get()}, [&](const Status& s) {
            got = s;
            latch.arrive();
        });
        latch.wait(1);
        EXPECT_EQ(got.code(), ErrorCode::Io) << got.toString();
        EXPECT_NE(got.message().find("short.bin"), std::string::npos) << got.message();
        EXPECT_NE(got.message().find("offset 8192"), std::string::npos) << got.message();
        EXPECT_NE(got.message().find("end of file at byte 10000"), std::string::npos)
            << got.message();
        const Status now = pool->readNow({f, 8192, 8192, buf.get()});
        EXPECT_EQ(now.code(), ErrorCode::Io);
        EXPECT_EQ(now.message(), got.message());
        // Past the end entirely.
        EXPECT_EQ(pool->readNow({f, 16384, 4096, buf.get()}).code(), ErrorCode::Io);
        const IoStats st = pool->stats();
        EXPECT_EQ(st.reads, 1u);
        EXPECT_EQ(st.failed, 1u);
        EXPECT_EQ(st.bytes, 0u);
    }
}

// A range rounded out to whole blocks (an O_DIRECT read of a checkpoint tensor at the end of its
// file) may end inside the file's last block: the bytes up to the end arrive, and no error.
TEST_P(IoPoolBackend, AlignedReadMayEndInsideTheLastBlock) {
    for (const bool direct : {false, true}) {
        SCOPED_TRACE(direct ? "O_DIRECT" : "buffered");
        const std::string dir = workDir("tail-" + backendTestName({GetParam(), 0}));
        const auto bytes = writeRandomFile(dir + "/tail.bin", 10000, 9); // ends 1808 into a block
        COLI_MAKE_POOL(pool, GetParam(), 2, direct);
        const int f = pool->openFile(dir + "/tail.bin").value();
        auto buf = alignedBuffer(2 * kDirectIoAlign);
        Latch latch;
        Status got{ErrorCode::Internal, "never completed"};
        pool->submit({f, 4096, 2 * kDirectIoAlign, buf.get()}, [&](const Status& s) {
            got = s;
            latch.arrive();
        });
        latch.wait(1);
        ASSERT_TRUE(got.isOk()) << got.toString();
        EXPECT_EQ(std::memcmp(buf.get(), bytes.data() + 4096, 10000 - 4096), 0);
        std::memset(buf.get(), 0, 2 * kDirectIoAlign);
        ASSERT_TRUE(pool->readNow({f, 8192, kDirectIoAlign, buf.get()}).isOk());
        EXPECT_EQ(std::memcmp(buf.get(), bytes.data() + 8192, 10000 - 8192), 0);
        // An unaligned range gets no such allowance (buffered), nor a whole block past the end.
        if (!direct) {
            std::vector<unsigned char> small(500);
            EXPECT_EQ(pool->readNow({f, 9700, 500, small.data()}).code(), ErrorCode::Io);
        }
        EXPECT_EQ(pool->readNow({f, 8192, 2 * kDirectIoAlign, buf.get()}).code(), ErrorCode::Io);
    }
}

TEST_P(IoPoolBackend, InjectedFailureReachesTheCallbackAndThePoolGoesOn) {
    const std::string dir = workDir("inject-" + backendTestName({GetParam(), 0}));
    const auto bytes = writeRandomFile(dir + "/a.bin", 1 << 20);
    COLI_MAKE_POOL(pool, GetParam(), 3, false);
    const int f = pool->openFile(dir + "/a.bin").value();
    std::vector<unsigned char> buf(4096);
    auto readOne = [&](uint64_t offset) {
        Latch latch;
        Status got;
        pool->submit({f, offset, buf.size(), buf.data()}, [&](const Status& s) {
            got = s;
            latch.arrive();
        });
        latch.wait(1);
        return got;
    };
    pool->injectFailure(2); // the third completion from now
    EXPECT_TRUE(readOne(0).isOk());
    EXPECT_TRUE(readOne(4096).isOk());
    const Status injected = readOne(8192);
    EXPECT_EQ(injected.code(), ErrorCode::Io);
    EXPECT_NE(injected.message().find("injected read failure"), std::string::npos);
    for (uint64_t off = 0; off < 10 * 4096; off += 4096) {
        ASSERT_TRUE(readOne(off).isOk());
        ASSERT_EQ(std::memcmp(buf.data(), bytes.data() + off, buf.size()), 0);
    }
    pool->injectFailure(0);
    EXPECT_EQ(readOne(0).code(), ErrorCode::Io);
    EXPECT_TRUE(readOne(0).isOk());
    const IoStats st = pool->stats();
    EXPECT_EQ(st.reads, 15u);
    EXPECT_EQ(st.failed, 2u);
    EXPECT_EQ(st.bytes, 13u * 4096);
}

TEST_P(IoPoolBackend, DestructorWaitsForEveryCallback) {
    const std::string dir = workDir("drain-" + backendTestName({GetParam(), 0}));
    writeRandomFile(dir + "/a.bin", 1 << 20);
    std::atomic<int> done{0};
    constexpr int kReads = 40;
    std::vector<std::vector<unsigned char>> bufs(kReads, std::vector<unsigned char>(8192));
    {
        COLI_MAKE_POOL(pool, GetParam(), 2, false);
        const int f = pool->openFile(dir + "/a.bin").value();
        for (int i = 0; i < kReads; ++i)
            pool->submit({f, uint64_t(i) * 8192, 8192, bufs[size_t(i)].data()},
                         [&done](const Status& s) {
                             std::this_thread::sleep_for(std::chrono::milliseconds(2));
                             if (s.isOk()) ++done;
                         });
    } // ~IoPool
    EXPECT_EQ(done.load(), kReads);
}

INSTANTIATE_TEST_SUITE_P(Backends, IoPoolBackend,
                         ::testing::Values(IoBackend::PreadThreads, IoBackend::Uring),
                         backendTestName);

TEST(IoStats, DifferenceOfTwoSnapshots) {
    const IoStats earlier{10, 4096, 1, 0.25, 3};
    const IoStats later{25, 12288, 2, 1.0, 5};
    const IoStats d = later - earlier;
    EXPECT_EQ(d.reads, 15u);
    EXPECT_EQ(d.bytes, 8192u);
    EXPECT_EQ(d.failed, 1u);
    EXPECT_DOUBLE_EQ(d.busySeconds, 0.75);
    EXPECT_EQ(d.maxInFlight, 5); // the later high-water mark, not a difference
}

TEST(IoPool, CreateRejectsBadQueueDepth) {
    for (const int depth : {0, -1, 65}) {
        auto pool = IoPool::create({IoBackend::PreadThreads, depth, DirectIo::Off, {}});
        ASSERT_FALSE(pool.isOk());
        EXPECT_EQ(pool.status().code(), ErrorCode::InvalidArgument);
        EXPECT_NE(pool.status().message().find(std::to_string(depth)), std::string::npos);
    }
}

TEST(IoPool, AutoPicksARealBackend) {
    auto pool = IoPool::create({});
    ASSERT_TRUE(pool.isOk()) << pool.status().toString();
    EXPECT_NE(pool.value()->backend(), IoBackend::Auto);
    auto uring = IoPool::create({IoBackend::Uring, 4, DirectIo::Off, {}});
    // Auto means io_uring exactly when an io_uring pool can be made here.
    EXPECT_EQ(pool.value()->backend() == IoBackend::Uring, uring.isOk())
        << (uring.isOk() ? "" : uring.status().toString());
    std::printf("[aio] Auto picked %s here%s\n", ioBackendName(pool.value()->backend()),
                uring.isOk() ? "" : (" (" + uring.status().toString() + ")").c_str());
    EXPECT_STREQ(ioBackendName(IoBackend::Auto), "auto");
    EXPECT_STREQ(ioBackendName(IoBackend::Uring), "io_uring");
    EXPECT_STREQ(ioBackendName(IoBackend::PreadThreads), "pread-threads");
}

TEST(IoPool, OpenFileErrors) {
    auto pool = IoPool::create({IoBackend::PreadThreads, 2, DirectIo::Off, {}}).value();
    auto missing = pool->openFile("/nonexistent/expert.bin");
    ASSERT_FALSE(missing.isOk());
    EXPECT_EQ(missing.status().code(), ErrorCode::NotFound);
    EXPECT_NE(missing.status().message().find("/nonexistent/expert.bin"), std::string::npos);
    EXPECT_EQ(pool->fileSize(0).status().code(), ErrorCode::InvalidArgument);
    EXPECT_EQ(pool->fileSize(-1).status().code(), ErrorCode::InvalidArgument);
}

TEST(IoPool, DirectIoOnTmpfs) {
    struct statfs fs {};
    if (::statfs("/dev/shm", &fs) != 0 || fs.f_type != TMPFS_MAGIC)
        GTEST_SKIP() << "/dev/shm is not a tmpfs here";
    const std::string path = "/dev/shm/coli-aio-test-" + std::to_string(::getpid()) + ".bin";
    const auto bytes = writeRandomFile(path, 64 << 10);
    auto pool = IoPool::create({IoBackend::PreadThreads, 2, DirectIo::On, {}}).value();
    auto f = pool->openFile(path);
    if (!f.isOk()) {
        std::filesystem::remove(path);
        EXPECT_EQ(f.status().code(), ErrorCode::Unsupported) << f.status().toString();
        EXPECT_NE(f.status().message().find(path), std::string::npos);
        return;
    }
    // Linux 6.6+ gives tmpfs O_DIRECT: then the read must simply work.
    auto buf = alignedBuffer(8192);
    const Status s = pool->readNow({f.value(), 4096, 8192, buf.get()});
    std::filesystem::remove(path);
    ASSERT_TRUE(s.isOk()) << s.toString();
    EXPECT_EQ(std::memcmp(buf.get(), bytes.data() + 4096, 8192), 0);
    GTEST_SKIP() << "tmpfs accepts O_DIRECT on this kernel (Linux >= 6.6) and the read returned "
                    "the file's bytes, so the Unsupported path cannot be reached here";
}

} // namespace
} // namespace coli::aio
