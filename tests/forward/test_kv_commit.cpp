// The KV cache commits the pages of the positions a forward() call is about to write when it
// reserves them for a decode step, and 64 positions ahead (forward/kv_access.h): decode then writes
// keys and values into pages that exist instead of taking a page fault each 4 KiB; a prompt's
// reserve commits nothing (its writers fault its rows in, in parallel). Checked with mincore(2) on
// buffers large enough (tens of MiB) to be fresh mappings: the rows a decode step writes and the
// room ahead are resident, the far end of the capacity is not, and rows already cached keep their
// values across growth.
#include "forward/kv_access.h"

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace coli {
namespace {

constexpr int kAhead = KVCacheAccess::kDecodeCommitAhead;

// Whether the page holding `p` is resident (mincore's bit 0).
bool resident(const float* p) {
    const auto page = uintptr_t(sysconf(_SC_PAGESIZE));
    const uintptr_t a = reinterpret_cast<uintptr_t>(p) & ~(page - 1);
    unsigned char v = 0;
    EXPECT_EQ(::mincore(reinterpret_cast<void*>(a), page, &v), 0);
    return v & 1;
}

// Every head's rows [from, to) of layer l's keys and values resident.
::testing::AssertionResult rowsResident(KVCache& kv, int layers, KvShape s, int from, int to) {
    for (int l = 0; l < layers; ++l)
        for (int h = 0; h < s.heads; ++h)
            for (int j = from; j < to; ++j) {
                const float* k = KVCacheAccess::keys(kv, l) + h * KVCacheAccess::headStride(kv) +
                                 size_t(j) * s.kDim;
                const float* v = KVCacheAccess::values(kv, l) +
                                 h * KVCacheAccess::valueHeadStride(kv) + size_t(j) * s.vDim;
                if (!resident(k) || !resident(k + s.kDim - 1) || !resident(v) ||
                    !resident(v + s.vDim - 1))
                    return ::testing::AssertionFailure()
                           << "layer " << l << " head " << h << " position " << j;
            }
    return ::testing::AssertionSuccess();
}

// 8 heads of 1 KiB key rows and 512-byte value rows: 3000 positions ask for a capacity of 6000,
// 48 MiB of keys per layer.
const KvShape kShape{8, 256, 128};
constexpr int kLayers = 2;
// A position far from what the test commits (at most 3256) and from the ends of a head's block
// (6000 positions): its page is resident only if something committed it.
constexpr int kFar = 5000;

TEST(KvCommit, ReservedRowsAndTheRoomAheadAreResidentNotTheWholeCapacity) {
    KVCache kv;
    // A prompt: reserve commits nothing; the forward pass's threads fault its rows in as they
    // write them (here: this thread).
    ASSERT_TRUE(KVCacheAccess::reserve(kv, kLayers, kShape, 3000, 100000, 0));
    ASSERT_EQ(kv.capacity(), 6000);
    // (Not the block's first page: malloc's header of a fresh mapping shares it.)
    EXPECT_FALSE(resident(KVCacheAccess::keys(kv, 0) + KVCacheAccess::headStride(kv) +
                          size_t(100) * kShape.kDim));
    for (int l = 0; l < kLayers; ++l)
        for (int h = 0; h < kShape.heads; ++h) {
            std::fill_n(KVCacheAccess::keys(kv, l) + h * KVCacheAccess::headStride(kv),
                        size_t(3000) * kShape.kDim, 1.f);
            std::fill_n(KVCacheAccess::values(kv, l) + h * KVCacheAccess::valueHeadStride(kv),
                        size_t(3000) * kShape.vDim, 1.f);
        }
    KVCacheAccess::setSize(kv, 3000);
    // The far part of each head's block was never asked for: still uncommitted. (Not its last
    // row: the allocator's offset can put it in one page with the next head's first row.)
    for (int h = 0; h < kShape.heads; ++h)
        EXPECT_FALSE(resident(KVCacheAccess::keys(kv, 0) + h * KVCacheAccess::headStride(kv) +
                              size_t(kFar) * kShape.kDim))
            << "head " << h;
    // Decode steps: the first commits the next kAhead positions; each step past those commits
    // the next kAhead again, so every position a step writes is resident.
    ASSERT_TRUE(KVCacheAccess::reserve(kv, kLayers, kShape, 3001, 100000, kAhead));
    EXPECT_TRUE(rowsResident(kv, kLayers, kShape, 3000, 3001 + kAhead));
    for (int tokens = 3002; tokens <= 3000 + 3 * kAhead; ++tokens) {
        ASSERT_TRUE(KVCacheAccess::reserve(kv, kLayers, kShape, tokens, 100000, kAhead));
        ASSERT_TRUE(rowsResident(kv, kLayers, kShape, tokens - 1, tokens)) << tokens;
    }
    EXPECT_FALSE(resident(KVCacheAccess::keys(kv, 0) + size_t(kFar) * kShape.kDim));
}

TEST(KvCommit, GrowthKeepsTheCachedRowsAndCommitsAhead) {
    KVCache kv;
    ASSERT_TRUE(KVCacheAccess::reserve(kv, kLayers, kShape, 100, 100000, 0));
    const int cap = kv.capacity();
    for (int l = 0; l < kLayers; ++l)
        for (int h = 0; h < kShape.heads; ++h)
            for (int j = 0; j < 100; ++j) {
                KVCacheAccess::keys(kv, l)[h * KVCacheAccess::headStride(kv) + j * kShape.kDim] =
                    float(l * 1000000 + h * 1000 + j);
                KVCacheAccess::values(
                    kv, l)[h * KVCacheAccess::valueHeadStride(kv) + j * kShape.vDim + 5] =
                    float(-j);
            }
    KVCacheAccess::setSize(kv, 100);
    ASSERT_TRUE(KVCacheAccess::reserve(kv, kLayers, kShape, cap + 10, 100000, kAhead));
    ASSERT_GT(kv.capacity(), cap);
    EXPECT_TRUE(rowsResident(kv, kLayers, kShape, 0, cap + 10 + kAhead));
    for (int l = 0; l < kLayers; ++l)
        for (int h = 0; h < kShape.heads; ++h)
            for (int j = 0; j < 100; ++j) {
                ASSERT_EQ(
                    KVCacheAccess::keys(kv, l)[h * KVCacheAccess::headStride(kv) + j * kShape.kDim],
                    float(l * 1000000 + h * 1000 + j));
                ASSERT_EQ(KVCacheAccess::values(
                              kv, l)[h * KVCacheAccess::valueHeadStride(kv) + j * kShape.vDim + 5],
                          float(-j));
            }
}

TEST(KvCommit, TheRoomAheadStopsAtTheContextLength) {
    KVCache kv;
    ASSERT_TRUE(KVCacheAccess::reserve(kv, 1, kShape, 20, 40, kAhead));
    ASSERT_EQ(kv.capacity(), 40);
    EXPECT_TRUE(rowsResident(kv, 1, kShape, 0, 40));
    ASSERT_TRUE(KVCacheAccess::reserve(kv, 1, kShape, 40, 40, kAhead));
    EXPECT_EQ(kv.capacity(), 40);
}

} // namespace
} // namespace coli
