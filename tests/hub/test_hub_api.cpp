// The Hub API client (engine/hub/hub_api.h) against the local test Hub (tests/hub/hub_server.py):
// resolve URLs percent-encoded, search results flagged (unsupported architecture, GGUF-only, no
// weights) in download order, model info with a tree paginated over several pages, pinned to the
// commit, status mapping (404 repo/revision/file, 401 gated), and support from config.json.
#include "hub/hub_api.h"
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

std::string configWith(const std::string& arch) {
    auto j = nlohmann::json::parse(supportedConfig());
    j["architectures"] = {arch};
    return j.dump();
}

// Four repos: supported, unsupported architecture, GGUF only, nothing to run.
struct Repos {
    TempDir t;
    std::vector<std::string> args;
    Repos() {
        const auto& root = t.path();
        hub_test::writeBytes(root / "tiny/config.json", supportedConfig());
        hub_test::writeBytes(root / "tiny/model.safetensors", hub_test::randomBytes(3000, 1));
        hub_test::writeBytes(root / "tiny/tokenizer.json", "{}");
        hub_test::writeBytes(root / "tiny/sub dir/deeper/a#b.txt", "hello");
        hub_test::writeBytes(root / "tiny/sub dir/x.json", "{}");
        hub_test::writeBytes(root / "tiny/sub dir/y.json", "[]");
        hub_test::writeBytes(
            root / "tiny/_hub.json",
            R"({"downloads": 50, "likes": 3, "parameters": 123456, "tags": ["safetensors"]})");
        hub_test::writeBytes(root / "deep/config.json", configWith("DbrxForCausalLM"));
        hub_test::writeBytes(root / "deep/model.safetensors", "x");
        hub_test::writeBytes(root / "deep/_hub.json", R"({"downloads": 40})");
        hub_test::writeBytes(root / "gguf/model-Q4_K_M.gguf", "GGUF");
        hub_test::writeBytes(root / "gguf/_hub.json", R"({"downloads": 30, "tags": ["gguf"]})");
        hub_test::writeBytes(root / "bare/README.md", "# nothing");
        hub_test::writeBytes(root / "bare/_hub.json", R"({"downloads": 20, "gated": true})");
        for (const char* r : {"tiny", "deep", "gguf", "bare"})
            args.insert(args.end(),
                        {"--repo", std::string("test/") + r + "-model=" + (root / r).string()});
        args.insert(args.end(),
                    {"--page-size", "2", "--log", (t.path() / "requests.log").string()});
    }
};

HubEndpoint endpointOf(const HubServer& hub) {
    return HubEndpoint{hub.endpoint(), "", ""};
}

std::vector<nlohmann::json> requestLog(const TempDir& t) {
    std::vector<nlohmann::json> out;
    std::istringstream in(hub_test::readBytes((t.path() / "requests.log").string()));
    std::string line;
    while (std::getline(in, line))
        out.push_back(nlohmann::json::parse(line));
    return out;
}

} // namespace

TEST(HubApi, ResolveUrlEncodesEachSegmentAndTheRevision) {
    EXPECT_EQ(resolveUrl("https://h", "o/n", "main", "config.json"),
              "https://h/o/n/resolve/main/config.json");
    EXPECT_EQ(resolveUrl("https://h", "o/n", "refs/pr/1", "sub dir/a#b?.json"),
              "https://h/o/n/resolve/refs%2Fpr%2F1/sub%20dir/a%23b%3F.json");
    EXPECT_EQ(resolveUrl("https://h", "o/n", "v1", "caf\xc3\xa9/x~y_z-1.txt"),
              "https://h/o/n/resolve/v1/caf%C3%A9/x~y_z-1.txt");
}

