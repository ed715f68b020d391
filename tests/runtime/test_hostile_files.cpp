// A checkpoint folder whose side files are not what they seem: a named pipe in place of
// config.json, tokenizer.json, tokenizer_config.json, generation_config.json or a shard (open()
// alone would block forever), symbolic link loops and dangling links, a 20 GB (sparse) JSON file,
// an empty or invalid tokenizer_config.json. Every load fails at once naming the file and the
// problem, or (for the optional chat template) loads with a warning naming it. CTest TIMEOUT
// 30 s: a regression that blocks fails instead of hanging the suite.
#include "fixture_dir.h"

#include "chat/chat_template.h"
#include "model/config.h"
#include "runtime/generation_config.h"
#include "runtime/session.h"
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <sys/stat.h>

using namespace coli;
using namespace coli::test;
namespace fs = std::filesystem;

namespace {

constexpr const char* kFixture = "olmoe";

void expectNaming(const Status& s, const std::string& file, const std::string& problem) {
    ASSERT_FALSE(s.isOk()) << "expected an error naming " << file;
    EXPECT_NE(s.message().find(file), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(problem), std::string::npos) << s.message();
}

// A copy of the fixture with `file` replaced by a named pipe.
std::string withFifo(const std::string& file, const std::string& tag) {
    const std::string dir = copyFixture(kFixture, tag);
    fs::remove(fs::path(dir) / file);
    EXPECT_EQ(::mkfifo((fs::path(dir) / file).c_str(), 0600), 0);
    return dir;
}

Status loadStatus(const std::string& dir) {
    return LoadedModel::load(dir, ModelLoadOptions{}).status();
}

} // namespace

TEST(HostileFiles, NamedPipeInPlaceOfEachSideFileFailsTheLoadAtOnce) {
    for (const char* file :
         {"config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json"}) {
        SCOPED_TRACE(file);
        const std::string dir = withFifo(file, std::string("fifo-") + file);
        expectNaming(loadStatus(dir), file, "not a regular file (a named pipe)");
    }
}

TEST(HostileFiles, NamedPipeRefusedByEachReader) {
    std::string dir = withFifo("config.json", "fifo-reader-config");
    expectNaming(loadConfig(dir).status(), "config.json", "a named pipe");
    dir = withFifo("tokenizer.json", "fifo-reader-tokenizer");
    expectNaming(Tokenizer::fromFile(dir + "/tokenizer.json").status(), "tokenizer.json",
                 "a named pipe");
    dir = withFifo("tokenizer_config.json", "fifo-reader-template");
    expectNaming(ChatTemplate::fromTokenizerConfig(dir + "/tokenizer_config.json").status(),
                 "tokenizer_config.json", "a named pipe");
    dir = withFifo("generation_config.json", "fifo-reader-generation");
    expectNaming(loadGenerationConfig(dir).status(), "generation_config.json", "a named pipe");
}

TEST(HostileFiles, NamedPipeInPlaceOfTheWeights) {
    const std::string dir = withFifo("model.safetensors", "fifo-weights");
    expectNaming(loadStatus(dir), "model.safetensors", "a named pipe");
}

TEST(HostileFiles, NamedPipeInPlaceOfTheShardIndex) {
    const std::string dir = copyFixture(kFixture, "fifo-index");
    ASSERT_EQ(::mkfifo((dir + "/model.safetensors.index.json").c_str(), 0600), 0);
    expectNaming(loadStatus(dir), "model.safetensors.index.json", "a named pipe");
}

TEST(HostileFiles, SymbolicLinkLoopNamesTheFile) {
    const std::string dir = copyFixture(kFixture, "loop");
    fs::remove(dir + "/config.json");
    fs::create_symlink("config2.json", dir + "/config.json");
    fs::create_symlink("config.json", dir + "/config2.json");
    expectNaming(loadStatus(dir), "config.json", "symbolic link loop");
}

