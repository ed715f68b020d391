// coli doctor on colibri containers: a converted fixture is ready (also --deep); each test breaks
// one thing in a copy: a shard (truncated, missing, bad header, one altered byte), the manifest
// (an entry moved inside its shard, an entry outside it), config.json against the manifest.
#include "convert/manifest.h"
#include "doctor_test_util.h"

#include <nlohmann/json.hpp>

#include <memory>

using namespace doctor_test;
using coli::doctor::ModelKind;

namespace {

class DoctorContainer : public ::testing::Test {
protected:
    // One conversion for the suite (Mixtral: 3 source shards; 96 KiB container shards: several).
    static void SetUpTestSuite() {
        s_dir = std::make_unique<st_test::TempDir>();
        convertInto("mixtral", s_dir->path() / "box", 96 << 10);
    }
    static void TearDownTestSuite() { s_dir.reset(); }

    // A fresh copy to break.
    fs::path copy() {
        copyDir(s_dir->path() / "box", m_tmp.path());
        return m_tmp.path();
    }
    static coli::convert::Container manifest(const fs::path& dir) {
        auto c = coli::convert::openContainer(dir.string());
        EXPECT_TRUE(c.isOk()) << c.status().toString();
        return c.isOk() ? c.value() : coli::convert::Container{};
    }

    static std::unique_ptr<st_test::TempDir> s_dir;
    st_test::TempDir m_tmp;
};
std::unique_ptr<st_test::TempDir> DoctorContainer::s_dir;

} // namespace

TEST_F(DoctorContainer, ConvertedContainerIsReady) {
    const fs::path d = copy();
    const auto m = manifest(d);
    ASSERT_GE(m.shards.size(), 2u);
    DoctorReport r = diagnose(d);
    EXPECT_TRUE(r.ready) << describe(r);
    EXPECT_TRUE(r.findings.empty()) << describe(r);
    EXPECT_EQ(r.kind, ModelKind::Container);
    EXPECT_EQ(r.weightFiles, int(m.shards.size()));
    EXPECT_EQ(r.filesChecked, r.weightFiles);
    EXPECT_TRUE(r.chatTemplate);

    r = diagnose(d, true);
    EXPECT_TRUE(r.ready) << describe(r);
    EXPECT_TRUE(r.findings.empty()) << describe(r);
    // The shards and the side files the converter copied (config, generation config, tokenizer
    // files): every file of the container but the manifest and the container's own index.
    int expected = 0;
    for (const auto& e : fs::directory_iterator(d))
        expected += e.path().filename() != "colibri.json" &&
                    e.path().filename() != "model.safetensors.index.json";
    EXPECT_EQ(r.filesHashed, expected);
}

TEST_F(DoctorContainer, TruncatedShardAgainstTheManifest) {
    const fs::path d = copy();
    const auto m = manifest(d);
    const auto& shard = m.shards[1];
    fs::resize_file(d / shard.file, shard.bytes - 4096);
    const DoctorReport r = diagnose(d);
    EXPECT_FALSE(r.ready);
    EXPECT_EQ(r.count(Severity::Error), 1u) << describe(r);
    const Finding* f = only(r, Severity::Error, shard.file);
    ASSERT_TRUE(f);
    EXPECT_TRUE(contains(f->problem, withCommas(shard.bytes - 4096) +
                                         " bytes, the manifest expects " + withCommas(shard.bytes) +
                                         ": the file is incomplete"))
        << f->problem;
    EXPECT_TRUE(contains(f->action, "coli convert")) << f->action;
}

TEST_F(DoctorContainer, MissingShard) {
    const fs::path d = copy();
    const auto m = manifest(d);
    fs::remove(d / m.shards.back().file);
    const DoctorReport r = diagnose(d);
    EXPECT_FALSE(r.ready);
    const Finding* f = only(r, Severity::Error, m.shards.back().file);
    ASSERT_TRUE(f);
    EXPECT_TRUE(contains(f->problem, "listed by colibri.json but missing")) << f->problem;
}

TEST_F(DoctorContainer, BadShardHeader) {
    const fs::path d = copy();
    const auto m = manifest(d);
    // A tensor's dtype in the header becomes one safetensors does not have (same length).
    replaceText(d / m.shards[0].file, "\"dtype\":\"U8\"", "\"dtype\":\"Q8\"");
    const DoctorReport r = diagnose(d);
    EXPECT_FALSE(r.ready);
    const Finding* f = only(r, Severity::Error, m.shards[0].file);
    ASSERT_TRUE(f);
    EXPECT_TRUE(contains(f->problem, "the safetensors header is invalid")) << f->problem;
    EXPECT_TRUE(contains(f->problem, "Q8")) << f->problem;
}

