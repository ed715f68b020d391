#pragma once
// Helpers of the IoPool tests: files of known pseudo-random bytes in the build tree (ext4 here,
// so O_DIRECT works), 4096-aligned buffers, and a latch for completions.
#include "aio/io_pool.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

namespace coli::aio::test {

// A fresh folder under the build tree for one test.
inline std::string workDir(const std::string& name) {
    const std::filesystem::path dir = std::filesystem::path(COLI_BINARY_DIR) / "aio-test" / name;
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir.string();
}

// `bytes` pseudo-random bytes from `seed`, written to `path`; returns them.
inline std::vector<unsigned char> writeRandomFile(const std::string& path, size_t bytes,
                                                  uint32_t seed = 1) {
    std::vector<unsigned char> data(bytes);
    std::mt19937 rng(seed);
    for (auto& b : data)
        b = static_cast<unsigned char>(rng() >> 24);
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size()));
    return data;
}

struct FreeDeleter {
    void operator()(void* p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<unsigned char, FreeDeleter>;

// `bytes` (rounded up to kDirectIoAlign) aligned to kDirectIoAlign.
inline AlignedBuffer alignedBuffer(size_t bytes) {
    const size_t n = (bytes + kDirectIoAlign - 1) / kDirectIoAlign * kDirectIoAlign;
    return AlignedBuffer(static_cast<unsigned char*>(std::aligned_alloc(kDirectIoAlign, n)));
}

// Counts completions; wait() blocks until `n` have arrived.
class Latch {
public:
    void arrive() {
        std::lock_guard lock(m_mu);
        ++m_count;
        m_cv.notify_all();
    }
    void wait(size_t n) {
        std::unique_lock lock(m_mu);
        m_cv.wait(lock, [&] { return m_count >= n; });
    }

private:
    std::mutex m_mu;
    std::condition_variable m_cv;
    size_t m_count = 0;
};

// A pool of `backend`; the test is skipped (with io_uring's own reason) when io_uring is refused.
#define COLI_MAKE_POOL(var, backend_, depth, direct)                                               \
    std::unique_ptr<IoPool> var;                                                                   \
    {                                                                                              \
        auto made_ =                                                                               \
            IoPool::create({(backend_), (depth), (direct) ? DirectIo::On : DirectIo::Off, {}});    \
        if (!made_ && (backend_) == IoBackend::Uring &&                                            \
            made_.status().code() == ErrorCode::Unsupported)                                       \
            GTEST_SKIP() << "io_uring unavailable here: " << made_.status().toString();            \
        ASSERT_TRUE(made_.isOk()) << made_.status().toString();                                    \
        var = std::move(made_).value();                                                            \
    }

} // namespace coli::aio::test
