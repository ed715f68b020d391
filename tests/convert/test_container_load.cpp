// The engine loading a colibri container (convert/container_weights.h, Model::load): on every
// fixture family, converted with the default options (int4-g64 experts, int8-g64 elsewhere) and
// with int8 experts (in small shards, so that several shards are read), the loaded matrices hold
// the bytes the in-memory quantiser gives the original checkpoint, and the logits of a prompt (all
// positions) are bit-identical to Model::load(original, the same quantisation), on both forward
// paths and with 1 and 2 threads. Plus the shipped default model, the summary, progress, cancel,
// and refusals (truncated shard, wrong shape, missing tensor, config mismatch, quantisation
// option on a container).
#include "convert/container_weights.h"
#include "convert/converter.h"
#include "convert/manifest.h"
#include "convert_test_util.h"
#include "forward/model.h"
#include "io/safetensors.h"
#include "model/config.h"
#include "model/quantise_weights.h"
#include "model/weights.h"
#include "quant/formats.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>
#include <map>
#include <memory>

namespace coli::convert {
namespace {

namespace fs = std::filesystem;
using convert_test::fixture;
using quant::WeightFormat;

struct Variant {
    const char* name;
    StoredFormat experts;
    uint64_t shardBytes; // 0: the converter's default
};

// Default options as `coli convert` uses them, and `--experts int8` with 64 KiB shards (the
// fixtures then span several shards, so the loader opens and reads more than one file).
const Variant kVariants[] = {{"default", StoredFormat::Q4_G64, 0},
                             {"int8", StoredFormat::Q8_G64, 64 << 10}};

// The in-memory quantisation that gives a container's bytes (docs/container.md: dense,
// embeddings and LM head int8-g64 by default).
WeightQuantisation sameQuantisation(StoredFormat experts) {
    WeightQuantisation q;
    q.experts = weightFormat(experts);
    q.dense = q.embed = q.lmHead = WeightFormat::Q8_G64;
    return q;
}

std::string readText(const fs::path& p) {
    std::ifstream f(p);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

void writeText(const fs::path& p, const std::string& s) {
    std::ofstream f(p, std::ios::trunc);
    f << s;
}

// One conversion per (source, variant) for the whole test program.
class Containers {
public:
    static Containers& get() {
        static Containers c;
        return c;
    }
    // The container folder, converted on first use; empty (with a test failure) on error.
    std::string of(const std::string& src, const Variant& v) {
        const std::string key = src + "|" + v.name;
        auto it = m_dirs.find(key);
        if (it != m_dirs.end()) return it->second;
        const std::string dst = (m_tmp.path() / std::to_string(m_dirs.size())).string();
        ConvertOptions opt;
        opt.plan.experts = v.experts;
        if (v.shardBytes) opt.plan.maxShardBytes = v.shardBytes;
        auto rep = convertCheckpoint(src, dst, opt);
        EXPECT_TRUE(rep.isOk()) << rep.status().toString();
        return m_dirs[key] = rep.isOk() ? dst : std::string();
    }

private:
    st_test::TempDir m_tmp;
    std::map<std::string, std::string> m_dirs;
};

// A copy of a container that a test may damage.
std::string scratchCopy(const std::string& dir, const st_test::TempDir& tmp) {
    const std::string dst = tmp.file("copy");
    convert_test::copyDir(dir, dst);
    return dst;
}

std::vector<int32_t> prompt(int vocab) {
    std::vector<int32_t> t;
    for (int i = 0; i < 24; ++i)
        t.push_back(int32_t((i * 37 + 5) % vocab));
    return t;
}

std::unique_ptr<Model> loadModel(const std::string& dir, const WeightQuantisation& q,
                                 ForwardPath path, int threads) {
    ModelLoadOptions o;
    o.quantisation = q;
    o.path = path;
    o.threads = threads;
    auto m = Model::load(dir, o);
    EXPECT_TRUE(m.isOk()) << dir << ": " << m.status().toString();
    return m.isOk() ? std::move(m.value()) : nullptr;
}

std::vector<float> allLogits(const Model& m) {
    KVCache kv;
    std::vector<float> logits;
    const Status s = m.forward(prompt(m.config().vocabSize), kv, logits, /*allLogits=*/true);
    EXPECT_TRUE(s.isOk()) << s.toString();
    return logits;
}

// Counts of what compareWeights compared, so a test can assert it compared something.
struct Compared {
    int quantised = 0;
    int f32 = 0;
    int vectors = 0;
};

void compareMatrix(const Matrix& a, const Matrix& b, const std::string& what, Compared* n) {
    ASSERT_EQ(a.rows, b.rows) << what;
    ASSERT_EQ(a.cols, b.cols) << what;
    ASSERT_EQ(a.quantised(), b.quantised()) << what;
    if (a.quantised()) {
        EXPECT_EQ(a.qfmt, b.qfmt) << what;
        EXPECT_TRUE(a.q == b.q) << what << ": quantised bytes differ";
        EXPECT_TRUE(a.data.empty() && b.data.empty()) << what;
        ++n->quantised;
    } else {
        ASSERT_EQ(a.data.size(), b.data.size()) << what;
        if (a.empty()) return;
        EXPECT_EQ(0, std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)))
            << what << ": f32 values differ";
        ++n->f32;
    }
}

void compareVector(const std::vector<float>& a, const std::vector<float>& b,
                   const std::string& what, Compared* n) {
    ASSERT_EQ(a.size(), b.size()) << what;
    if (a.empty()) return; // memcmp must not see the null data() of an empty vector
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float))) << what;
    ++n->vectors;
}

