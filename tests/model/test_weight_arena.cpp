// The weight arena (model/weight_arena.h): aligned, zeroed, disjoint allocations; chunks shared by
// small requests and unmapped when their last allocation goes; large requests mapped apart; the
// huge-page advice where the kernel gives transparent huge pages (AnonHugePages of this
// process's mapping in /proc/self/smaps), reported as skipped where it does not.
#include "model/weight_arena.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace coli {
namespace {

TEST(WeightArena, AllocationsAreAlignedZeroedAndDisjoint) {
    const WeightArenaStats before = weightArenaStats();
    std::vector<WeightBytes> v;
    for (size_t n : {1, 63, 64, 1000, 1 << 20, 3 << 20})
        v.emplace_back(n);
    for (const WeightBytes& b : v) {
        EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 64, 0u) << b.size();
        for (uint8_t x : b)
            ASSERT_EQ(x, 0);
    }
    for (size_t i = 0; i < v.size(); ++i)
        std::memset(v[i].data(), int(i + 1), v[i].size());
    for (size_t i = 0; i < v.size(); ++i) // no allocation overwrote another
        for (uint8_t x : v[i])
            ASSERT_EQ(x, uint8_t(i + 1)) << "allocation " << i;
    EXPECT_EQ(weightArenaStats().chunks, before.chunks + 1) << "small requests share one chunk";
    v.clear();
    EXPECT_EQ(weightArenaStats().chunks, before.chunks) << "the chunk is unmapped with its last";
}

TEST(WeightArena, LargeRequestsGetTheirOwnMapping) {
    const WeightArenaStats before = weightArenaStats();
    {
        WeightBytes big(size_t{100} << 20, 7);
        EXPECT_EQ(big[big.size() - 1], 7);
        const WeightArenaStats during = weightArenaStats();
        EXPECT_EQ(during.chunks, before.chunks + 1);
        EXPECT_EQ(during.mappedBytes - before.mappedBytes, size_t{100} << 20); // 2 MiB multiple
    }
    EXPECT_EQ(weightArenaStats().chunks, before.chunks);
}

// AnonHugePages (kB) of the mapping that holds `p`, from /proc/self/smaps; -1 when not found.
long hugeKbOf(const void* p) {
    std::ifstream f("/proc/self/smaps");
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    std::string line;
    bool inside = false;
    while (std::getline(f, line)) {
        unsigned long lo = 0, hi = 0;
        char dash = 0;
        std::istringstream head(line);
        if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
            inside = a >= lo && a < hi;
            continue;
        }
        if (inside && line.rfind("AnonHugePages:", 0) == 0) return std::stol(line.substr(14));
    }
    return -1;
}

TEST(WeightArena, ChunksGetHugePagesWhereTheKernelGivesThem) {
    std::ifstream mode("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string m;
    std::getline(mode, m);
    if (m.find("[never]") != std::string::npos || m.empty())
        GTEST_SKIP() << "transparent huge pages are off here (" << m << ")";
    WeightBytes b(size_t{16} << 20, 1); // touched: the pages exist
    const long kb = hugeKbOf(b.data());
    ASSERT_GE(kb, 0) << "the mapping is not in /proc/self/smaps";
    if (kb == 0) GTEST_SKIP() << "no huge page was given (memory fragmented?); THP mode: " << m;
    EXPECT_GE(kb, 2048);
}

} // namespace
} // namespace coli