TEST(HubApi, SupportFromConfigNamesTheArchitecture) {
    std::string note;
    EXPECT_EQ(supportFromConfig(supportedConfig(), &note), Support::Supported);
    EXPECT_TRUE(note.empty()) << note;
    EXPECT_EQ(supportFromConfig(configWith("DbrxForCausalLM"), &note),
              Support::UnsupportedArchitecture);
    EXPECT_TRUE(contains(note, "DbrxForCausalLM")) << note;
    EXPECT_TRUE(contains(note, "MixtralForCausalLM")) << note; // lists the supported ones
    EXPECT_EQ(supportFromConfig("{not json", &note), Support::Unknown);
    EXPECT_TRUE(contains(note, "config.json")) << note;
}

TEST(HubApi, SearchFlagsWhatThisAppCannotRunMostDownloadedFirst) {
    Repos repos;
    std::string error;
    auto server = startHub(repos.args, &error);
    ASSERT_TRUE(server) << error;
    const HubServer& hub = *server;
    HubApi api(endpointOf(hub));
    auto found = api.search("model", 10);
    ASSERT_TRUE(found.isOk()) << found.status().toString();
    const auto& r = found.value();
    ASSERT_EQ(r.size(), 4u);
    EXPECT_EQ(r[0].id, "test/tiny-model");
    EXPECT_EQ(r[0].support, Support::Supported) << r[0].supportNote;
    EXPECT_EQ(r[0].architectures, std::vector<std::string>{"MixtralForCausalLM"});
    EXPECT_EQ(r[0].parameters, 123456);
    EXPECT_EQ(r[0].downloads, 50);
    EXPECT_EQ(r[0].likes, 3);
    EXPECT_EQ(r[1].id, "test/deep-model");
    EXPECT_EQ(r[1].support, Support::UnsupportedArchitecture);
    EXPECT_TRUE(contains(r[1].supportNote, "DbrxForCausalLM")) << r[1].supportNote;
    EXPECT_EQ(r[2].support, Support::GgufOnly);
    EXPECT_EQ(r[3].support, Support::NoWeights);
    EXPECT_TRUE(r[3].gated);
    // The limit is passed on; out of range is refused before any request.
    auto one = api.search("model", 1);
    ASSERT_TRUE(one.isOk());
    EXPECT_EQ(one.value().size(), 1u);
    EXPECT_EQ(api.search("model", 0).status().code(), ErrorCode::InvalidArgument);
    EXPECT_EQ(api.search("model", 101).status().code(), ErrorCode::InvalidArgument);
    EXPECT_EQ(requestLog(repos.t).size(), 2u);
}

TEST(HubApi, ModelInfoFollowsTreePagesAndPinsTheCommit) {
    Repos repos;
    std::string error;
    auto server = startHub(repos.args, &error);
    ASSERT_TRUE(server) << error;
    const HubServer& hub = *server;
    HubApi api(endpointOf(hub));
    auto info = api.modelInfo("test/tiny-model");
    ASSERT_TRUE(info.isOk()) << info.status().toString();
    const ModelInfo& m = info.value();
    EXPECT_EQ(m.revision, "main");
    ASSERT_EQ(m.commit.size(), 40u);
    EXPECT_EQ(m.summary.support, Support::Supported);
    std::vector<std::string> paths;
    for (const auto& f : m.files)
        paths.push_back(f.path);
    EXPECT_EQ(paths, (std::vector<std::string>{"config.json", "model.safetensors",
                                               "sub dir/deeper/a#b.txt", "sub dir/x.json",
                                               "sub dir/y.json", "tokenizer.json"}));
    const RepoFile& w = m.files[1];
    EXPECT_EQ(w.size, 3000u);
    EXPECT_TRUE(w.isLfs());
    EXPECT_EQ(w.lfsSha256.size(), 64u);
    EXPECT_EQ(w.blobId.size(), 40u);
    EXPECT_FALSE(m.files[0].isLfs());
    EXPECT_EQ(m.totalBytes(), 3000u + supportedConfig().size() + 5 + 2 + 2 + 2);
    // Eight tree entries (six files, two folders) at two per page: four tree requests, all at
    // the commit the info named.
    int treePages = 0;
    for (const auto& e : requestLog(repos.t)) {
        const std::string path = e["path"];
        if (!contains(path, "/tree/")) continue;
        ++treePages;
        EXPECT_TRUE(contains(path, "/tree/" + m.commit)) << path;
    }
    EXPECT_EQ(treePages, 4);
}

