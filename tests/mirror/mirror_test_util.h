#pragma once
// Helpers of the engine's mirror tests (test_mirror_reads*): a mirror folder made by copying some
// model files and writing the receipt (as `coli mirror stage` would), a container converted with
// small shards (so that a partial mirror has files to leave out), and a short generation whose
// tokens and final logits are compared bit for bit.
// Thread-safety: test helpers, one thread.
#include "convert/converter.h"
#include "convert/sha256.h"
#include "forward/model.h"
#include "mirror/mirror_receipt.h"
#include "sampler/sampler.h"
#include "st_writer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace mirror_test {

using namespace coli;
namespace fs = std::filesystem;

inline std::string fixture(const std::string& family) {
    return std::string(COLI_FIXTURE_DIR) + "/" + family;
}

// The model's safetensors files (relative names), sorted.
inline std::vector<std::string> shardNames(const std::string& modelDir) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(modelDir))
        if (e.path().extension() == ".safetensors") out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
}

// Copies `files` of modelDir into mirrorDir and writes the receipt listing them.
inline void makeMirror(const std::string& modelDir, const std::string& mirrorDir,
                       const std::vector<std::string>& files) {
    fs::create_directories(mirrorDir);
    mirror::MirrorReceipt r;
    r.primary = fs::absolute(modelDir).string();
    r.createdMs = 1;
    for (const std::string& f : files) {
        fs::copy_file(fs::path(modelDir) / f, fs::path(mirrorDir) / f,
                      fs::copy_options::overwrite_existing);
        Result<std::string> h = convert::sha256File(modelDir + "/" + f);
        ASSERT_TRUE(h.isOk()) << h.status().toString();
        r.files.push_back({f, uint64_t(fs::file_size(fs::path(modelDir) / f)), *h});
    }
    ASSERT_TRUE(mirror::writeMirrorReceipt(mirrorDir, r).isOk());
}

// A fixture converted to a container with shards of at most `shardBytes` (several shards).
class Containers {
public:
    static Containers& get() {
        static Containers c;
        return c;
    }
    std::string of(const std::string& family, uint64_t shardBytes = 32 * 1024) {
        const std::string key = family + "/" + std::to_string(shardBytes);
        auto it = m_dirs.find(key);
        if (it != m_dirs.end()) return it->second;
        const std::string dst = (m_tmp.path() / std::to_string(m_dirs.size())).string();
        convert::ConvertOptions o;
        o.plan.maxShardBytes = shardBytes;
        auto rep = convert::convertCheckpoint(fixture(family), dst, o);
        EXPECT_TRUE(rep.isOk()) << rep.status().toString();
        return m_dirs[key] = rep.isOk() ? dst : std::string();
    }

private:
    st_test::TempDir m_tmp;
    std::map<std::string, std::string> m_dirs;
};

struct GenRun {
    std::vector<int32_t> greedy, sampled;
    std::vector<float> finalLogits; // after the last greedy token
};

// Called after each decode token (pass 0 = greedy, 1 = sampled; i = tokens so far).
using StepHook = std::function<void(int pass, int i)>;

// A 40-token prefill (more than one 32-token chunk), 6 greedy tokens, then (fresh KV cache) 6
// seeded-sampled tokens, as tests/tiers/test_placement_invariance does.
inline GenRun generate(Model& m, const StepHook& hook = {}) {
    GenRun r;
    const int V = m.config().vocabSize;
    std::vector<int32_t> prompt;
    for (int i = 0; i < 40; ++i)
        prompt.push_back(int32_t((i * 37 + 11) % V));
    for (int pass = 0; pass < 2; ++pass) {
        KVCache kv;
        std::vector<float> logits;
        Status st = m.forward(prompt, kv, logits);
        EXPECT_TRUE(st.isOk()) << st.toString();
        if (!st.isOk()) return r;
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
            if (hook) hook(pass, i + 1);
        }
        if (pass == 0) r.finalLogits = logits;
    }
    return r;
}

inline void expectSameRun(const GenRun& got, const GenRun& want) {
    EXPECT_EQ(got.greedy, want.greedy);
    EXPECT_EQ(got.sampled, want.sampled);
    ASSERT_EQ(got.finalLogits.size(), want.finalLogits.size());
    EXPECT_EQ(0, std::memcmp(got.finalLogits.data(), want.finalLogits.data(),
                             want.finalLogits.size() * sizeof(float)))
        << "final logits differ";
}

} // namespace mirror_test