void compareMlp(const SwiGluWeights& a, const SwiGluWeights& b, const std::string& what,
                Compared* n) {
    compareMatrix(a.gate, b.gate, what + ".gate", n);
    compareMatrix(a.up, b.up, what + ".up", n);
    compareMatrix(a.down, b.down, what + ".down", n);
}

Compared compareWeights(const ModelWeights& a, const ModelWeights& b) {
    Compared n;
    compareMatrix(a.embed, b.embed, "embed", &n);
    compareMatrix(a.lmHead, b.lmHead, "lm_head", &n);
    compareVector(a.finalNorm, b.finalNorm, "final norm", &n);
    EXPECT_EQ(a.layers.size(), b.layers.size());
    EXPECT_EQ(a.experts.size(), b.experts.size());
    for (size_t l = 0; l < std::min(a.layers.size(), b.layers.size()); ++l) {
        const LayerWeights &x = a.layers[l], &y = b.layers[l];
        const std::string p = "layers." + std::to_string(l);
        EXPECT_EQ(x.sparse, y.sparse) << p;
        for (auto [u, v, name] : {std::tuple{&x.attnNorm, &y.attnNorm, ".attn_norm"},
                                  {&x.ffnNorm, &y.ffnNorm, ".ffn_norm"},
                                  {&x.qBias, &y.qBias, ".q_bias"},
                                  {&x.kBias, &y.kBias, ".k_bias"},
                                  {&x.vBias, &y.vBias, ".v_bias"},
                                  {&x.oBias, &y.oBias, ".o_bias"},
                                  {&x.qNorm, &y.qNorm, ".q_norm"},
                                  {&x.kNorm, &y.kNorm, ".k_norm"}})
            compareVector(*u, *v, p + name, &n);
        for (auto [u, v, name] : {std::tuple{&x.q, &y.q, ".q"},
                                  {&x.k, &y.k, ".k"},
                                  {&x.v, &y.v, ".v"},
                                  {&x.o, &y.o, ".o"},
                                  {&x.router, &y.router, ".router"},
                                  {&x.sharedExpertGate, &y.sharedExpertGate, ".shared_gate"}})
            compareMatrix(*u, *v, p + name, &n);
        compareMlp(x.shared, y.shared, p + ".shared", &n);
        compareMlp(x.dense, y.dense, p + ".mlp", &n);
        if (l < a.experts.size() && l < b.experts.size()) {
            EXPECT_EQ(a.experts[l].size(), b.experts[l].size()) << p;
            for (size_t e = 0; e < std::min(a.experts[l].size(), b.experts[l].size()); ++e)
                compareMlp(a.experts[l][e], b.experts[l][e], p + ".experts." + std::to_string(e),
                           &n);
        }
    }
    return n;
}

