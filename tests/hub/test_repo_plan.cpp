// Planning a repo download (engine/hub/repo_plan.h) against the local Hub: --include globs with
// huggingface_hub's fnmatch semantics, config.json checked first (an unsupported architecture is
// refused by name before any weight byte is asked for: the server's request log says so), GGUF-only
// and weightless repos refused, the free-space check with its margin and what is already present.
#include "hub/repo_plan.h"
#include "local_hub.h"

#include <nlohmann/json.hpp>

using namespace coli::hub;
using coli::ErrorCode;
using hub_test::LocalHub;
using hub_test::TempDir;
using hub_test::writeFile;

namespace {

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

struct Repos {
    TempDir t{"repo-plan"};
    std::vector<std::string> args;
    Repos() {
        const auto root = t.root;
        auto deep = nlohmann::json::parse(hub_test::supportedConfig());
        deep["architectures"] = {"DeepseekV3ForCausalLM"};
        writeFile(root / "ok/config.json", hub_test::supportedConfig());
        writeFile(root / "ok/model-00001-of-00002.safetensors", hub_test::randomBytes(4000, 1));
        writeFile(root / "ok/model-00002-of-00002.safetensors", hub_test::randomBytes(3000, 2));
        writeFile(root / "ok/tokenizer.json", "{}");
        writeFile(root / "ok/original/consolidated.pth", "pth");
        writeFile(root / "deep/config.json", deep.dump());
        writeFile(root / "deep/model.safetensors", hub_test::randomBytes(5000, 3));
        writeFile(root / "gguf/model.gguf", "GGUF");
        for (const char* r : {"ok", "deep", "gguf"})
            args.insert(args.end(), {"--repo", std::string("t/") + r + "=" + (root / r).string()});
        args.insert(args.end(), {"--log", t.file("requests.log")});
    }
    std::vector<std::string> requested() const {
        std::vector<std::string> out;
        std::istringstream in(hub_test::readFile(t.file("requests.log")));
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
    LocalHub hub(repos.args);
    ASSERT_TRUE(hub.ok());
    HubApi api(HubEndpoint{hub.endpoint(), "", ""});
    TempDir dest("repo-plan-dest");
    writeFile(dest.root / "tokenizer.json", "{}"); // installed
    writeFile(dest.root / "model-00002-of-00002.safetensors.part", std::string(1000, 'x')); // part
    RepoPlanRequest req;
    req.repo = "t/ok";
    req.includes = {"*.safetensors", "tokenizer.json"};
    req.dir = dest.root.string();
    req.marginBytes = 0;
    auto plan = planRepoDownload(api, req);
    ASSERT_TRUE(plan.isOk()) << plan.status().toString();
    std::vector<std::string> paths;
    for (const auto& f : plan.value().files)
        paths.push_back(f.path);
    EXPECT_EQ(paths, (std::vector<std::string>{"config.json", "tokenizer.json",
                                               "model-00001-of-00002.safetensors",
                                               "model-00002-of-00002.safetensors"}));
    const uint64_t config = hub_test::supportedConfig().size();
    EXPECT_EQ(plan.value().totalBytes, config + 2 + 4000 + 3000);
    EXPECT_EQ(plan.value().presentBytes, 2u + 1000u);
    EXPECT_EQ(plan.value().configJson, hub_test::supportedConfig());
    EXPECT_EQ(plan.value().info.commit.size(), 40u);
}

TEST(RepoPlan, UnsupportedArchitectureIsRefusedByNameBeforeAnyWeightByte) {
    Repos repos;
    LocalHub hub(repos.args);
    ASSERT_TRUE(hub.ok());
    HubApi api(HubEndpoint{hub.endpoint(), "", ""});
    TempDir dest("repo-plan-deep");
    RepoPlanRequest req;
    req.repo = "t/deep";
    req.dir = dest.root.string();
    auto plan = planRepoDownload(api, req);
    ASSERT_FALSE(plan.isOk());
    EXPECT_EQ(plan.status().code(), ErrorCode::Unsupported);
    EXPECT_TRUE(contains(plan.status().message(), "DeepseekV3ForCausalLM"))
        << plan.status().message();
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
    LocalHub hub(repos.args);
    ASSERT_TRUE(hub.ok());
    HubApi api(HubEndpoint{hub.endpoint(), "", ""});
    TempDir dest("repo-plan-gguf");
    RepoPlanRequest req;
    req.repo = "t/gguf";
    req.dir = dest.root.string();
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
    LocalHub hub(repos.args);
    ASSERT_TRUE(hub.ok());
    HubApi api(HubEndpoint{hub.endpoint(), "", ""});
    TempDir dest("repo-plan-space");
    coli::convert::FaultyFileSystem fs(coli::convert::posixFileSystem());
    RepoPlanRequest req;
    req.repo = "t/ok";
    req.dir = (dest.root / "not-yet" / "model").string(); // the disk of the nearest folder
    req.marginBytes = 0;
    const uint64_t total = hub_test::supportedConfig().size() + 4000 + 3000 + 2 + 3;
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
