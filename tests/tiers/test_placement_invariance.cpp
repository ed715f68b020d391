// Placement never changes the tokens (docs/design.md "Expert tiers"): on every fixture family (as
// its Hugging Face checkpoint and as its int4 colibri container) and on the shipped default model,
// streaming the routed experts with any RAM budget, pins, prefetch, O_DIRECT and thread count
// gives the same greedy and seeded-sampling tokens and bit-identical final logits as keeping every
// expert resident. Each run also checks from the cache's telemetry that placement really varied
// (bytes read, evictions at small budgets, prefetches when on, O_DIRECT in use), so a budget that
// were silently ignored would fail.
#include "aio/io_pool.h"
#include "convert/converter.h"
#include "forward/model.h"
#include "io/safetensors.h"
#include "sampler/sampler.h"
#include "st_writer.h"
#include "tiers/expert_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

using namespace coli;

namespace {

struct GenRun {
    std::vector<int32_t> greedy, sampled;
    std::vector<float> finalLogits; // after the last greedy token
};

std::vector<int32_t> promptFor(int vocab, int n) {
    std::vector<int32_t> t;
    for (int i = 0; i < n; ++i)
        t.push_back(int32_t((i * 37 + 11) % vocab));
    return t;
}

// Prefill (> one 32-token chunk, so batch-union and chunking are exercised), then 6 greedy tokens,
// then (fresh cache) 6 seeded-sampled tokens.
GenRun generate(Model& m, bool pinsAtTurn) {
    GenRun r;
    const int V = m.config().vocabSize;
    const std::vector<int32_t> prompt = promptFor(V, 40);
    for (int pass = 0; pass < 2; ++pass) {
        KVCache kv;
        std::vector<float> logits;
        Status st = m.forward(prompt, kv, logits);
        EXPECT_TRUE(st.isOk()) << st.toString();
        if (!st.isOk()) return r;
        if (pinsAtTurn && m.expertCache()) m.expertCache()->rebalancePins();
        SamplerParams sp;
        sp.temperature = pass == 0 ? 0.0f : 0.9f;
        sp.seed = 1234;
        Sampler sampler(sp);
        std::vector<int32_t> history = prompt;
        std::vector<int32_t>& out = pass == 0 ? r.greedy : r.sampled;
        for (int i = 0; i < 6; ++i) {
            Result<int32_t> tok = sampler.sample(logits, history);
            EXPECT_TRUE(tok.isOk());
            if (!tok.isOk()) return r;
            out.push_back(*tok);
            history.push_back(*tok);
            const int32_t one[1] = {*tok};
            st = m.forward(one, kv, logits);
            EXPECT_TRUE(st.isOk()) << st.toString();
            if (!st.isOk()) return r;
        }
        if (pass == 0) r.finalLogits = logits;
    }
    return r;
}

struct Placement {
    std::string name;
    enum Budget { Zero, OnePerLayer, TwoPerLayer, Half, All } budget;
    bool pins, prefetch, direct;
    int threads;
    ForwardPath path = ForwardPath::Fast;
    // User pins (the Brain view's clicks) before the run: expert n of the n-th MoE layer, as
    // many as the hot-store holds; learned pins fill the rest and rebalance at each turn.
    bool userPins = false;
};

const Placement kPlacements[] = {
    {"budget0-prefetch-T2", Placement::Zero, false, true, false, 2},
    {"budget0-noprefetch-direct-T1", Placement::Zero, false, false, true, 1},
    {"1perlayer-pins-prefetch-direct-T2", Placement::OnePerLayer, true, true, true, 2},
    {"2perlayer-pins-noprefetch-T1", Placement::TwoPerLayer, true, false, false, 1},
    {"half-pins-prefetch-direct-T1", Placement::Half, true, true, true, 1},
    {"2perlayer-userpins-prefetch-T2", Placement::TwoPerLayer, true, true, false, 2,
     ForwardPath::Fast, true},
    {"half-userpins-noprefetch-direct-T1", Placement::Half, true, false, true, 1, ForwardPath::Fast,
     true},
    {"all-prefetch-T2", Placement::All, false, true, false, 2},
    {"reference-budget0-direct", Placement::Zero, true, false, true, 1, ForwardPath::Reference},
};

uint64_t budgetBytes(const Placement& p, const tiers::ExpertCache& c, const ModelConfig& cfg) {
    int moeLayers = 0;
    for (bool s : cfg.sparseLayer)
        moeLayers += s ? 1 : 0;
    const uint64_t slot = c.slotBytes(), total = uint64_t(moeLayers) * cfg.nExperts;
    switch (p.budget) {
    case Placement::Zero:
        return 0;
    case Placement::OnePerLayer:
        return c.minimumBudget() + uint64_t(moeLayers) * slot;
    case Placement::TwoPerLayer:
        return c.minimumBudget() + 2 * uint64_t(moeLayers) * slot;
    case Placement::Half:
        return std::max(c.minimumBudget(), total / 2 * slot);
    case Placement::All:
        return c.minimumBudget() + total * slot;
    }
    return 0;
}

class Containers {
public:
    static Containers& get() {
        static Containers c;
        return c;
    }
    std::string of(const std::string& src) {
        auto it = m_dirs.find(src);
        if (it != m_dirs.end()) return it->second;
        const std::string dst = (m_tmp.path() / std::to_string(m_dirs.size())).string();
        auto rep = convert::convertCheckpoint(src, dst, convert::ConvertOptions{});
        EXPECT_TRUE(rep.isOk()) << rep.status().toString();
        return m_dirs[src] = rep.isOk() ? dst : std::string();
    }

private:
    st_test::TempDir m_tmp;
    std::map<std::string, std::string> m_dirs;
};

void checkModel(const std::string& dir, bool container) {
    const std::string path = container ? Containers::get().of(dir) : dir;
    ASSERT_FALSE(path.empty());
    // The resident baseline of each path (Fast and Reference agree within 1e-5, not bit for bit).
    std::map<ForwardPath, GenRun> baseline;
    for (ForwardPath fp : {ForwardPath::Fast, ForwardPath::Reference}) {
        ModelLoadOptions base;
        base.threads = 2;
        base.path = fp;
        auto resident = Model::load(path, base);
        ASSERT_TRUE(resident.isOk()) << resident.status().toString();
        baseline[fp] = generate(**resident, false);
        ASSERT_EQ(baseline[fp].greedy.size(), 6u);
    }

    for (const Placement& p : kPlacements) {
        SCOPED_TRACE(path + " placement " + p.name);
        const GenRun& want = baseline[p.path];
        ModelLoadOptions o;
        o.threads = p.threads;
        o.path = p.path;
        o.tiers.stream = true;
        o.tiers.prefetch = p.prefetch;
        o.tiers.directIo = p.direct ? aio::DirectIo::On : aio::DirectIo::Off;
        o.tiers.pinShare = p.pins ? 0.5 : 0.0;
        auto m = Model::load(path, o);
        ASSERT_TRUE(m.isOk()) << m.status().toString();
        tiers::ExpertCache* cache = (*m)->expertCache();
        ASSERT_NE(cache, nullptr);
        const ModelConfig& cfg = (*m)->config();
        ASSERT_TRUE(cache->setBudget(budgetBytes(p, *cache, cfg)).isOk());
        EXPECT_EQ(cache->pool().directIo(), p.direct);
        std::vector<tiers::ExpertId> user;
        if (p.userPins) {
            int n = 0;
            for (int l = 0; l < cfg.nLayers; ++l)
                if (cfg.sparseLayer[size_t(l)]) user.push_back({l, n++ % cfg.nExperts});
            user.resize(std::min(user.size(), size_t(cache->pinCapacity())));
            ASSERT_FALSE(user.empty()) << "the placement leaves no hot-store place";
            for (const tiers::ExpertId& id : user)
                ASSERT_TRUE(cache->pinUser(id).isOk());
        }
        const GenRun got = generate(**m, p.pins);
        EXPECT_EQ(got.greedy, want.greedy);
        EXPECT_EQ(got.sampled, want.sampled);
        ASSERT_EQ(got.finalLogits.size(), want.finalLogits.size());
        EXPECT_EQ(0, std::memcmp(got.finalLogits.data(), want.finalLogits.data(),
                                 want.finalLogits.size() * sizeof(float)))
            << "final logits differ";

        cache->waitIdle();
        EXPECT_TRUE(cache->checkConsistency().isOk()) << cache->checkConsistency().toString();
        const tiers::TierTelemetry t = cache->telemetry();
        EXPECT_GT(t.counters.bytesRead, 0u);
        EXPECT_GT(t.counters.misses, 0u);
        EXPECT_LE(t.residency.allocatedBytes, t.residency.budgetBytes);
        const uint64_t slots = t.residency.budgetBytes / t.residency.slotBytes;
        if (slots < uint64_t(t.residency.totalExperts)) {
            EXPECT_GT(t.counters.evictions, 0u)
                << slots << " slots for " << t.residency.totalExperts << " experts";
        }
        int moeLayers = 0;
        for (bool s : cfg.sparseLayer)
            moeLayers += s ? 1 : 0;
        if (p.prefetch && p.path == ForwardPath::Fast && moeLayers > 1) {
            EXPECT_GT(t.counters.prefetchPredicted, 0u);
            EXPECT_GT(t.counters.prefetchIssued, 0u);
        }
        if (!p.prefetch) {
            EXPECT_EQ(t.counters.prefetchIssued, 0u);
        }
        if (p.pins && cache->pinCapacity() > 0) {
            EXPECT_FALSE(cache->pins().empty());
        }
        // User pins survive the learned rebalancing of every turn; the map shows them.
        EXPECT_EQ(cache->userPins(), user);
        for (const tiers::ExpertId& id : user)
            EXPECT_TRUE(t.experts.state[size_t(id.layer) * cfg.nExperts + id.expert] &
                        tiers::kUserPinFlag);
        uint64_t hits = 0;
        for (uint32_t h : t.experts.hits)
            hits += h;
        EXPECT_EQ(hits, t.counters.routed);
        const tiers::TierCounters& k = t.counters;
        std::printf("%-44s %-36s slots %3llu/%3d  hit pinned %4llu cache %4llu miss %4llu  "
                    "evict %4llu  prefetch %llu/%llu used %llu  recall %.2f\n",
                    path.substr(path.size() > 44 ? path.size() - 44 : 0).c_str(), p.name.c_str(),
                    (unsigned long long)slots, t.residency.totalExperts,
                    (unsigned long long)k.hitsPinned, (unsigned long long)k.hitsCache,
                    (unsigned long long)k.misses, (unsigned long long)k.evictions,
                    (unsigned long long)k.prefetchIssued, (unsigned long long)k.prefetchPredicted,
                    (unsigned long long)k.prefetchUsed,
                    k.lookaheadRouted ? double(k.lookaheadRecalled) / k.lookaheadRouted : 0.0);
    }
}

const char* const kFamilies[] = {"olmoe",      "qwen2moe",   "qwen3moe",  "mixtral",
                                 "granitemoe", "deepseekv2", "deepseekv3"};

std::string fixture(const std::string& f) {
    return std::string(COLI_FIXTURE_DIR) + "/" + f;
}

} // namespace