// An entry moved inside its shard: parseManifest cannot see it (the range is inside the shard),
// but the engine would read the wrong bytes. The shard's header says where the tensor is.
TEST_F(DoctorContainer, ManifestEntryThatDisagreesWithItsShard) {
    const fs::path d = copy();
    nlohmann::json j = nlohmann::json::parse(readAll(d / "colibri.json"));
    auto& t = j["tensors"][0];
    const std::string name = t["name"];
    t["offset"] = t["offset"].get<uint64_t>() - 4;
    writeAll(d / "colibri.json", j.dump(1));
    ASSERT_TRUE(coli::convert::openContainer(d.string()).isOk()); // the manifest alone is fine
    const DoctorReport r = diagnose(d);
    EXPECT_FALSE(r.ready);
    const Finding* f = only(r, Severity::Error, "colibri.json");
    ASSERT_TRUE(f);
    EXPECT_TRUE(contains(f->problem, "the manifest does not match its shards")) << f->problem;
    EXPECT_TRUE(contains(f->problem, "'" + name + "'")) << f->problem;
}

TEST_F(DoctorContainer, ManifestExpertOutsideItsShard) {
    const fs::path d = copy();
    nlohmann::json j = nlohmann::json::parse(readAll(d / "colibri.json"));
    auto& e = j["experts"][3];
    e["offset"] = e["offset"].get<uint64_t>() + (uint64_t(1) << 30);
    writeAll(d / "colibri.json", j.dump(1));
    const DoctorReport r = diagnose(d);
    EXPECT_FALSE(r.ready);
    const Finding* f = only(r, Severity::Error, "colibri.json");
    ASSERT_TRUE(f);
    EXPECT_TRUE(contains(f->action, "coli convert")) << f->action;
    EXPECT_EQ(r.count(Severity::Error), 1u) << describe(r);
    // --deep has no hashes to go by then, and says so about the manifest.
    const DoctorReport deep = diagnose(d, true);
    f = only(deep, Severity::Info, "colibri.json");
    ASSERT_TRUE(f);
    EXPECT_TRUE(contains(f->problem, "--deep hashed nothing")) << f->problem;
    EXPECT_EQ(deep.filesHashed, 0);
}

TEST_F(DoctorContainer, ConfigOfAnotherModel) {
    const fs::path d = copy();
    fs::copy_file(fixture("olmoe") + "/config.json", d / "config.json",
                  fs::copy_options::overwrite_existing);
    const DoctorReport r = diagnose(d);
    EXPECT_FALSE(r.ready);
    const Finding* f = only(r, Severity::Error, "config.json");
    ASSERT_TRUE(f);
    EXPECT_TRUE(contains(f->problem, "OlmoeForCausalLM")) << f->problem;
    EXPECT_TRUE(contains(f->problem, "MixtralForCausalLM")) << f->problem;
}

// One altered byte in an expert blob: sizes and headers are as they were, so only --deep can
// tell, against the manifest's SHA-256.
TEST_F(DoctorContainer, DeepFindsAnAlteredByte) {
    const fs::path d = copy();
    const auto m = manifest(d);
    const auto& blob = m.experts[m.experts.size() / 2];
    flipByte(d / blob.file, blob.offset + 100);
    DoctorReport r = diagnose(d);
    EXPECT_TRUE(r.ready) << describe(r);
    r = diagnose(d, true);
    EXPECT_FALSE(r.ready);
    EXPECT_EQ(r.count(Severity::Error), 1u) << describe(r);
    const Finding* f = only(r, Severity::Error, blob.file);
    ASSERT_TRUE(f);
    EXPECT_TRUE(contains(f->problem, "SHA-256")) << f->problem;
    EXPECT_TRUE(contains(f->problem, "the manifest gives")) << f->problem;
    EXPECT_TRUE(contains(f->action, "coli convert")) << f->action;
}

// A copied side file edited after the conversion (e.g. a chat template fixed by hand) is worth a
// warning, not a refusal.
TEST_F(DoctorContainer, DeepWarnsAboutAnEditedSideFile) {
    const fs::path d = copy();
    writeAll(d / "generation_config.json", readAll(d / "generation_config.json") + "\n");
    const DoctorReport r = diagnose(d, true);
    EXPECT_TRUE(r.ready) << describe(r);
    const Finding* f = only(r, Severity::Warning, "generation_config.json");
    ASSERT_TRUE(f);
    EXPECT_TRUE(contains(f->problem, "changed after the conversion")) << f->problem;
}

// A conversion that stopped before its manifest: not a checkpoint with odd files, but a
// conversion to finish.
TEST_F(DoctorContainer, UnfinishedConversion) {
    const fs::path d = copy();
    fs::remove(d / "colibri.json");
    writeAll(d / "colibri-convert.state.json", "{}");
    const DoctorReport r = diagnose(d);
    EXPECT_FALSE(r.ready);
    EXPECT_EQ(r.findings.size(), 1u) << describe(r);
    const Finding* f = only(r, Severity::Error, "colibri-convert.state.json");
    ASSERT_TRUE(f);
    EXPECT_TRUE(contains(f->problem, "an unfinished conversion")) << f->problem;
    EXPECT_TRUE(contains(f->action, "run the same coli convert command again")) << f->action;
}
