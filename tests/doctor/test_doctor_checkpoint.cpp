// coli doctor on Hugging Face checkpoints: the shipped model and the fixtures are ready; each
// test breaks one thing in a copy and checks the one finding that names it and what to do.
#include "doctor_test_util.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdlib>
#include <linux/magic.h>
#include <sys/vfs.h>

using namespace doctor_test;
using coli::ErrorCode;
using coli::doctor::ModelKind;

TEST(DoctorCheckpoint, ShippedModelIsReady) {
    const DoctorReport r = diagnose(shippedModel());
    EXPECT_TRUE(r.ready) << describe(r);
    EXPECT_EQ(r.kind, ModelKind::Checkpoint);
    EXPECT_TRUE(r.findings.empty()) << describe(r);
    EXPECT_TRUE(r.chatTemplate);
    EXPECT_GE(r.weightFiles, 1);
    EXPECT_EQ(r.filesChecked, r.weightFiles);
    EXPECT_EQ(r.architecture, "MixtralForCausalLM");
}

TEST(DoctorCheckpoint, EveryFixtureFamilyIsReady) {
    for (const char* family :
         {"olmoe", "qwen2moe", "qwen3moe", "mixtral", "granitemoe", "deepseekv2", "deepseekv3"}) {
        const DoctorReport r = diagnose(fixture(family));
        EXPECT_TRUE(r.ready) << family << ":\n" << describe(r);
        EXPECT_TRUE(r.findings.empty()) << family << ":\n" << describe(r);
        EXPECT_EQ(r.filesChecked, r.weightFiles) << family;
    }
    EXPECT_EQ(diagnose(fixture("mixtral")).weightFiles, 3);
}

TEST(DoctorCheckpoint, TruncatedShardIsIncomplete) {
    st_test::TempDir t;
    copyDir(fixture("mixtral"), t.path());
    const std::string name = "model-00002-of-00003.safetensors";
    const uint64_t size = fs::file_size(t.path() / name);
    fs::resize_file(t.path() / name, size - 1000);
    const DoctorReport r = diagnose(t.path());
    EXPECT_FALSE(r.ready);
    EXPECT_EQ(r.count(Severity::Error), 1u) << describe(r);
    const Finding* f = only(r, Severity::Error, name);
    ASSERT_TRUE(f);
    EXPECT_TRUE(contains(f->problem, withCommas(size - 1000) + " bytes")) << f->problem;
    EXPECT_TRUE(contains(f->problem, "need " + withCommas(size))) << f->problem;
    EXPECT_TRUE(contains(f->problem, "the file is incomplete")) << f->problem;
    EXPECT_TRUE(contains(f->action, "delete it and download it again")) << f->action;
    EXPECT_EQ(r.filesChecked, 2);
}

TEST(DoctorCheckpoint, MissingShardIsNamedWithTheIndex) {
    st_test::TempDir t;
    copyDir(fixture("mixtral"), t.path());
    const std::string name = "model-00003-of-00003.safetensors";
    fs::remove(t.path() / name);
    const DoctorReport r = diagnose(t.path());
    EXPECT_FALSE(r.ready);
    EXPECT_EQ(r.count(Severity::Error), 1u) << describe(r);
    const Finding* f = only(r, Severity::Error, name);
    ASSERT_TRUE(f);
    EXPECT_TRUE(contains(f->problem, "listed by model.safetensors.index.json (e.g. for tensor '"))
        << f->problem;
    EXPECT_TRUE(contains(f->problem, "but missing")) << f->problem;
    EXPECT_TRUE(contains(f->action, "download it again")) << f->action;
    EXPECT_FALSE(contains(f->action, "delete")) << f->action;
}

TEST(DoctorCheckpoint, BadSafetensorsHeader) {
    st_test::TempDir t;
    copyDir(fixture("olmoe"), t.path());
    // The header's opening brace, 8 bytes in, becomes 'x': not JSON any more, same size.
    std::string b = readAll(t.path() / "model.safetensors");
    ASSERT_EQ(b[8], '{');
    b[8] = 'x';
    writeAll(t.path() / "model.safetensors", b);
    const DoctorReport r = diagnose(t.path());
    EXPECT_FALSE(r.ready);
    const Finding* f = only(r, Severity::Error, "model.safetensors");
    ASSERT_TRUE(f);
    EXPECT_TRUE(contains(f->problem, "the safetensors header is invalid")) << f->problem;
    EXPECT_TRUE(contains(f->problem, "not valid JSON")) << f->problem;
    EXPECT_EQ(r.count(Severity::Error), 1u) << describe(r);
}