// A copy of checkpoint `src` in `dst` with every F32 tensor stored as BF16 (truncated: the copy
// is its own baseline), the other files as they are.
void bf16Copy(const std::string& src, const std::string& dst) {
    namespace fs = std::filesystem;
    fs::create_directories(dst);
    for (const fs::directory_entry& e : fs::directory_iterator(src)) {
        const fs::path to = fs::path(dst) / e.path().filename();
        if (e.path().extension() != ".safetensors") {
            fs::copy_file(e.path(), to);
            continue;
        }
        auto f = SafetensorsFile::open(e.path().string());
        ASSERT_TRUE(f.isOk()) << f.status().toString();
        std::vector<st_test::Tensor> out;
        for (const TensorInfo& t : (*f)->tensors()) {
            std::vector<uint8_t> raw(t.nbytes);
            ASSERT_TRUE((*f)->readRaw(t, 0, t.nbytes, raw.data()).isOk());
            st_test::Tensor o{t.name, dtypeName(t.dtype), t.shape, raw};
            if (t.dtype == DType::F32) {
                std::vector<uint16_t> h(raw.size() / 4);
                for (size_t i = 0; i < h.size(); ++i) {
                    uint32_t u = 0;
                    std::memcpy(&u, raw.data() + 4 * i, 4);
                    h[i] = uint16_t(u >> 16);
                }
                o.dtype = "BF16";
                o.data = st_test::u16Bytes(h);
            }
            out.push_back(std::move(o));
        }
        st_test::writeSafetensors(to, out);
    }
}

