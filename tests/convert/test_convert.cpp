// coli convert on every fixture family: valid safetensors, aligned experts that match the
// manifest, bytes identical to the engine's quantiser, cosine figures, determinism and resume.
#include "convert/converter.h"
#include "convert/manifest.h"
#include "convert_test_util.h"
#include "io/safetensors.h"
#include "model/config.h"
#include "model/weights.h"
#include "quant/formats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace coli::convert {
namespace {

namespace fs = std::filesystem;
using convert_test::cosine;
using convert_test::fixture;

struct Case {
    std::string family;
    StoredFormat experts;
    StoredFormat dense;
    StoredFormat embed;
};

std::string caseName(const testing::TestParamInfo<Case>& i) {
    std::string s = i.param.family + "_" + storedFormatName(i.param.experts) + "_" +
                    storedFormatName(i.param.dense) + "_" + storedFormatName(i.param.embed);
    std::replace(s.begin(), s.end(), '-', '_');
    return s;
}

std::vector<Case> allCases() {
    std::vector<Case> v;
    for (const char* f : convert_test::kFamilies) {
        v.push_back({f, StoredFormat::Q4_G64, StoredFormat::Q8_G64, StoredFormat::Q8_G64});
        v.push_back({f, StoredFormat::Q4_G32, StoredFormat::Q8_G64, StoredFormat::BF16});
        v.push_back({f, StoredFormat::Q8_G64, StoredFormat::BF16, StoredFormat::Q8_G64});
    }
    return v;
}

// The engine's quantiser applied to `src` [rows, cols] in format f (the reference bytes).
std::vector<uint8_t> referenceBytes(StoredFormat f, const std::vector<float>& src, int64_t rows,
                                    int64_t cols) {
    std::vector<uint8_t> out(storedBytes(f, rows, cols));
    if (f == StoredFormat::F32) {
        std::memcpy(out.data(), src.data(), out.size());
    } else if (f == StoredFormat::BF16) {
        for (size_t i = 0; i < src.size(); ++i) {
            const uint16_t b = f32ToBf16(src[i]);
            std::memcpy(out.data() + 2 * i, &b, 2);
        }
    } else {
        EXPECT_TRUE(quant::quantiseRows(weightFormat(f), src.data(), rows, cols, out.data()));
    }
    return out;
}

std::vector<float> decode(StoredFormat f, const uint8_t* p, int64_t rows, int64_t cols) {
    std::vector<float> out(size_t(rows * cols));
    if (f == StoredFormat::F32) {
        std::memcpy(out.data(), p, out.size() * 4);
    } else if (f == StoredFormat::BF16) {
        for (size_t i = 0; i < out.size(); ++i) {
            uint16_t b;
            std::memcpy(&b, p + 2 * i, 2);
            const uint32_t u = uint32_t(b) << 16;
            std::memcpy(&out[i], &u, 4);
        }
    } else {
        quant::dequantiseRows(weightFormat(f), p, rows, cols, out.data());
    }
    return out;
}

struct Stats {
    double minCos = 2, sumCos = 0;
    int n = 0;
    void add(double c) {
        minCos = std::min(minCos, c);
        sumCos += c;
        ++n;
    }
};

class ConvertFamily : public testing::TestWithParam<Case> {};

TEST_P(ConvertFamily, ConvertsToAValidAlignedContainerMatchingTheQuantiser) {
    const Case& c = GetParam();
    st_test::TempDir tmp;
    const std::string dst = tmp.file("out");
    ConvertOptions opt;
    opt.plan.experts = c.experts;
    opt.plan.dense = c.dense;
    opt.plan.embed = c.embed;
    opt.plan.maxShardBytes = 256 << 10; // several shards even for the small fixtures
    auto rep = convertCheckpoint(fixture(c.family), dst, opt);
    ASSERT_TRUE(rep) << rep.status().toString();
    EXPECT_FALSE(fs::exists(fs::path(dst) / kStateName));

    // Valid safetensors: the engine's reader opens every shard through the index.
    auto ck = Checkpoint::open(dst);
    ASSERT_TRUE(ck) << ck.status().toString();
    auto box = openContainer(dst);
    ASSERT_TRUE(box) << box.status().toString();
    const Container& m = box.value();
    EXPECT_EQ(m.shards.size(), rep->manifest.shards.size());
    EXPECT_EQ(m.describe(), rep->manifest.describe());

    auto src = Checkpoint::open(fixture(c.family));
    ASSERT_TRUE(src);
    auto cfg = loadConfig(fixture(c.family));
    ASSERT_TRUE(cfg);
    auto w = loadWeights(*src.value(), cfg.value());
    ASSERT_TRUE(w) << w.status().toString();

    int moeLayers = 0;
    for (bool s : cfg->sparseLayer)
        moeLayers += s;
    ASSERT_EQ(m.experts.size(), size_t(moeLayers * cfg->nExperts));

    Stats expertCos, denseCos;
    for (const ExpertEntry& e : m.experts) {
        SCOPED_TRACE("layer " + std::to_string(e.layer) + " expert " + std::to_string(e.expert));
        EXPECT_EQ(e.offset % 4096, 0u);
        EXPECT_EQ(e.length % 4096, 0u);
        const TensorInfo* t = ck.value()->find(e.tensor);
        ASSERT_NE(t, nullptr);
        EXPECT_EQ(t->fileOffset, e.offset); // the manifest agrees with the safetensors header
        EXPECT_EQ(t->nbytes, e.length);
        EXPECT_EQ(ck.value()->shardPaths()[size_t(t->shard)], (fs::path(dst) / e.file).string());
        const std::vector<uint8_t> blob =
            convert_test::readRange(fs::path(dst) / e.file, e.offset, e.length);
        ASSERT_EQ(blob.size(), e.length);
        const SwiGluWeights& ref = w->experts[size_t(e.layer)][size_t(e.expert)];
        const Matrix* mats[3] = {&ref.gate, &ref.up, &ref.down};
        const ExpertPart* parts[3] = {&e.gate, &e.up, &e.down};
        uint64_t prevEnd = 0;
        for (int k = 0; k < 3; ++k) {
            const ExpertPart& p = *parts[k];
            const Matrix& src = *mats[k];
            ASSERT_EQ(p.shape, (std::vector<int64_t>{src.rows, src.cols}));
            EXPECT_GE(p.offset, prevEnd); // adjacent, in order, not overlapping
            EXPECT_EQ(p.offset % 64, 0u);
            prevEnd = p.offset + p.length;
            // Experts use the asked bits; groups of 64 fall back to 32 only when cols need it.
            EXPECT_EQ(groupSize(p.format),
                      src.cols % groupSize(c.experts) == 0 ? groupSize(c.experts) : 32);
            const std::vector<uint8_t> want =
                referenceBytes(p.format, src.data, src.rows, src.cols);
            ASSERT_EQ(want.size(), p.length);
            EXPECT_EQ(std::memcmp(blob.data() + p.offset, want.data(), want.size()), 0)
                << "part " << k << " differs from quant::quantiseRows of the source";
            const std::vector<float> deq =
                decode(p.format, blob.data() + p.offset, src.rows, src.cols);
            expertCos.add(cosine(deq.data(), src.data.data(), deq.size()));
        }
        for (uint64_t i = prevEnd; i < blob.size(); ++i)
            ASSERT_EQ(blob[i], 0) << "padding byte " << i;
    }

    for (const TensorEntry& t : m.tensors) {
        SCOPED_TRACE(t.name);
        const TensorInfo* ti = ck.value()->find(t.name);
        ASSERT_NE(ti, nullptr);
        EXPECT_EQ(ti->fileOffset, t.offset);
        EXPECT_EQ(ti->nbytes, t.length);
        std::vector<float> orig;
        ASSERT_TRUE(src.value()->readF32(t.name, orig));
        const int64_t cols = t.shape.empty() ? 1 : t.shape.back();
        const int64_t rows = int64_t(orig.size()) / cols;
        const std::vector<uint8_t> got =
            convert_test::readRange(fs::path(dst) / t.file, t.offset, t.length);
        const std::vector<uint8_t> want = referenceBytes(t.format, orig, rows, cols);
        ASSERT_EQ(got.size(), want.size());
        EXPECT_EQ(got, want);
        switch (t.cls) {
        case TensorClass::Norms:
        case TensorClass::Router:
            EXPECT_EQ(t.format, StoredFormat::F32);
            break;
        case TensorClass::Dense:
            EXPECT_EQ(t.format == StoredFormat::BF16, c.dense == StoredFormat::BF16);
            break;
        case TensorClass::Embeddings:
        case TensorClass::LmHead:
            EXPECT_EQ(t.format == StoredFormat::BF16, c.embed == StoredFormat::BF16);
            break;
        default:
            break;
        }
        if (isQuantised(t.format)) {
            const std::vector<float> deq = decode(t.format, got.data(), rows, cols);
            denseCos.add(cosine(deq.data(), orig.data(), deq.size()));
        }
    }

    const double expertMin = storedFormatName(c.experts)[3] == '4' ? 0.95 : 0.99;
    EXPECT_GT(expertCos.minCos, expertMin);
    if (denseCos.n) {
        EXPECT_GT(denseCos.minCos, 0.99);
    }
    std::printf("[figures] %-10s experts %-8s cos min %.5f mean %.5f (%d matrices) | dense+embed "
                "int8 cos min %.5f mean %.5f (%d) | %llu -> %llu bytes (ratio %.3f)\n",
                c.family.c_str(), storedFormatName(c.experts), expertCos.minCos,
                expertCos.sumCos / std::max(1, expertCos.n), expertCos.n,
                denseCos.n ? denseCos.minCos : 0.0, denseCos.n ? denseCos.sumCos / denseCos.n : 0.0,
                denseCos.n, (unsigned long long)rep->sourceBytes,
                (unsigned long long)rep->outputBytes,
                double(rep->outputBytes) / double(rep->sourceBytes));
}

INSTANTIATE_TEST_SUITE_P(Families, ConvertFamily, testing::ValuesIn(allCases()), caseName);

TEST(Convert, SideFilesAreCopiedUnchangedAndHashed) {
    st_test::TempDir tmp;
    const std::string dst = tmp.file("out");
    auto rep = convertCheckpoint(fixture("qwen3moe"), dst, {});
    ASSERT_TRUE(rep) << rep.status().toString();
    for (const char* f :
         {"config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json"}) {
        EXPECT_EQ(convert_test::readFile(fs::path(dst) / f),
                  convert_test::readFile(fs::path(fixture("qwen3moe")) / f))
            << f;
    }
    const Container& m = rep->manifest;
    EXPECT_EQ(m.formatVersion, kContainerFormatVersion);
    EXPECT_EQ(m.modelId, "qwen3moe"); // no _name_or_path in the fixture: the folder's name
    EXPECT_EQ(m.architecture, "Qwen3MoeForCausalLM");
    bool sawShard = false;
    for (const FileEntry& f : m.sourceFiles) {
        EXPECT_EQ(f.sha256.size(), 64u) << f.file;
        if (f.file == "model.safetensors") sawShard = true;
    }
    EXPECT_TRUE(sawShard);
    EXPECT_EQ(m.quantisation.at("experts"), "int4-g64");
    EXPECT_EQ(m.quantisation.at("dense"), "int8-g64");
    EXPECT_EQ(m.quantisation.at("norms"), "f32");
    EXPECT_EQ(m.quantisation.at("router"), "f32");
    // The whole container is smaller than the BF16 source.
    EXPECT_LT(rep->outputBytes, rep->sourceBytes);
}

TEST(Convert, TwoConversionsAreByteIdentical) {
    st_test::TempDir tmp;
    ConvertOptions opt;
    opt.plan.maxShardBytes = 128 << 10;
    for (const char* family : {"mixtral", "granitemoe"}) {
        const std::string a = tmp.file(std::string(family) + "-a");
        const std::string b = tmp.file(std::string(family) + "-b");
        ASSERT_TRUE(convertCheckpoint(fixture(family), a, opt));
        ASSERT_TRUE(convertCheckpoint(fixture(family), b, opt));
        const auto fa = convert_test::allFiles(a), fb = convert_test::allFiles(b);
        EXPECT_GE(fa.size(), 8u); // several shards, index, manifest, side files
        ASSERT_EQ(fa.size(), fb.size());
        for (const auto& [name, bytes] : fa) {
            ASSERT_TRUE(fb.count(name)) << name;
            EXPECT_TRUE(bytes == fb.at(name)) << family << ": " << name << " differs";
        }
    }
}

// A conversion stopped by a full disk keeps its finished shards; the rerun verifies them instead
// of writing them again and ends with the same bytes as an uninterrupted conversion.
TEST(Convert, ResumesAfterDiskFullWithoutRewritingFinishedShards) {
    st_test::TempDir tmp;
    ConvertOptions opt;
    opt.plan.maxShardBytes = 64 << 10;
    const std::string ref = tmp.file("ref"), dst = tmp.file("dst");
    auto full = convertCheckpoint(fixture("mixtral"), ref, opt);
    ASSERT_TRUE(full);
    const size_t nShards = full->manifest.shards.size();
    ASSERT_GE(nShards, 4u);

    FaultyFileSystem disk(posixFileSystem(), full->outputBytes / 2);
    FailureSide side = FailureSide::None;
    auto cut = convertCheckpoint(fixture("mixtral"), dst, opt, disk, {}, nullptr, &side);
    ASSERT_FALSE(cut);
    EXPECT_EQ(cut.status().code(), ErrorCode::NoSpace);
    EXPECT_NE(cut.status().message().find("disk full writing " + dst + "/model-"),
              std::string::npos)
        << cut.status().message();
    EXPECT_EQ(side, FailureSide::Destination);
    EXPECT_TRUE(fs::exists(fs::path(dst) / kStateName));
    EXPECT_FALSE(fs::exists(fs::path(dst) / kManifestName));

    std::map<std::string, fs::file_time_type> finished;
    for (const FileEntry& s : full->manifest.shards) {
        const fs::path p = fs::path(dst) / s.file;
        if (!fs::exists(p)) continue;
        EXPECT_EQ(convert_test::readFile(p), convert_test::readFile(fs::path(ref) / s.file))
            << "finished shard " << s.file << " differs";
        finished[s.file] = fs::last_write_time(p);
    }
    ASSERT_GE(finished.size(), 1u);
    ASSERT_LT(finished.size(), nShards);

    // The interrupted shard's .partial is still there; the rerun removes it before measuring the
    // free space (a disk that was full must not look full again because of our own leftover).
    bool partialLeft = false;
    for (const auto& e : fs::directory_iterator(dst))
        partialLeft = partialLeft || e.path().string().ends_with(".safetensors.partial");
    EXPECT_TRUE(partialLeft);
    // "Space freed": the same conversion again, counting the files it creates.
    FaultyFileSystem roomy(posixFileSystem());
    auto again = convertCheckpoint(fixture("mixtral"), dst, opt, roomy);
    ASSERT_TRUE(again) << again.status().toString();
    EXPECT_EQ(again->shardsReused, finished.size());
    EXPECT_EQ(again->shardsWritten, nShards - finished.size());
    for (const auto& [file, mtime] : finished) {
        EXPECT_EQ(fs::last_write_time(fs::path(dst) / file), mtime) << file << " was rewritten";
        for (const std::string& created : roomy.created())
            EXPECT_EQ(created.find(file), std::string::npos) << file << " was created again";
    }
    const auto fr = convert_test::allFiles(ref), fd = convert_test::allFiles(dst);
    ASSERT_EQ(fr.size(), fd.size()); // no .partial or state file left
    for (const auto& [name, bytes] : fr)
        EXPECT_TRUE(fd.count(name) && bytes == fd.at(name)) << name << " differs after resume";
    std::printf("[figures] resume: %zu of %zu shards kept from the interrupted run\n",
                finished.size(), nShards);
}

TEST(Convert, DamagedFinishedShardIsWrittenAgain) {
    st_test::TempDir tmp;
    ConvertOptions opt;
    opt.plan.maxShardBytes = 64 << 10;
    const std::string ref = tmp.file("ref"), dst = tmp.file("dst");
    auto full = convertCheckpoint(fixture("olmoe"), ref, opt);
    ASSERT_TRUE(full);
    FaultyFileSystem disk(posixFileSystem(), full->outputBytes * 3 / 4);
    ASSERT_FALSE(convertCheckpoint(fixture("olmoe"), dst, opt, disk));
    const fs::path first = fs::path(dst) / full->manifest.shards[0].file;
    ASSERT_TRUE(fs::exists(first));
    {
        std::fstream f(first, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(5000);
        f.put('\x5a');
    }
    auto again = convertCheckpoint(fixture("olmoe"), dst, opt);
    ASSERT_TRUE(again) << again.status().toString();
    EXPECT_EQ(convert_test::readFile(first),
              convert_test::readFile(fs::path(ref) / full->manifest.shards[0].file));
}

} // namespace
} // namespace coli::convert