// The container's weights against the original's, quantised in memory.
void expectSameWeights(const std::string& original, const std::string& container,
                       StoredFormat experts) {
    auto cfg = loadConfig(original);
    ASSERT_TRUE(cfg.isOk()) << cfg.status().toString();
    auto ck = Checkpoint::open(original);
    ASSERT_TRUE(ck.isOk()) << ck.status().toString();
    auto mem = loadWeights(**ck, *cfg);
    ASSERT_TRUE(mem.isOk()) << mem.status().toString();
    ASSERT_TRUE(quantiseWeights(*mem, sameQuantisation(experts)).isOk());
    auto box = openContainer(container);
    ASSERT_TRUE(box.isOk()) << box.status().toString();
    auto disk = loadContainerWeights(*box, *cfg);
    ASSERT_TRUE(disk.isOk()) << disk.status().toString();
    const Compared n = compareWeights(*disk, *mem);
    int moeLayers = 0;
    for (bool s : cfg->sparseLayer)
        moeLayers += s;
    // Every expert matrix, q/k/v/o and the embedding at least, all quantised.
    EXPECT_GE(n.quantised, 3 * moeLayers * cfg->nExperts + 4 * cfg->nLayers + 1);
    EXPECT_GT(n.f32, 0);     // routers
    EXPECT_GT(n.vectors, 0); // norms
}

// Logits of the container against Model::load(original, same quantisation): bit for bit, per
// (path, threads). Returns the number of logits compared.
size_t expectSameLogits(const std::string& original, const std::string& container,
                        StoredFormat experts) {
    size_t compared = 0;
    const struct {
        ForwardPath path;
        int threads;
        const char* name;
    } runs[] = {{ForwardPath::Fast, 1, "fast/1"},
                {ForwardPath::Fast, 2, "fast/2"},
                {ForwardPath::Reference, 1, "reference/1"},
                {ForwardPath::Reference, 2, "reference/2"}};
    for (const auto& r : runs) {
        auto a = loadModel(container, {}, r.path, r.threads);
        auto b = loadModel(original, sameQuantisation(experts), r.path, r.threads);
        if (!a || !b) return compared;
        const std::vector<float> x = allLogits(*a), y = allLogits(*b);
        EXPECT_EQ(x.size(), size_t(prompt(a->config().vocabSize).size()) * a->config().vocabSize);
        EXPECT_EQ(x.size(), y.size()) << r.name;
        if (x.size() != y.size() || x.empty()) continue;
        EXPECT_EQ(0, std::memcmp(x.data(), y.data(), x.size() * sizeof(float)))
            << container << " " << r.name << ": logits differ from the in-memory quantisation";
        compared += x.size();
    }
    return compared;
}

class ContainerLoadTest : public testing::TestWithParam<std::tuple<std::string, Variant>> {
protected:
    std::string original() const { return fixture(std::get<0>(GetParam())); }
    const Variant& variant() const { return std::get<1>(GetParam()); }
    std::string container() { return Containers::get().of(original(), variant()); }
};

TEST_P(ContainerLoadTest, MatricesHoldTheInMemoryQuantisersBytes) {
    const std::string c = container();
    ASSERT_FALSE(c.empty());
    auto box = openContainer(c);
    ASSERT_TRUE(box.isOk());
    if (variant().shardBytes) {
        EXPECT_GT(box->shards.size(), 1u) << "expected several shards";
    }
    expectSameWeights(original(), c, variant().experts);
}

TEST_P(ContainerLoadTest, LogitsBitIdenticalToInMemoryQuantisation) {
    const std::string c = container();
    ASSERT_FALSE(c.empty());
    const size_t n = expectSameLogits(original(), c, variant().experts);
    EXPECT_GT(n, 0u);
    std::printf("[ %s %s ] %zu logits bit-identical (Fast and Reference, 1 and 2 threads)\n",
                std::get<0>(GetParam()).c_str(), variant().name, n);
}

TEST_P(ContainerLoadTest, SummaryDescribesTheContainer) {
    const std::string c = container();
    ASSERT_FALSE(c.empty());
    auto box = openContainer(c);
    ASSERT_TRUE(box.isOk());
    auto a = loadModel(c, {}, ForwardPath::Fast, 1);
    auto b = loadModel(original(), {}, ForwardPath::Fast, 1);
    ASSERT_TRUE(a && b);
    const ModelSummary s = a->summary(), o = b->summary();
    EXPECT_EQ(s.totalParams, o.totalParams);
    EXPECT_EQ(s.activeParams, o.activeParams);
    EXPECT_EQ(s.moeLayers, o.moeLayers);
    EXPECT_EQ(s.expertsPerLayer, o.expertsPerLayer);
    ASSERT_FALSE(box->experts.empty());
    EXPECT_EQ(s.bytesPerExpert, int64_t(box->experts[0].length)); // one blob, one read
    EXPECT_EQ(s.expertBytes, int64_t(box->experts.size() * box->experts[0].length));
    EXPECT_GT(s.denseBytes, 0);
    EXPECT_LT(s.denseBytes, o.denseBytes); // int8 instead of f32/f16/bf16
    EXPECT_EQ(s.storage, "colibri container (" + box->describe() + ")");
}