// docs/tiers.md "Buffered or O_DIRECT": under the default (Auto) a file whose O_DIRECT check fails
// is read buffered while its neighbours read O_DIRECT (the checkpoint source rounds out the parts
// of O_DIRECT files only); tokens and logits stay those of the resident model. The refusal is
// injected through the test hook's environment variable (aio/direct_probe.h). Under On the same
// file refuses the load, naming it. An F32 checkpoint reads buffered under Auto (no check, no
// note).
TEST(PlacementInvariance, OneShardRefusingODirect) {
    st_test::TempDir tmp;
    const std::string bf16 = (tmp.path() / "mixtral-bf16").string();
    bf16Copy(fixture("mixtral"), bf16); // 3 shards
    ASSERT_FALSE(::testing::Test::HasFatalFailure());
    const std::string refused = "model-00002-of-00003.safetensors";
    struct Case {
        std::string path, pattern, readMode;
        size_t notes;
    };
    const Case cases[] = {
        {bf16, refused, "O_DIRECT (1 of 2 files buffered)", 1}, // 2 of the 3 shards hold experts
        // A container has one shard: refuse it, every file buffered.
        {Containers::get().of(fixture("mixtral")), ".safetensors", "buffered", 1},
        // F32 experts: buffered by the rule, so nothing is checked or noted.
        {fixture("mixtral"), refused, "buffered", 0},
    };
    for (const Case& c : cases) {
        ASSERT_FALSE(c.path.empty());
        SCOPED_TRACE(c.path);
        ModelLoadOptions base;
        base.threads = 2;
        auto resident = Model::load(c.path, base);
        ASSERT_TRUE(resident.isOk()) << resident.status().toString();
        const GenRun want = generate(**resident, false);
        ASSERT_EQ(::setenv("COLI_TEST_REFUSE_DIRECT_IO", c.pattern.c_str(), 1), 0);
        ModelLoadOptions o;
        o.threads = 2;
        o.tiers.stream = true;
        EXPECT_EQ(o.tiers.directIo, aio::DirectIo::Auto); // the default
        auto m = Model::load(c.path, o);
        ModelLoadOptions on = o;
        on.tiers.directIo = aio::DirectIo::On;
        auto strict = Model::load(c.path, on);
        ::unsetenv("COLI_TEST_REFUSE_DIRECT_IO");
        ASSERT_TRUE(m.isOk()) << m.status().toString();
        ASSERT_FALSE(strict.isOk());
        EXPECT_EQ(strict.status().code(), ErrorCode::Unsupported);
        EXPECT_NE(strict.status().message().find(c.pattern), std::string::npos)
            << strict.status().message();
        EXPECT_NE(strict.status().message().find("O_DIRECT refused on this file system ("),
                  std::string::npos)
            << strict.status().message();
        const std::vector<std::string>& warnings = (*m)->warnings();
        ASSERT_EQ(warnings.size(), c.notes) << "one note per refused file";
        if (c.notes) {
            EXPECT_NE(warnings[0].find(c.pattern), std::string::npos) << warnings[0];
            EXPECT_NE(warnings[0].find("read buffered: O_DIRECT refused"), std::string::npos)
                << warnings[0];
        }
        tiers::ExpertCache* cache = (*m)->expertCache();
        ASSERT_NE(cache, nullptr);
        EXPECT_EQ(cache->pool().readModeText(), c.readMode);
        ASSERT_TRUE(cache->setBudget(0).isOk());
        const GenRun got = generate(**m, false);
        EXPECT_EQ(got.greedy, want.greedy);
        EXPECT_EQ(got.sampled, want.sampled);
        ASSERT_EQ(got.finalLogits.size(), want.finalLogits.size());
        EXPECT_EQ(0, std::memcmp(got.finalLogits.data(), want.finalLogits.data(),
                                 want.finalLogits.size() * sizeof(float)));
        EXPECT_GT(cache->telemetry().counters.misses, 0u);
    }
}