TEST(HostileFiles, DanglingSymbolicLinksNameTheFile) {
    for (const char* file : {"tokenizer.json", "tokenizer_config.json", "generation_config.json",
                             "model.safetensors"}) {
        SCOPED_TRACE(file);
        const std::string dir = copyFixture(kFixture, std::string("dangling-") + file);
        fs::remove(fs::path(dir) / file);
        fs::create_symlink("/nonexistent/target.json", fs::path(dir) / file);
        expectNaming(loadStatus(dir), file, "dangling symbolic link");
    }
}

TEST(HostileFiles, HugeSparseJsonIsRefusedFromItsSize) {
    const std::string dir = copyFixture(kFixture, "huge");
    fs::resize_file(dir + "/tokenizer.json", uint64_t(20) << 30); // sparse: no disk space
    expectNaming(loadStatus(dir), "tokenizer.json", "over the 256 MiB limit");
}

TEST(HostileFiles, EmptyTokenizerConfigIsSaidToBeEmpty) {
    const std::string dir = copyFixture(kFixture, "empty-tc");
    writeText(dir + "/tokenizer_config.json", "");
    auto lm = LoadedModel::load(dir, ModelLoadOptions{});
    ASSERT_TRUE(lm.isOk()) << lm.status().message();
    auto r = lm.value()->renderChat({{"user", "Hi"}}, true);
    expectNaming(r.status(), "tokenizer_config.json", "empty");
    EXPECT_EQ(r.status().message().find("not found"), std::string::npos) << r.status().message();
    ASSERT_EQ(lm.value()->warnings().size(), 1u);
    EXPECT_NE(lm.value()->warnings()[0].find("tokenizer_config.json"), std::string::npos);
    EXPECT_NE(lm.value()->warnings()[0].find("empty"), std::string::npos);
}

TEST(HostileFiles, InvalidTokenizerConfigIsAWarning) {
    const std::string dir = copyFixture(kFixture, "bad-tc");
    writeText(dir + "/tokenizer_config.json", "{\"chat_template\": ");
    auto lm = LoadedModel::load(dir, ModelLoadOptions{});
    ASSERT_TRUE(lm.isOk()) << lm.status().message();
    EXPECT_EQ(lm.value()->chatTemplate(), nullptr);
    ASSERT_EQ(lm.value()->warnings().size(), 1u);
    EXPECT_NE(lm.value()->warnings()[0].find("tokenizer_config.json"), std::string::npos);
    EXPECT_NE(lm.value()->warnings()[0].find("invalid JSON"), std::string::npos);
}

TEST(HostileFiles, NoChatTemplateKeyIsNoWarning) {
    // A base model without a template is normal: nothing to warn about.
    const std::string dir = copyFixture(kFixture, "no-template");
    writeText(dir + "/tokenizer_config.json", "{}");
    auto lm = LoadedModel::load(dir, ModelLoadOptions{});
    ASSERT_TRUE(lm.isOk()) << lm.status().message();
    EXPECT_TRUE(lm.value()->warnings().empty());
}

TEST(HostileFiles, NamedPipeInPlaceOfAContainerManifest) {
    // Not taken for a Hugging Face checkpoint (which the folder otherwise looks like).
    const std::string dir = withFifo("colibri.json", "fifo-manifest");
    expectNaming(loadStatus(dir), "colibri.json", "a named pipe");
}

TEST(HostileFiles, ModelFolderThatIsABrokenLink) {
    const fs::path base = fs::path(copyFixture(kFixture, "folder-links")).parent_path();
    const std::string loop = (base / "loop-a").string(), dangling = (base / "dangling").string();
    fs::remove(loop);
    fs::remove(base / "loop-b");
    fs::remove(dangling);
    fs::create_symlink("loop-b", loop);
    fs::create_symlink("loop-a", base / "loop-b");
    fs::create_symlink("/nonexistent/model", dangling);
    expectNaming(loadStatus(loop), loop, "symbolic link loop");
    expectNaming(loadStatus(dangling), dangling, "dangling symbolic link");
}