TEST(DoctorCheckpoint, BytesAfterTheLastTensorAreAWarning) {
    st_test::TempDir t;
    copyDir(fixture("olmoe"), t.path());
    const uint64_t size = fs::file_size(t.path() / "model.safetensors");
    writeAll(t.path() / "model.safetensors", readAll(t.path() / "model.safetensors") + "tail");
    const DoctorReport r = diagnose(t.path());
    EXPECT_TRUE(r.ready) << describe(r);
    const Finding* f = only(r, Severity::Warning, "model.safetensors");
    ASSERT_TRUE(f);
    EXPECT_TRUE(contains(f->problem, "4 bytes after the last tensor")) << f->problem;
    EXPECT_TRUE(contains(f->problem, "end at " + withCommas(size))) << f->problem;
}

TEST(DoctorCheckpoint, MissingTokenizerIsAnError) {
    st_test::TempDir t;
    copyDir(fixture("qwen3moe"), t.path());
    fs::remove(t.path() / "tokenizer.json");
    const DoctorReport r = diagnose(t.path());
    EXPECT_FALSE(r.ready);
    const Finding* f = only(r, Severity::Error, "tokenizer.json");
    ASSERT_TRUE(f);
    EXPECT_TRUE(contains(f->problem, "missing")) << f->problem;
    EXPECT_EQ(r.count(Severity::Error), 1u) << describe(r);
}

TEST(DoctorCheckpoint, BrokenTokenizerIsAnError) {
    st_test::TempDir t;
    copyDir(fixture("qwen3moe"), t.path());
    writeAll(t.path() / "tokenizer.json", "{\"model\": 5}");
    const DoctorReport r = diagnose(t.path());
    EXPECT_FALSE(r.ready);
    const Finding* f = only(r, Severity::Error, "tokenizer.json");
    ASSERT_TRUE(f);
    EXPECT_TRUE(contains(f->problem, "cannot be loaded")) << f->problem;
}

// A model without its chat template is flagged, and nothing else stands in for it: the report
// says there is no usable template.
TEST(DoctorCheckpoint, MissingChatTemplateIsFlaggedNotReplaced) {
    st_test::TempDir t;
    copyDir(fixture("olmoe"), t.path());
    const fs::path tc = t.path() / "tokenizer_config.json";
    nlohmann::json j = nlohmann::json::parse(readAll(tc));
    ASSERT_TRUE(j.contains("chat_template"));
    j.erase("chat_template");
    writeAll(tc, j.dump(2));

    DoctorReport r = diagnose(t.path());
    EXPECT_TRUE(r.ready) << describe(r); // coli generate still works
    EXPECT_FALSE(r.chatTemplate);
    const Finding* f = only(r, Severity::Warning, "tokenizer_config.json");
    ASSERT_TRUE(f);
    EXPECT_TRUE(contains(f->problem, "no chat template")) << f->problem;
    EXPECT_TRUE(contains(f->action, "no other family's template")) << f->action;

    // The wizard opens the model for chat: there it is an error.
    r = diagnose(t.path(), false, true);
    EXPECT_FALSE(r.ready);
    EXPECT_FALSE(r.chatTemplate);
    EXPECT_TRUE(only(r, Severity::Error, "tokenizer_config.json"));

    fs::remove(tc);
    r = diagnose(t.path());
    EXPECT_FALSE(r.chatTemplate);
    f = only(r, Severity::Warning, "tokenizer_config.json");
    ASSERT_TRUE(f);
    EXPECT_TRUE(contains(f->problem, "missing")) << f->problem;
}

TEST(DoctorCheckpoint, UnloadableChatTemplateIsFlagged) {
    st_test::TempDir t;
    copyDir(fixture("olmoe"), t.path());
    const fs::path tc = t.path() / "tokenizer_config.json";
    nlohmann::json j = nlohmann::json::parse(readAll(tc));
    j["chat_template"] = "{% for m in messages %}{{ m.content | sort }}{% endfor %}";
    writeAll(tc, j.dump(2));
    const DoctorReport r = diagnose(t.path());
    EXPECT_FALSE(r.chatTemplate);
    const Finding* f = only(r, Severity::Warning, "tokenizer_config.json");
    ASSERT_TRUE(f);
    EXPECT_TRUE(contains(f->problem, "sort")) << f->problem;
}

TEST(DoctorCheckpoint, UnsupportedArchitectureNamesIt) {
    st_test::TempDir t;
    copyDir(fixture("mixtral"), t.path());
    replaceText(t.path() / "config.json", "MixtralForCausalLM", "DbrxForCausalLM");
    const DoctorReport r = diagnose(t.path());
    EXPECT_FALSE(r.ready);
    const Finding* f = only(r, Severity::Error, "config.json");
    ASSERT_TRUE(f);
    EXPECT_TRUE(contains(f->problem, "DbrxForCausalLM")) << f->problem;
    EXPECT_TRUE(contains(f->action, "families")) << f->action;
}