std::string paramName(const testing::TestParamInfo<std::tuple<std::string, Variant>>& i) {
    return std::get<0>(i.param) + "_" + std::get<1>(i.param).name;
}

INSTANTIATE_TEST_SUITE_P(
    Families, ContainerLoadTest,
    testing::Combine(testing::ValuesIn(std::vector<std::string>(std::begin(convert_test::kFamilies),
                                                                std::end(convert_test::kFamilies))),
                     testing::ValuesIn(kVariants)),
    paramName);

// ---- progress, cancel and refusals (on the qwen3moe fixture) ----

std::string qwenContainer() {
    return Containers::get().of(fixture("qwen3moe"), kVariants[0]);
}

TEST(ContainerLoad, ProgressRisesToOneAndCancelStops) {
    const std::string c = qwenContainer();
    ASSERT_FALSE(c.empty());
    std::vector<double> seen;
    auto m = Model::load(c, {}, [&](const LoadProgress& p) { seen.push_back(p.fraction); });
    ASSERT_TRUE(m.isOk()) << m.status().toString();
    ASSERT_GT(seen.size(), 10u);
    EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
    EXPECT_EQ(seen.back(), 1.0);

    std::atomic<bool> cancel{false};
    int calls = 0;
    auto stopped = Model::load(
        c, {},
        [&](const LoadProgress& p) {
            if (p.stage == "weights" && ++calls == 3) cancel = true;
        },
        &cancel);
    ASSERT_FALSE(stopped.isOk());
    EXPECT_EQ(stopped.status().code(), ErrorCode::Cancelled) << stopped.status().toString();
}

TEST(ContainerLoad, RefusesTheQuantisationOption) {
    const std::string c = qwenContainer();
    ASSERT_FALSE(c.empty());
    ModelLoadOptions o;
    o.quantisation.dense = WeightFormat::Q8_G64;
    auto m = Model::load(c, o);
    ASSERT_FALSE(m.isOk());
    EXPECT_EQ(m.status().code(), ErrorCode::InvalidArgument);
    EXPECT_NE(m.status().message().find("colibri container"), std::string::npos)
        << m.status().toString();
}

TEST(ContainerLoad, RefusesATruncatedShard) {
    st_test::TempDir tmp;
    const std::string c = scratchCopy(qwenContainer(), tmp);
    auto box = openContainer(c);
    ASSERT_TRUE(box.isOk());
    const fs::path shard = fs::path(c) / box->shards[0].file;
    fs::resize_file(shard, fs::file_size(shard) - 100);
    auto m = Model::load(c, {});
    ASSERT_FALSE(m.isOk());
    EXPECT_EQ(m.status().code(), ErrorCode::Malformed) << m.status().toString();
    EXPECT_NE(m.status().message().find(box->shards[0].file), std::string::npos)
        << m.status().toString();
}

// Only the manifest changes: the shape stays consistent with the stored length (rows halved,
// columns doubled: the same int8-g64 bytes), so only the config check can notice.
TEST(ContainerLoad, RefusesATensorWithTheWrongShape) {
    st_test::TempDir tmp;
    const std::string c = scratchCopy(qwenContainer(), tmp);
    const fs::path man = fs::path(c) / kManifestName;
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(readText(man));
    const std::string name = "model.layers.1.self_attn.o_proj.weight";
    std::string file;
    for (auto& t : j["tensors"])
        if (t["name"] == name) {
            ASSERT_EQ(t["format"], "int8-g64-r8");
            const int64_t rows = t["shape"][0], cols = t["shape"][1];
            t["shape"] = {rows / 2, cols * 2};
            file = t["file"];
        }
    ASSERT_FALSE(file.empty());
    writeText(man, j.dump(1) + "\n");
    auto m = Model::load(c, {});
    ASSERT_FALSE(m.isOk());
    const std::string msg = m.status().message();
    EXPECT_EQ(m.status().code(), ErrorCode::Malformed) << msg;
    for (const std::string& part : {std::string("colibri.json"), name, file, std::string("needs")})
        EXPECT_NE(msg.find(part), std::string::npos) << part << " not in: " << msg;
}

