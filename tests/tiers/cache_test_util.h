#pragma once
// Helpers shared by the expert cache's direct tests (test_cache_stress, test_cache_failure,
// test_cache_memory): a fixture converted once to a colibri container, the expert blobs read
// independently of the cache (std::ifstream, not the aio pool) to check the bytes of every view
// the cache hands out, a cache built over the container without a Model, and the process's RSS.
// Thread-safety: CacheFixture is immutable after get(); the functions are pure apart from reads.
#include "convert/converter.h"
#include "convert/manifest.h"
#include "model/config.h"
#include "st_writer.h"
#include "tiers/expert_cache.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

namespace cache_test {

using namespace coli;

inline std::string fixture(const std::string& family) {
    return std::string(COLI_FIXTURE_DIR) + "/" + family;
}

// A fixture family converted to a container (default options: int4-g64 experts) in a temp dir
// that lives for the whole test program, plus every expert blob as stored in the shard.
class CacheFixture {
public:
    static const CacheFixture& get(const std::string& family) {
        static std::map<std::string, std::unique_ptr<CacheFixture>> all;
        auto it = all.find(family);
        if (it == all.end()) it = all.emplace(family, std::make_unique<CacheFixture>(family)).first;
        return *it->second;
    }
    explicit CacheFixture(const std::string& family) {
        dir = (tmp.path() / family).string();
        auto rep = convert::convertCheckpoint(fixture(family), dir, convert::ConvertOptions{});
        if (!rep) {
            error = rep.status().toString();
            return;
        }
        Result<ModelConfig> c = loadConfig(dir);
        Result<convert::Container> box = convert::openContainer(dir);
        if (!c || !box) {
            error = !c ? c.status().toString() : box.status().toString();
            return;
        }
        cfg = *c;
        container = *box;
        for (const convert::ExpertEntry& e : container.experts) {
            std::ifstream f(dir + "/" + e.file, std::ios::binary);
            std::vector<uint8_t> bytes(e.length);
            f.seekg(std::streamoff(e.offset));
            f.read(reinterpret_cast<char*>(bytes.data()), std::streamsize(e.length));
            if (!f) {
                error = "cannot read blob " + e.tensor;
                return;
            }
            blobs[key(e.layer, e.expert)] = std::move(bytes);
        }
        for (int l = 0; l < cfg.nLayers; ++l)
            if (cfg.sparseLayer[size_t(l)]) sparseLayers.push_back(l);
    }
    size_t key(int layer, int expert) const { return size_t(layer) * cfg.nExperts + expert; }

    // Empty when the view is the expert's stored blob: the three parts point into one slot at the
    // manifest's part offsets, with the manifest's shapes, and the slot's bytes equal the blob.
    std::string checkView(tiers::ExpertId id, const SwiGluView& v) const {
        const convert::ExpertEntry* e = container.expert(id.layer, id.expert);
        if (!e) return "no manifest entry";
        auto base = [](const MatrixView& m) {
            return m.q ? m.q : reinterpret_cast<const uint8_t*>(m.data);
        };
        const uint8_t* slot = base(v.gate) - e->gate.offset;
        if (base(v.up) != slot + e->up.offset || base(v.down) != slot + e->down.offset)
            return "parts not at their blob offsets";
        const convert::ExpertPart* parts[3] = {&e->gate, &e->up, &e->down};
        const MatrixView* views[3] = {&v.gate, &v.up, &v.down};
        for (int i = 0; i < 3; ++i)
            if (views[i]->rows != parts[i]->shape[0] || views[i]->cols != parts[i]->shape[1])
                return "part " + std::to_string(i) + " has the wrong shape";
        const std::vector<uint8_t>& want = blobs.at(key(id.layer, id.expert));
        if (std::memcmp(slot, want.data(), want.size()) != 0)
            return "bytes differ from the blob of layer " + std::to_string(id.layer) + " expert " +
                   std::to_string(id.expert);
        return {};
    }

    st_test::TempDir tmp;
    std::string dir, error;
    ModelConfig cfg;
    convert::Container container;
    std::map<size_t, std::vector<uint8_t>> blobs;
    std::vector<int> sparseLayers;
};

// An ExpertCache over the fixture's container, driven without a Model. Unsupported when the
// backend or O_DIRECT is refused here (the caller skips).
inline Result<std::unique_ptr<tiers::ExpertCache>> makeCache(const CacheFixture& fx,
                                                             aio::IoBackend backend, int depth,
                                                             bool direct,
                                                             const tiers::CacheOptions& co = {}) {
    aio::IoOptions io;
    io.backend = backend;
    io.queueDepth = depth;
    io.directIo = direct ? aio::DirectIo::On : aio::DirectIo::Off;
    Result<std::unique_ptr<aio::IoPool>> pool = aio::IoPool::create(io);
    if (!pool) return pool.status();
    Result<std::unique_ptr<tiers::ExpertSource>> src =
        tiers::openContainerSource(fx.container, fx.cfg, **pool);
    if (!src) return src.status();
    return tiers::ExpertCache::create(std::move(*pool), std::move(*src), fx.cfg, co);
}

// Resident set size in bytes from /proc/self/statm; 0 when it cannot be read.
inline uint64_t rssBytes() {
    std::FILE* f = std::fopen("/proc/self/statm", "r");
    if (!f) return 0;
    unsigned long long size = 0, resident = 0;
    const int n = std::fscanf(f, "%llu %llu", &size, &resident);
    std::fclose(f);
    return n == 2 ? resident * uint64_t(sysconf(_SC_PAGESIZE)) : 0;
}

// The consistency verdict with the residency, for failure messages (not atomic: diagnostics).
inline std::string state(const tiers::ExpertCache& c) {
    const tiers::TierResidency r = c.telemetry().residency;
    const uint64_t s = r.slotBytes ? r.slotBytes : 1;
    return c.checkConsistency().toString() + " [budget " + std::to_string(r.budgetBytes / s) +
           " slots, allocated " + std::to_string(r.allocatedBytes / s) + ", pinned ready " +
           std::to_string(r.pinnedExperts) + ", cached ready " + std::to_string(r.cachedExperts) +
           ", loading " + std::to_string(r.loadingExperts) + ", pins " +
           std::to_string(c.pins().size()) + " of capacity " + std::to_string(c.pinCapacity()) +
           "]";
}

// Sum of hits and misses equals the routed count, and every other counter stays within its base.
inline void expectCoherent(const tiers::TierCounters& k) {
    EXPECT_EQ(k.hitsPinned + k.hitsCache + k.misses, k.routed);
    EXPECT_LE(k.inFlightHits, k.hitsCache);
    EXPECT_LE(k.prefetchUsed, k.prefetchIssued);
    EXPECT_LE(k.prefetchIssued, k.readsIssued);
    EXPECT_LE(k.prefetchCorrect, k.prefetchPredicted);
    EXPECT_LE(k.lookaheadRecalled, k.lookaheadRouted);
    EXPECT_LE(k.failedReads, k.readsIssued);
}

} // namespace cache_test