TEST(DoctorCheckpoint, WeightsThatDoNotFitTheConfig) {
    st_test::TempDir t;
    copyDir(fixture("mixtral"), t.path());
    replaceText(t.path() / "config.json", "\"num_local_experts\": 8", "\"num_local_experts\": 10");
    const DoctorReport r = diagnose(t.path());
    EXPECT_FALSE(r.ready);
    const Finding* f = only(r, Severity::Error, "config.json");
    ASSERT_TRUE(f);
    EXPECT_TRUE(contains(f->problem, "the weights do not match config.json")) << f->problem;
    EXPECT_TRUE(contains(f->problem, "experts.8.")) << f->problem;
}

TEST(DoctorCheckpoint, MalformedGenerationConfigIsAnError) {
    st_test::TempDir t;
    copyDir(fixture("olmoe"), t.path());
    writeAll(t.path() / "generation_config.json", "{\"eos_token_id\": \"two\"}");
    const DoctorReport r = diagnose(t.path());
    EXPECT_FALSE(r.ready);
    const Finding* f = only(r, Severity::Error, "generation_config.json");
    ASSERT_TRUE(f);
    EXPECT_TRUE(contains(f->problem, "eos_token_id")) << f->problem;
}

TEST(DoctorCheckpoint, NoFolderOrNoModel) {
    st_test::TempDir t;
    DoctorReport r = diagnose(t.path() / "absent");
    EXPECT_FALSE(r.ready);
    const Finding* f = only(r, Severity::Error, "");
    ASSERT_TRUE(f);
    EXPECT_TRUE(contains(f->problem, "no such folder")) << f->problem;

    r = diagnose(t.path());
    EXPECT_FALSE(r.ready);
    EXPECT_EQ(r.kind, ModelKind::Unknown);
    f = only(r, Severity::Error, "");
    ASSERT_TRUE(f);
    EXPECT_TRUE(contains(f->problem, "no model here")) << f->problem;
}

TEST(DoctorCheckpoint, CancelStopsIt) {
    std::atomic<bool> cancel{true};
    coli::doctor::DoctorOptions o;
    o.measureBandwidth = false;
    auto r = coli::doctor::diagnoseModel(fixture("olmoe"), o, {}, &cancel);
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), ErrorCode::Cancelled);
}

TEST(DoctorCheckpoint, BadBandwidthOptionsAreRefused) {
    coli::doctor::DoctorOptions o;
    o.bandwidth.queueDepth = 0;
    auto r = coli::doctor::diagnoseModel(fixture("olmoe"), o);
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), ErrorCode::InvalidArgument);
}

// The figure itself is the measurement's business (diskbench); here: it is measured over the
// weights, and a buffered figure (O_DIRECT refused, e.g. tmpfs) is said to be the page cache's.
TEST(DoctorCheckpoint, BandwidthIsMeasuredOverTheWeights) {
    coli::doctor::DoctorOptions o;
    o.bandwidth.totalBytes = 1 << 20;
    auto r = coli::doctor::diagnoseModel(shippedModel(), o);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    ASSERT_TRUE(r->bandwidth.has_value()) << describe(r.value());
    EXPECT_GT(r->bandwidth->bytes, 0u);
    EXPECT_GT(r->bandwidth->bytesPerSecond, 0.0);
    EXPECT_TRUE(r->ready);
}

// On tmpfs the figure is the memory's, O_DIRECT or not (tmpfs accepts it since Linux 6.6): the
// report says so.
TEST(DoctorCheckpoint, BandwidthOnTmpfsIsSaidToBeMemorys) {
    struct statfs shm {};
    if (::statfs("/dev/shm", &shm) != 0 || shm.f_type != TMPFS_MAGIC)
        GTEST_SKIP() << "no tmpfs at /dev/shm on this machine";
    char name[] = "/dev/shm/coli-doctor-XXXXXX";
    ASSERT_NE(::mkdtemp(name), nullptr);
    copyDir(shippedModel(), name);
    coli::doctor::DoctorOptions o;
    o.bandwidth.totalBytes = 1 << 20;
    auto r = coli::doctor::diagnoseModel(name, o);
    fs::remove_all(name);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    ASSERT_TRUE(r->bandwidth.has_value()) << describe(r.value());
    const Finding* f = only(r.value(), Severity::Info, "");
    ASSERT_TRUE(f);
    EXPECT_TRUE(contains(f->problem, "tmpfs (memory)")) << f->problem;
    EXPECT_TRUE(contains(f->problem, "not a disk's")) << f->problem;
    EXPECT_TRUE(r->ready);
}