// Rewrites [offset, offset + length) of `file` from the -r8 layout `tiled` to its plain layout.
void untileInPlace(const fs::path& file, uint64_t offset, uint64_t length, StoredFormat tiled,
                   const std::vector<int64_t>& shape) {
    const quant::WeightFormat t = weightFormat(tiled), p = quant::plainFormat(t);
    const int64_t rows = shape[0], cols = shape[1];
    std::vector<uint8_t> in(length), out(length);
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(std::streamoff(offset));
    f.read(reinterpret_cast<char*>(in.data()), std::streamsize(length));
    quant::convertLayout(t, in.data(), p, out.data(), rows, cols);
    f.seekp(std::streamoff(offset));
    f.write(reinterpret_cast<const char*>(out.data()), std::streamsize(length));
    ASSERT_TRUE(f.good()) << file;
}

StoredFormat plainStored(StoredFormat f) {
    StoredFormat out = f;
    EXPECT_TRUE(
        parseStoredFormat(quant::formatInfo(quant::plainFormat(weightFormat(f))).name, &out));
    return out;
}

// A container as format version 1 wrote it (every matrix in the plain layout) still loads, and
// gives the same logits as the -r8 container it was made from: the layout changes no bit.
TEST(ContainerLoad, AVersionOneContainerGivesTheSameLogits) {
    st_test::TempDir tmp;
    const std::string c = scratchCopy(qwenContainer(), tmp);
    auto box = openContainer(c);
    ASSERT_TRUE(box.isOk()) << box.status().toString();
    EXPECT_EQ(box->formatVersion, 2);
    int rewritten = 0;
    auto untile = [&](const std::string& file, uint64_t offset, auto& part) {
        if (!isQuantised(part.format) || quant::formatInfo(weightFormat(part.format)).rowTile == 1)
            return;
        untileInPlace(fs::path(c) / file, offset, part.length, part.format, part.shape);
        part.format = plainStored(part.format);
        ++rewritten;
    };
    for (TensorEntry& t : box->tensors)
        untile(t.file, t.offset, t);
    for (ExpertEntry& e : box->experts)
        for (ExpertPart* part : {&e.gate, &e.up, &e.down})
            untile(e.file, e.offset + part->offset, *part);
    ASSERT_GT(rewritten, 10);
    box->formatVersion = 1;
    writeText(fs::path(c) / kManifestName, manifestToJson(*box));
    auto v1 = openContainer(c);
    ASSERT_TRUE(v1.isOk()) << v1.status().toString();
    for (const ExpertEntry& e : v1->experts)
        EXPECT_EQ(quant::formatInfo(weightFormat(e.gate.format)).rowTile, 1);
    EXPECT_NE(v1->describe().find("convert again"), std::string::npos) << v1->describe();
    auto v2 = openContainer(qwenContainer());
    ASSERT_TRUE(v2.isOk());
    EXPECT_EQ(v2->describe().find("convert again"), std::string::npos) << v2->describe();
    for (int threads : {1, 2}) {
        auto a = loadModel(qwenContainer(), {}, ForwardPath::Fast, threads);
        auto b = loadModel(c, {}, ForwardPath::Fast, threads);
        ASSERT_TRUE(a && b);
        const std::vector<float> x = allLogits(*a), y = allLogits(*b);
        ASSERT_EQ(x.size(), y.size());
        ASSERT_FALSE(x.empty());
        EXPECT_EQ(0, std::memcmp(x.data(), y.data(), x.size() * sizeof(float)))
            << threads << " thread(s): the plain layout changed the logits";
    }
}