TEST(PlacementInvariance, FixtureCheckpoints) {
    for (const char* f : kFamilies) {
        SCOPED_TRACE(f);
        checkModel(fixture(f), false);
    }
}

TEST(PlacementInvariance, FixtureContainers) {
    for (const char* f : kFamilies) {
        SCOPED_TRACE(f);
        checkModel(fixture(f), true);
    }
}

TEST(PlacementInvariance, DefaultModelCheckpoint) {
    checkModel(COLI_SHIPPED_MODEL_DIR, false);
}

TEST(PlacementInvariance, DefaultModelContainer) {
    checkModel(COLI_SHIPPED_MODEL_DIR, true);
}

// The placements above run on IoBackend::Auto; here both backends are named explicitly, so a
// machine without io_uring says so (a visible skip) instead of silently testing pread alone.
TEST(PlacementInvariance, BothIoBackends) {
    auto uring = aio::IoPool::create({aio::IoBackend::Uring, 2, aio::DirectIo::Off, {}});
    const std::string dir = Containers::get().of(COLI_SHIPPED_MODEL_DIR);
    ASSERT_FALSE(dir.empty());
    ModelLoadOptions base;
    base.threads = 2;
    auto resident = Model::load(dir, base);
    ASSERT_TRUE(resident.isOk()) << resident.status().toString();
    const GenRun want = generate(**resident, false);
    for (aio::IoBackend b : {aio::IoBackend::PreadThreads, aio::IoBackend::Uring}) {
        SCOPED_TRACE(aio::ioBackendName(b));
        if (b == aio::IoBackend::Uring && !uring.isOk()) continue; // reported below
        ModelLoadOptions o = base;
        o.tiers.stream = true;
        o.tiers.ioBackend = b;
        auto m = Model::load(dir, o);
        ASSERT_TRUE(m.isOk()) << m.status().toString();
        EXPECT_EQ((*m)->expertCache()->pool().backend(), b);
        const GenRun got = generate(**m, false);
        EXPECT_EQ(got.greedy, want.greedy);
        EXPECT_EQ(got.sampled, want.sampled);
        EXPECT_EQ(0, std::memcmp(got.finalLogits.data(), want.finalLogits.data(),
                                 want.finalLogits.size() * sizeof(float)));
        EXPECT_GT((*m)->expertCache()->pool().stats().reads, 0u);
    }
    if (!uring.isOk()) GTEST_SKIP() << "io_uring not tested here: " << uring.status().toString();
}
