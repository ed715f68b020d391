// The expert cache's slot memory (tiers/slot_arena.h), in both of its forms: one reserved range
// (slot i at base + i * stride) and the fallback of a mapping per slot. Each slot is page-aligned
// (O_DIRECT reads into it), writable over its whole length, apart from every other slot, stable
// across take() calls, and release() returns its pages (the next take() reads zeros).
#include "tiers/slot_arena.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <set>

using coli::tiers::SlotArena;

namespace {

void exercise(bool reserve) {
    SCOPED_TRACE(reserve ? "reserved range" : "a mapping per slot");
    const size_t slots = 5;
    const uint64_t bytes = 3 * 4096 + 100; // not a page multiple: the stride rounds it up
    SlotArena arena(slots, bytes, reserve);
    EXPECT_EQ(arena.reserved(), reserve);
    const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
    std::set<uint8_t*> seen;
    for (size_t i = 0; i < slots; ++i) {
        uint8_t* p = arena.take(i);
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % page, 0u) << "slot " << i;
        EXPECT_EQ(arena.take(i), p) << "slot " << i << " moved";
        std::memset(p, int(0x40 + i), bytes);
        seen.insert(p);
    }
    EXPECT_EQ(seen.size(), slots);
    // No slot overlaps another: each still holds its own byte everywhere.
    for (size_t i = 0; i < slots; ++i) {
        const uint8_t* p = arena.take(i);
        for (uint64_t b = 0; b < bytes; b += 97)
            ASSERT_EQ(p[b], uint8_t(0x40 + i)) << "slot " << i << " byte " << b;
        ASSERT_EQ(p[bytes - 1], uint8_t(0x40 + i));
    }
    arena.release(2);
    const uint8_t* again = arena.take(2);
    ASSERT_NE(again, nullptr);
    for (uint64_t b = 0; b < bytes; b += 97)
        ASSERT_EQ(again[b], 0) << "released slot kept byte " << b;
    EXPECT_EQ(arena.take(3)[0], uint8_t(0x43)) << "releasing slot 2 touched slot 3";
    EXPECT_EQ(arena.take(slots), nullptr) << "past the last slot";
    arena.release(slots); // ignored
}

TEST(SlotArena, ReservedRange) {
    exercise(true);
}

TEST(SlotArena, MappingPerSlot) {
    exercise(false);
}

} // namespace