// An -r8 format on a row count that is not a multiple of 8 would put the last tile past the
// tensor's bytes: refused at load, naming the tensor.
TEST(ContainerLoad, RefusesATiledFormatOnRaggedRows) {
    st_test::TempDir tmp;
    const std::string c = scratchCopy(qwenContainer(), tmp);
    const fs::path man = fs::path(c) / kManifestName;
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(readText(man));
    std::string name;
    for (auto& t : j["tensors"])
        if (name.empty() && t["format"] == "int8-g64-r8") {
            // The same number of blocks (so the length still matches), fewer and wider rows.
            int64_t rows = t["shape"][0], cols = t["shape"][1];
            while (rows % 8 == 0) {
                rows /= 2;
                cols *= 2;
            }
            t["shape"] = {rows, cols};
            name = t["name"];
        }
    ASSERT_FALSE(name.empty()) << "no int8-g64-r8 tensor in the fixture's container";
    writeText(man, j.dump(1) + "\n");
    auto m = Model::load(c, {});
    ASSERT_FALSE(m.isOk());
    EXPECT_EQ(m.status().code(), ErrorCode::Malformed) << m.status().toString();
    EXPECT_NE(m.status().message().find(name), std::string::npos) << m.status().toString();
    EXPECT_NE(m.status().message().find("whose tiles are 8 rows"), std::string::npos)
        << m.status().toString();
}

TEST(ContainerLoad, RefusesAMissingTensor) {
    st_test::TempDir tmp;
    const std::string c = scratchCopy(qwenContainer(), tmp);
    const fs::path man = fs::path(c) / kManifestName;
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(readText(man));
    auto& ts = j["tensors"];
    const size_t before = ts.size();
    for (size_t i = 0; i < ts.size(); ++i)
        if (ts[i]["name"] == "model.norm.weight") ts.erase(i);
    ASSERT_EQ(ts.size(), before - 1);
    writeText(man, j.dump(1) + "\n");
    auto m = Model::load(c, {});
    ASSERT_FALSE(m.isOk());
    EXPECT_EQ(m.status().code(), ErrorCode::NotFound) << m.status().toString();
    EXPECT_NE(m.status().message().find("model.norm.weight"), std::string::npos)
        << m.status().toString();
}

// config.json edited after conversion: fewer experts than the container holds.
TEST(ContainerLoad, RefusesAConfigThatDoesNotFit) {
    st_test::TempDir tmp;
    const std::string c = scratchCopy(qwenContainer(), tmp);
    const fs::path cfgPath = fs::path(c) / "config.json";
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(readText(cfgPath));
    ASSERT_TRUE(j.contains("num_experts"));
    j["num_experts"] = int(j["num_experts"]) - 1;
    if (j.value("num_experts_per_tok", 0) > int(j["num_experts"]))
        j["num_experts_per_tok"] = j["num_experts"];
    writeText(cfgPath, j.dump(1));
    auto m = Model::load(c, {});
    ASSERT_FALSE(m.isOk());
    // The router [n_experts, d_model] is the first tensor whose shape no longer fits, or an
    // expert blob the config does not have: either way Malformed, naming colibri.json.
    EXPECT_EQ(m.status().code(), ErrorCode::Malformed) << m.status().toString();
    EXPECT_NE(m.status().message().find("colibri.json"), std::string::npos)
        << m.status().toString();
}

// ---- the shipped default model ----

TEST(ContainerLoad, DefaultModelLogitsBitIdentical) {
    const std::string dir = std::string(COLI_SOURCE_DIR) + "/resources/models/colibri-moe-tiny";
    // The default model ships in the repository (resources/models/): missing means a broken
    // checkout, a failure, not a reason to skip.
    ASSERT_TRUE(fs::exists(fs::path(dir) / "config.json"))
        << "default model not present at " << dir << " (exported by tools/train; see resources/)";
    const std::string c = Containers::get().of(dir, kVariants[0]);
    ASSERT_FALSE(c.empty());
    expectSameWeights(dir, c, kVariants[0].experts);
    const size_t n = expectSameLogits(dir, c, kVariants[0].experts);
    EXPECT_GT(n, 0u);
    auto box = openContainer(c);
    ASSERT_TRUE(box.isOk());
    uint64_t bytes = 0;
    for (const auto& s : box->shards)
        bytes += s.bytes;
    std::printf("[ default model ] container %llu bytes, %zu expert blobs of %llu bytes; %zu "
                "logits bit-identical\n",
                (unsigned long long)bytes, box->experts.size(),
                (unsigned long long)(box->experts.empty() ? 0 : box->experts[0].length), n);
}

} // namespace
} // namespace coli::convert