TEST(HubApi, StatusesNameTheRepoRevisionAndFile) {
    Repos repos;
    std::string error;
    auto server = startHub(repos.args, &error);
    ASSERT_TRUE(server) << error;
    const HubServer& hub = *server;
    HubApi api(endpointOf(hub), ApiRetry{0, 0, 0});
    auto missing = api.modelInfo("test/no-such-model");
    EXPECT_EQ(missing.status().code(), ErrorCode::NotFound);
    EXPECT_TRUE(contains(missing.status().message(), "test/no-such-model"))
        << missing.status().message();
    EXPECT_TRUE(contains(missing.status().message(), "repository not found"));
    auto rev = api.modelInfo("test/tiny-model", "v9");
    EXPECT_EQ(rev.status().code(), ErrorCode::NotFound);
    EXPECT_TRUE(contains(rev.status().message(), "revision not found")) << rev.status().message();
    EXPECT_TRUE(contains(rev.status().message(), "v9"));
    auto file = api.fetchText("test/tiny-model", "main", "nope.json");
    EXPECT_EQ(file.status().code(), ErrorCode::NotFound);
    EXPECT_TRUE(contains(file.status().message(), "nope.json")) << file.status().message();
    auto text = api.fetchText("test/tiny-model", "main", "sub dir/deeper/a#b.txt");
    ASSERT_TRUE(text.isOk()) << text.status().toString();
    EXPECT_EQ(text.value(), "hello");
    auto big = api.fetchText("test/tiny-model", "main", "config.json", 10);
    EXPECT_EQ(big.status().code(), ErrorCode::Malformed);
    auto gated = api.fetchText("test/bare-model", "main", "README.md");
    EXPECT_EQ(gated.status().code(), ErrorCode::Unauthorized);
    EXPECT_TRUE(contains(gated.status().message(), "HF_TOKEN")) << gated.status().message();
    EXPECT_TRUE(contains(gated.status().message(), "test/bare-model"));
}

TEST(HubApi, TooManyRequestsAndServerErrorsAreRetriedThenNetwork) {
    TempDir t;
    hub_test::writeBytes(t.path() / "r/config.json", supportedConfig());
    hub_test::writeBytes(t.path() / "r/_hub.json",
                         R"({"behaviour": {"files": {"config.json": )"
                         R"({"retry_after": {"count": 2, "seconds": 0, "status": 429}}}}})");
    hub_test::writeBytes(t.path() / "s/config.json", supportedConfig());
    hub_test::writeBytes(t.path() / "s/_hub.json",
                         R"({"behaviour": {"retry_after": {"count": 9, "seconds": 0, )"
                         R"("status": 503}}})");
    std::string error;
    auto server = startHub({"--repo", "t/r=" + (t.path() / "r").string(), "--repo",
                            "t/s=" + (t.path() / "s").string()},
                           &error);
    ASSERT_TRUE(server) << error;
    HubApi patient(endpointOf(*server), ApiRetry{3, 0.01, 0.05});
    auto text = patient.fetchText("t/r", "main", "config.json");
    ASSERT_TRUE(text.isOk()) << text.status().toString();
    EXPECT_EQ(text.value(), supportedConfig());
    HubApi hasty(endpointOf(*server), ApiRetry{1, 0.01, 0.05});
    auto failed = hasty.fetchText("t/s", "main", "config.json");
    EXPECT_EQ(failed.status().code(), ErrorCode::Network);
    EXPECT_TRUE(contains(failed.status().message(), "503")) << failed.status().message();
}
