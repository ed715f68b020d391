// IoPool under concurrent use (also run under ThreadSanitizer: label `tsan`): several threads
// submitting at once, stats() read while reads complete, callbacks that submit follow-up reads,
// and destruction with reads still queued.
#include "aio_test_util.h"

#include <atomic>
#include <cstring>
#include <thread>

namespace coli::aio {
namespace {

using test::Latch;
using test::workDir;
using test::writeRandomFile;

class IoPoolConcurrency : public ::testing::TestWithParam<IoBackend> {
protected:
    std::string name() const { return GetParam() == IoBackend::Uring ? "uring" : "pread"; }
};

TEST_P(IoPoolConcurrency, SubmitFromSeveralThreads) {
    const std::string dir = workDir("concurrent-" + name());
    const auto bytes = writeRandomFile(dir + "/a.bin", 2 << 20, 11);
    COLI_MAKE_POOL(pool, GetParam(), 4, false);
    const int f = pool->openFile(dir + "/a.bin").value();
    constexpr int kThreads = 4, kPerThread = 100;
    std::atomic<int> wrong{0};
    Latch latch;
    std::atomic<bool> submitting{true};
    std::thread watcher([&] { // stats() while the pool runs
        int lastMax = 0;
        while (submitting.load()) {
            const IoStats s = pool->stats();
            if (s.maxInFlight < lastMax || s.maxInFlight > 4) ++wrong;
            lastMax = s.maxInFlight;
            std::this_thread::yield();
        }
    });
    std::vector<std::thread> threads;
    std::vector<std::vector<std::vector<unsigned char>>> bufs(kThreads);
    for (int t = 0; t < kThreads; ++t) {
        bufs[size_t(t)].resize(kPerThread);
        threads.emplace_back([&, t] {
            std::mt19937 rng{uint32_t(t)};
            for (int i = 0; i < kPerThread; ++i) {
                const uint64_t len = 1 + rng() % 50000;
                const uint64_t off = rng() % (bytes.size() - len);
                auto& buf = bufs[size_t(t)][size_t(i)];
                buf.resize(len);
                pool->submit({f, off, len, buf.data()}, [&, off, len](const Status& s) {
                    if (!s.isOk() || std::memcmp(buf.data(), bytes.data() + off, len) != 0) ++wrong;
                    latch.arrive();
                });
            }
        });
    }
    for (auto& t : threads)
        t.join();
    latch.wait(kThreads * kPerThread);
    submitting = false;
    watcher.join();
    EXPECT_EQ(wrong.load(), 0);
    const IoStats st = pool->stats();
    EXPECT_EQ(st.reads, uint64_t(kThreads * kPerThread));
    EXPECT_EQ(st.failed, 0u);
    EXPECT_LE(st.maxInFlight, 4);
}

TEST_P(IoPoolConcurrency, CallbacksSubmitFollowUps) {
    const std::string dir = workDir("chain-" + name());
    const auto bytes = writeRandomFile(dir + "/a.bin", 1 << 20, 5);
    constexpr int kChains = 6, kLength = 20;
    std::atomic<int> ok{0}, wrong{0};
    Latch latch;
    std::vector<std::vector<unsigned char>> bufs(kChains, std::vector<unsigned char>(4096));
    {
        COLI_MAKE_POOL(pool, GetParam(), 3, false);
        const int f = pool->openFile(dir + "/a.bin").value();
        // Each chain reads block k, and its callback submits block k+1 until kLength reads.
        std::function<void(int, int)> step = [&](int chain, int k) {
            const uint64_t off = uint64_t(chain * kLength + k) * 4096;
            pool->submit({f, off, 4096, bufs[size_t(chain)].data()},
                         [&, chain, k, off](const Status& s) {
                             if (s.isOk() && std::memcmp(bufs[size_t(chain)].data(),
                                                         bytes.data() + off, 4096) == 0)
                                 ++ok;
                             else
                                 ++wrong;
                             if (k + 1 < kLength) step(chain, k + 1);
                             latch.arrive();
                         });
        };
        for (int c = 0; c < kChains; ++c)
            step(c, 0);
        latch.wait(kChains * kLength); // callbacks must not submit to a pool being destroyed
    }
    EXPECT_EQ(wrong.load(), 0);
    EXPECT_EQ(ok.load(), kChains * kLength);
}

TEST_P(IoPoolConcurrency, DestroyedWithReadsQueuedFromSeveralThreads) {
    const std::string dir = workDir("destroy-" + name());
    const auto bytes = writeRandomFile(dir + "/a.bin", 1 << 20, 9);
    constexpr int kThreads = 3, kPerThread = 50;
    std::atomic<int> ok{0};
    std::vector<std::vector<unsigned char>> bufs(kThreads * kPerThread,
                                                 std::vector<unsigned char>(4096));
    {
        COLI_MAKE_POOL(pool, GetParam(), 2, false);
        const int f = pool->openFile(dir + "/a.bin").value();
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t)
            threads.emplace_back([&, t] {
                for (int i = 0; i < kPerThread; ++i) {
                    const size_t n = size_t(t * kPerThread + i);
                    const uint64_t off = n * 4096 % bytes.size();
                    pool->submit({f, off, 4096, bufs[n].data()}, [&, n, off](const Status& s) {
                        if (s.isOk() && std::memcmp(bufs[n].data(), bytes.data() + off, 4096) == 0)
                            ++ok;
                    });
                }
            });
        for (auto& t : threads)
            t.join();
    } // ~IoPool with most reads still queued
    EXPECT_EQ(ok.load(), kThreads * kPerThread);
}

INSTANTIATE_TEST_SUITE_P(Backends, IoPoolConcurrency,
                         ::testing::Values(IoBackend::PreadThreads, IoBackend::Uring),
                         [](const auto& info) {
                             return info.param == IoBackend::Uring ? std::string("Uring")
                                                                   : std::string("PreadThreads");
                         });

} // namespace
} // namespace coli::aio
