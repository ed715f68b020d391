// Planning a repo download (engine/hub/repo_plan.h) against the local Hub: --include globs with
// huggingface_hub's fnmatch semantics, config.json checked first (an unsupported architecture is
// refused by name before any weight byte is asked for: the server's request log says so), GGUF-only
// and weightless repos refused, the free-space check with its margin and what is already present.
#include "hub/repo_plan.h"
#include "hub_test_server.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

using namespace coli::hub;
using coli::ErrorCode;
using coli::hub_test::contains;
using coli::hub_test::HubServer;
using coli::hub_test::startHub;
using coli::hub_test::supportedConfig;
using coli::hub_test::TempDir;

namespace hub_test = coli::hub_test;

namespace {

struct Repos {
    TempDir t;
    std::vector<std::string> args;
    Repos() {
        const auto& root = t.path();
        auto deep = nlohmann::json::parse(supportedConfig());
        deep["architectures"] = {"DbrxForCausalLM"};
        hub_test::writeBytes(root / "ok/config.json", supportedConfig());
        hub_test::writeBytes(root / "ok/model-00001-of-00002.safetensors",
                             hub_test::randomBytes(4000, 1));
        hub_test::writeBytes(root / "ok/model-00002-of-00002.safetensors",
                             hub_test::randomBytes(3000, 2));
        hub_test::writeBytes(root / "ok/tokenizer.json", "{}");
        hub_test::writeBytes(root / "ok/original/consolidated.pth", "pth");
        hub_test::writeBytes(root / "deep/config.json", deep.dump());
        hub_test::writeBytes(root / "deep/model.safetensors", hub_test::randomBytes(5000, 3));
        hub_test::writeBytes(root / "gguf/model.gguf", "GGUF");
        for (const char* r : {"ok", "deep", "gguf"})
            args.insert(args.end(), {"--repo", std::string("t/") + r + "=" + (root / r).string()});
        args.insert(args.end(), {"--log", (t.path() / "requests.log").string()});
    }
    std::vector<std::string> requested() const {
        std::vector<std::string> out;
        std::istringstream in(hub_test::readBytes((t.path() / "requests.log").string()));
        std::string line;
        while (std::getline(in, line)) {
            const auto j = nlohmann::json::parse(line);
            if (j.contains("range")) out.push_back(j["path"]);
        }
        return out;
    }
};

} // namespace

TEST(RepoPlan, IncludesMatchLikeHuggingFaceHub) {
    EXPECT_TRUE(matchesIncludes("anything/at/all", {}));
    EXPECT_TRUE(matchesIncludes("config.json", {"*.json"}));
    EXPECT_TRUE(matchesIncludes("sub/x.json", {"*.json"})); // fnmatch: '*' crosses '/'
    EXPECT_FALSE(matchesIncludes("x.jsonl", {"*.json"}));
    EXPECT_TRUE(
        matchesIncludes("model-00002-of-00003.safetensors", {"model-0000[1-2]-*.safetensors"}));
    EXPECT_FALSE(
        matchesIncludes("model-00003-of-00003.safetensors", {"model-0000[1-2]-*.safetensors"}));
    EXPECT_TRUE(matchesIncludes("original/params.json", {"original/"}));
    EXPECT_FALSE(matchesIncludes("originals.json", {"original/"}));
    EXPECT_TRUE(matchesIncludes("a.bin", {"?.bin"}));
    EXPECT_FALSE(matchesIncludes("A.JSON", {"*.json"})); // case-sensitive
    EXPECT_TRUE(matchesIncludes("a\\b", {"a\\b"}));      // no backslash escapes
    EXPECT_TRUE(matchesIncludes("x.md", {"*.json", "*.md"}));
}

TEST(RepoPlan, DefaultMarginIsOneGibOrFivePercent) {
    EXPECT_EQ(defaultSpaceMargin(10ull << 30), 1ull << 30);
    EXPECT_EQ(defaultSpaceMargin(100ull << 30), 5ull << 30);
}

