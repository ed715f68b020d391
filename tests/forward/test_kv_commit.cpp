// The KV cache commits the pages of the positions a forward() call is about to write, and a
// bounded room ahead of them, when it reserves them (forward/kv_cache.cpp): a decode step then
// writes keys and values into pages that exist instead of taking a page fault each 4 KiB. Checked
// with mincore(2) on buffers large enough (tens of MiB) to be fresh mappings: the rows asked for
// and 64 positions ahead are resident, the far end of the room kept ahead is not, and rows
// already cached keep their values across growth.
#include "forward/kv_access.h"

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

namespace coli {
namespace {

constexpr int kAhead = 64; // kv_cache.cpp's kCommitAhead

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

TEST(KvCommit, ReservedRowsAndTheRoomAheadAreResidentNotTheWholeCapacity) {
    KVCache kv;
    ASSERT_TRUE(KVCacheAccess::reserve(kv, kLayers, kShape, 3000, 100000));
    ASSERT_EQ(kv.capacity(), 6000);
    EXPECT_TRUE(rowsResident(kv, kLayers, kShape, 0, 3000 + kAhead));
    // The far end of each head's block was never asked for: still uncommitted.
    for (int h = 0; h < kShape.heads; ++h)
        EXPECT_FALSE(resident(KVCacheAccess::keys(kv, 0) + h * KVCacheAccess::headStride(kv) +
                              size_t(5999) * kShape.kDim))
            << "head " << h;
    // Decode-sized steps: each reserve past the committed rows commits the next ones.
    for (int tokens = 3001; tokens <= 3000 + 3 * kAhead; tokens += 7) {
        ASSERT_TRUE(KVCacheAccess::reserve(kv, kLayers, kShape, tokens, 100000));
        EXPECT_TRUE(rowsResident(kv, kLayers, kShape, tokens - 1, tokens)) << tokens;
    }
}

TEST(KvCommit, GrowthKeepsTheCachedRowsAndCommitsAhead) {
    KVCache kv;
    ASSERT_TRUE(KVCacheAccess::reserve(kv, kLayers, kShape, 100, 100000));
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
    ASSERT_TRUE(KVCacheAccess::reserve(kv, kLayers, kShape, cap + 10, 100000));
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
    ASSERT_TRUE(KVCacheAccess::reserve(kv, 1, kShape, 20, 40));
    ASSERT_EQ(kv.capacity(), 40);
    EXPECT_TRUE(rowsResident(kv, 1, kShape, 0, 40));
    ASSERT_TRUE(KVCacheAccess::reserve(kv, 1, kShape, 40, 40));
    EXPECT_EQ(kv.capacity(), 40);
}

} // namespace
} // namespace coli