TEST(RepoPlan, KeepsIncludedFilesConfigFirstAndCountsWhatIsPresent) {
    Repos repos;
    std::string error;
    auto server = startHub(repos.args, &error);
    ASSERT_TRUE(server) << error;
    const HubServer& hub = *server;
    HubApi api(HubEndpoint{hub.endpoint(), "", ""});
    TempDir dest;
    hub_test::writeBytes(dest.path() / "tokenizer.json", "{}"); // installed
    hub_test::writeBytes(dest.path() / "model-00002-of-00002.safetensors.part",
                         std::string(1000, 'x')); // part
    RepoPlanRequest req;
    req.repo = "t/ok";
    req.includes = {"*.safetensors", "tokenizer.json"};
    req.dir = dest.path().string();
    req.marginBytes = 0;
    auto plan = planRepoDownload(api, req);
    ASSERT_TRUE(plan.isOk()) << plan.status().toString();
    std::vector<std::string> paths;
    for (const auto& f : plan.value().files)
        paths.push_back(f.path);
    EXPECT_EQ(paths, (std::vector<std::string>{"config.json", "tokenizer.json",
                                               "model-00001-of-00002.safetensors",
                                               "model-00002-of-00002.safetensors"}));
    const uint64_t config = supportedConfig().size();
    EXPECT_EQ(plan.value().totalBytes, config + 2 + 4000 + 3000);
    EXPECT_EQ(plan.value().presentBytes, 2u + 1000u);
    EXPECT_EQ(plan.value().configJson, supportedConfig());
    EXPECT_EQ(plan.value().info.commit.size(), 40u);
}

TEST(RepoPlan, UnsupportedArchitectureIsRefusedByNameBeforeAnyWeightByte) {
    Repos repos;
    std::string error;
    auto server = startHub(repos.args, &error);
    ASSERT_TRUE(server) << error;
    const HubServer& hub = *server;
    HubApi api(HubEndpoint{hub.endpoint(), "", ""});
    TempDir dest;
    RepoPlanRequest req;
    req.repo = "t/deep";
    req.dir = dest.path().string();
    auto plan = planRepoDownload(api, req);
    ASSERT_FALSE(plan.isOk());
    EXPECT_EQ(plan.status().code(), ErrorCode::Unsupported);
    EXPECT_TRUE(contains(plan.status().message(), "DbrxForCausalLM")) << plan.status().message();
    const auto asked = repos.requested();
    ASSERT_FALSE(asked.empty());
    bool config = false;
    for (const auto& p : asked) {
        EXPECT_FALSE(contains(p, "model.safetensors")) << p;
        EXPECT_FALSE(contains(p, "/lfs/")) << p;
        config = config || (contains(p, "/resolve/") && contains(p, "config.json"));
    }
    EXPECT_TRUE(config);
}

TEST(RepoPlan, GgufOnlyAndIncludesWithoutWeightsAreRefused) {
    Repos repos;
    std::string error;
    auto server = startHub(repos.args, &error);
    ASSERT_TRUE(server) << error;
    const HubServer& hub = *server;
    HubApi api(HubEndpoint{hub.endpoint(), "", ""});
    TempDir dest;
    RepoPlanRequest req;
    req.repo = "t/gguf";
    req.dir = dest.path().string();
    auto gguf = planRepoDownload(api, req);
    EXPECT_EQ(gguf.status().code(), ErrorCode::Unsupported);
    EXPECT_TRUE(contains(gguf.status().message(), "GGUF")) << gguf.status().message();
    req.repo = "t/ok";
    req.includes = {"*.json"};
    auto none = planRepoDownload(api, req);
    EXPECT_EQ(none.status().code(), ErrorCode::InvalidArgument);
    EXPECT_TRUE(contains(none.status().message(), "--include")) << none.status().message();
}

TEST(RepoPlan, TooLittleFreeSpaceIsNoSpaceWithTheFigures) {
    Repos repos;
    std::string error;
    auto server = startHub(repos.args, &error);
    ASSERT_TRUE(server) << error;
    const HubServer& hub = *server;
    HubApi api(HubEndpoint{hub.endpoint(), "", ""});
    TempDir dest;
    coli::convert::FaultyFileSystem fs(coli::convert::posixFileSystem());
    RepoPlanRequest req;
    req.repo = "t/ok";
    req.dir = (dest.path() / "not-yet" / "model").string(); // the disk of the nearest folder
    req.marginBytes = 0;
    const uint64_t total = supportedConfig().size() + 4000 + 3000 + 2 + 3;
    fs.reportedFree = total; // exactly enough
    ASSERT_TRUE(planRepoDownload(api, req, fs).isOk());
    req.containerBytes = 1; // plus a container: one byte short
    auto shortBy = planRepoDownload(api, req, fs);
    ASSERT_EQ(shortBy.status().code(), ErrorCode::NoSpace);
    EXPECT_TRUE(contains(shortBy.status().message(), "free")) << shortBy.status().message();
    EXPECT_TRUE(contains(shortBy.status().message(), "container")) << shortBy.status().message();
    // The default margin (at least 1 GiB) applies when none is given.
    req.containerBytes = 0;
    req.marginBytes = -1;
    fs.reportedFree = 512ull << 20;
    auto margin = planRepoDownload(api, req, fs);
    ASSERT_EQ(margin.status().code(), ErrorCode::NoSpace);
    EXPECT_TRUE(contains(margin.status().message(), "margin")) << margin.status().message();
}
