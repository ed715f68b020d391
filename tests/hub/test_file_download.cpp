// downloadFile against the local test Hub (hub_server.py) and its file-serving faults:
// resume, restarts, retries, hashes, disk full, gated repos, HTTPS. docs/hub.md "Downloads".
#include "convert/file_layer.h"
#include "hub/file_download.h"
#include "hub/http_client.h"
#include "hub_test_server.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <functional>
#include <map>

namespace coli::hub {
namespace {

namespace fs = std::filesystem;
using hub_test::HubServer;
using hub_test::HubServerOptions;
using hub_test::randomBytes;
using hub_test::readBytes;
using hub_test::TempDir;
using hub_test::writeBytes;

constexpr const char* kRepo = "test-org/tiny";
const std::vector<std::string> kBoth = {"model.safetensors", "notes/readme.txt"};

HttpRequest at(const std::string& url) {
    HttpRequest r;
    r.url = url;
    return r;
}

// Retries in milliseconds rather than seconds. A stall is 10 s under 1 KiB/s (a busy machine must
// not make one), 1 s in the stall tests.
RetryPolicy fastPolicy() {
    RetryPolicy p;
    p.maxRetries = 6;
    p.initialBackoffSeconds = 0.02;
    p.maxBackoffSeconds = 2;
    p.stallBytesPerSecond = 1024;
    p.stallSeconds = 10;
    p.connectTimeoutSeconds = 5;
    return p;
}

RetryPolicy stallPolicy(int maxRetries) {
    RetryPolicy p = fastPolicy();
    p.stallSeconds = 1;
    p.maxRetries = maxRetries;
    return p;
}

// CURL_CA_BUNDLE set for one scope (or removed, with an empty value), then restored.
class ScopedCaBundle {
public:
    explicit ScopedCaBundle(const std::string& value) {
        if (const char* old = std::getenv("CURL_CA_BUNDLE")) m_old = old, m_had = true;
        if (value.empty())
            ::unsetenv("CURL_CA_BUNDLE");
        else
            ::setenv("CURL_CA_BUNDLE", value.c_str(), 1);
    }
    ~ScopedCaBundle() {
        if (m_had)
            ::setenv("CURL_CA_BUNDLE", m_old.c_str(), 1);
        else
            ::unsetenv("CURL_CA_BUNDLE");
    }

private:
    std::string m_old;
    bool m_had = false;
};

class FileDownload : public ::testing::Test {
protected:
    // A repo with one LFS file (by its suffix) and one plain file, both big enough for drops to
    // land mid-body; `hubJson` is its _hub.json (behaviours).
    void makeRepo(const nlohmann::json& hubJson, size_t lfsBytes = 300000,
                  size_t plainBytes = 120000) {
        m_repoDir = m_tmp.path() / "repo";
        m_lfs = randomBytes(lfsBytes, 1);
        m_plain = randomBytes(plainBytes, 2);
        writeBytes(m_repoDir / "model.safetensors", m_lfs);
        writeBytes(m_repoDir / "notes/readme.txt", m_plain);
        if (!hubJson.is_null()) writeBytes(m_repoDir / "_hub.json", hubJson.dump());
    }

    void startServer(HubServerOptions o = {}) {
        o.repos.push_back({kRepo, m_repoDir.string()});
        std::string err;
        m_server = HubServer::start(o, &err);
        ASSERT_TRUE(m_server) << err;
    }

    std::unique_ptr<HttpClient> client(const std::string& token = "") {
        HubEndpoint e;
        e.base = m_server->endpoint();
        e.token = token;
        e.tokenSource = token.empty() ? "" : "HF_TOKEN";
        return std::make_unique<HttpClient>(e);
    }

    // The file tree and commit as the server's API gives them (the hashes come from Python's
    // hashlib, independently of the code under test).
    void loadTree(HttpClient& c) {
        auto info = c.get(at(m_server->endpoint() + "/api/models/" + kRepo));
        ASSERT_TRUE(info) << info.status().toString();
        ASSERT_EQ(info->status, 200) << info->body;
        m_commit = nlohmann::json::parse(info->body)["sha"];
        auto tree =
            c.get(at(m_server->endpoint() + "/api/models/" + kRepo + "/tree/main?recursive=true"));
        ASSERT_TRUE(tree) << tree.status().toString();
        for (const auto& e : nlohmann::json::parse(tree->body)) {
            if (e["type"] != "file") continue;
            RepoFile f;
            f.path = e["path"];
            f.size = e["size"];
            f.blobId = e["oid"];
            if (e.contains("lfs")) f.lfsSha256 = e["lfs"]["oid"];
            m_files[f.path] = f;
        }
        ASSERT_TRUE(m_files.count("model.safetensors") && m_files["model.safetensors"].isLfs());
        ASSERT_TRUE(m_files.count("notes/readme.txt") && !m_files["notes/readme.txt"].isLfs());
    }

    Result<FileDownloadResult> fetch(HttpClient& c, const std::string& path, PartState& state,
                                     const RetryPolicy& policy = fastPolicy(),
                                     convert::FileSystem& fsys = convert::posixFileSystem(),
                                     const std::atomic<bool>* cancel = nullptr) {
        return downloadFile(
            c, kRepo, m_commit, m_files.at(path), m_dest.string(), state, policy,
            [this](const FileProgress& p) {
                m_phases.push_back(p.phase);
                if (!p.note.empty()) m_notes.push_back(p.note);
                if (m_onProgress) m_onProgress(p);
            },
            cancel, fsys);
    }

    nlohmann::json stats() {
        auto c = client();
        auto r = c->get(at(m_server->endpoint() + "/_colibri/stats"));
        EXPECT_TRUE(r) << r.status().toString();
        return r ? nlohmann::json::parse(r->body) : nlohmann::json();
    }

    bool noted(const std::string& text) const {
        for (const auto& n : m_notes)
            if (n.find(text) != std::string::npos) return true;
        return false;
    }

    TempDir m_tmp;
    fs::path m_repoDir;
    fs::path m_dest = m_tmp.path() / "dest";
    std::string m_lfs, m_plain, m_commit;
    std::map<std::string, RepoFile> m_files;
    std::unique_ptr<HubServer> m_server;
    std::vector<std::string> m_phases, m_notes;
    std::function<void(const FileProgress&)> m_onProgress;
};

TEST(GitBlobSha1, MatchesGitHashObject) {
    TempDir tmp;
    writeBytes(tmp.path() / "hello", "hello\n");
    writeBytes(tmp.path() / "empty", "");
    auto h = gitBlobSha1((tmp.path() / "hello").string());
    ASSERT_TRUE(h) << h.status().toString();
    EXPECT_EQ(h.value(), "ce013625030ba8dba906f756967f9e9ca394464a"); // git hash-object
    EXPECT_EQ(gitBlobSha1((tmp.path() / "empty").string()).value(),
              "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
    auto missing = gitBlobSha1((tmp.path() / "missing").string());
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.status().code(), ErrorCode::NotFound);
}

TEST_F(FileDownload, LfsAndPlainFilesAreDownloadedCheckedAndInstalled) {
    makeRepo(nullptr);
    startServer();
    auto c = client();
    loadTree(*c);
    for (const auto& [path, bytes] :
         {std::pair{"model.safetensors", m_lfs}, std::pair{"notes/readme.txt", m_plain}}) {
        PartState st;
        auto r = fetch(*c, path, st);
        ASSERT_TRUE(r) << r.status().toString();
        EXPECT_EQ(r->bytesTransferred, bytes.size());
        EXPECT_EQ(r->retries, 0);
        EXPECT_FALSE(r->restarted);
        EXPECT_EQ(readBytes(m_dest / path), bytes);
        EXPECT_FALSE(fs::exists(m_dest / (std::string(path) + ".part")));
        EXPECT_EQ(m_phases.back(), "done");
        EXPECT_NE(std::find(m_phases.begin(), m_phases.end(), "verifying"), m_phases.end());
        // Again: already there, nothing fetched.
        auto again = fetch(*c, path, st);
        ASSERT_TRUE(again) << again.status().toString();
        EXPECT_TRUE(again->alreadyInstalled);
        EXPECT_EQ(again->bytesTransferred, 0u);
    }
    EXPECT_EQ(stats()["total_bytes_sent"], m_lfs.size() + m_plain.size());
}

TEST_F(FileDownload, PartsLeftByEarlierRunsAreResumedVerifiedOrRestarted) {
    makeRepo(nullptr);
    writeBytes(m_repoDir / "empty.txt", "");
    startServer();
    auto c = client();
    loadTree(*c);
    { // complete: checked and installed without a request
        writeBytes(m_dest / "model.safetensors.part", m_lfs);
        PartState st;
        auto r = fetch(*c, "model.safetensors", st);
        ASSERT_TRUE(r) << r.status().toString();
        EXPECT_EQ(r->bytesTransferred, 0u);
        EXPECT_FALSE(r->restarted);
        EXPECT_EQ(readBytes(m_dest / "model.safetensors"), m_lfs);
    }
    { // longer than the file: not a prefix of it, restarted
        writeBytes(m_dest / "notes/readme.txt.part", m_plain + "extra");
        PartState st;
        auto r = fetch(*c, "notes/readme.txt", st);
        ASSERT_TRUE(r) << r.status().toString();
        EXPECT_TRUE(r->restarted);
        EXPECT_EQ(r->bytesTransferred, m_plain.size());
        EXPECT_EQ(readBytes(m_dest / "notes/readme.txt"), m_plain);
    }
    { // an empty file: its git blob id is checked, nothing fetched
        PartState st;
        auto r = fetch(*c, "empty.txt", st);
        ASSERT_TRUE(r) << r.status().toString();
        EXPECT_EQ(r->bytesTransferred, 0u);
        EXPECT_TRUE(fs::exists(m_dest / "empty.txt"));
        EXPECT_EQ(fs::file_size(m_dest / "empty.txt"), 0u);
    }
    EXPECT_EQ(stats()["total_bytes_sent"], m_plain.size());
}

TEST_F(FileDownload, TheTokenGoesToTheHubButNeverToTheCdn) {
    // A gated repo: the Hub needs the token; the CDN answers 400 if it receives one.
    makeRepo({{"gated", true}});
    HubServerOptions o;
    o.token = "hf_test_secret_token";
    startServer(o);
    auto c = client("hf_test_secret_token");
    loadTree(*c);
    PartState st;
    auto r = fetch(*c, "model.safetensors", st);
    ASSERT_TRUE(r) << r.status().toString();
    EXPECT_EQ(readBytes(m_dest / "model.safetensors"), m_lfs);
}

TEST_F(FileDownload, AGatedRepoWithoutATokenIsUnauthorizedAndSaysToSetHfToken) {
    makeRepo({{"gated", true}});
    HubServerOptions o;
    o.token = "hf_right_token";
    startServer(o);
    auto good = client("hf_right_token");
    loadTree(*good);
    for (const std::string& token : std::vector<std::string>{"", "hf_wrong_token_value"}) {
        auto c = client(token);
        PartState st;
        auto r = fetch(*c, "notes/readme.txt", st);
        ASSERT_FALSE(r);
        EXPECT_EQ(r.status().code(), ErrorCode::Unauthorized) << r.status().toString();
        EXPECT_NE(r.status().message().find("HF_TOKEN"), std::string::npos) << r.status().message();
        EXPECT_NE(r.status().message().find("401"), std::string::npos) << r.status().message();
        if (!token.empty()) {
            EXPECT_EQ(r.status().message().find(token), std::string::npos) << "token printed";
            EXPECT_NE(r.status().message().find("refused"), std::string::npos);
        }
        EXPECT_EQ(r.status().message().find("hf_right_token"), std::string::npos);
        EXPECT_FALSE(fs::exists(m_dest / "notes/readme.txt"));
    }
    PartState st;
    auto ok = fetch(*good, "notes/readme.txt", st);
    ASSERT_TRUE(ok) << ok.status().toString();
    EXPECT_EQ(readBytes(m_dest / "notes/readme.txt"), m_plain);
}

TEST_F(FileDownload, DroppedConnectionsResumeWithoutRefetchingTheBytesAlreadyThere) {
    makeRepo({{"behaviour", {{"drops", {{"count", 4}, {"seed", 11}}}}}});
    startServer();
    auto c = client();
    loadTree(*c);
    for (const auto& [path, bytes] :
         {std::pair{"model.safetensors", m_lfs}, std::pair{"notes/readme.txt", m_plain}}) {
        PartState st;
        auto r = fetch(*c, path, st);
        ASSERT_TRUE(r) << r.status().toString();
        EXPECT_EQ(readBytes(m_dest / path), bytes);
        EXPECT_EQ(r->retries, 4);
        EXPECT_FALSE(r->restarted);
        EXPECT_EQ(r->bytesTransferred, bytes.size()); // each byte once
        EXPECT_LT(double(r->bytesTransferred), 1.2 * double(bytes.size()));
        EXPECT_TRUE(noted("connection closed")) << (m_notes.empty() ? "" : m_notes.back());
    }
    // The server's own count agrees (the drops' bytes were all used).
    const auto s = stats();
    EXPECT_LT(double(s["total_bytes_sent"].get<uint64_t>()),
              1.2 * double(m_lfs.size() + m_plain.size()));
    EXPECT_EQ(s["requests"][std::string(kRepo) + "/model.safetensors"], 5);
}

TEST_F(FileDownload, AServerThatIgnoresRangeRestartsTheFileAndStillEndsRight) {
    makeRepo({{"behaviour", {{"drops", {{"count", 1}, {"seed", 5}}}, {"ignore_range", true}}}});
    startServer();
    auto c = client();
    loadTree(*c);
    for (const auto& [path, bytes] :
         {std::pair{"model.safetensors", m_lfs}, std::pair{"notes/readme.txt", m_plain}}) {
        PartState st;
        auto r = fetch(*c, path, st);
        ASSERT_TRUE(r) << r.status().toString();
        EXPECT_TRUE(r->restarted);
        EXPECT_EQ(r->retries, 1);
        EXPECT_EQ(readBytes(m_dest / path), bytes);
    }
}

TEST_F(FileDownload, A206ThatDoesNotContinueThePartRestartsTheFile) {
    makeRepo({{"behaviour", {{"drops", {{"count", 1}, {"seed", 9}}}, {"wrong_range", true}}}});
    startServer();
    auto c = client();
    loadTree(*c);
    for (const auto& [path, bytes] :
         {std::pair{"model.safetensors", m_lfs}, std::pair{"notes/readme.txt", m_plain}}) {
        PartState st;
        auto r = fetch(*c, path, st);
        ASSERT_TRUE(r) << r.status().toString();
        EXPECT_TRUE(r->restarted);
        EXPECT_TRUE(noted("Content-Range")) << (m_notes.empty() ? "" : m_notes.back());
        EXPECT_EQ(readBytes(m_dest / path), bytes);
    }
}

TEST_F(FileDownload, ACompressedResponseIsRefusedAndThePartKept) {
    makeRepo({{"behaviour", {{"gzip", true}}}});
    startServer();
    auto c = client();
    loadTree(*c);
    writeBytes(m_dest / "notes/readme.txt.part", m_plain.substr(0, 1000));
    PartState st;
    auto r = fetch(*c, "notes/readme.txt", st);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.status().code(), ErrorCode::Unsupported) << r.status().toString();
    EXPECT_NE(r.status().message().find("Content-Encoding: gzip"), std::string::npos);
    EXPECT_EQ(readBytes(m_dest / "notes/readme.txt.part"), m_plain.substr(0, 1000));
    EXPECT_FALSE(fs::exists(m_dest / "notes/readme.txt"));
}

TEST_F(FileDownload, AFileWhoseEtagChangedBetweenRequestsRestarts) {
    // The first response is another version of the file (ETag "old-..."), cut halfway; resuming
    // it with If-Range gets the new version whole, which must replace the .part, not extend it.
    makeRepo({{"behaviour", {{"changed", true}}}});
    startServer();
    auto c = client();
    loadTree(*c);
    for (const auto& [path, bytes] :
         {std::pair{"model.safetensors", m_lfs}, std::pair{"notes/readme.txt", m_plain}}) {
        PartState st;
        std::string firstEtag;
        m_onProgress = [&](const FileProgress&) {
            if (firstEtag.empty()) firstEtag = st.etag;
        };
        auto r = fetch(*c, path, st);
        ASSERT_TRUE(r) << r.status().toString();
        EXPECT_TRUE(r->restarted);
        EXPECT_EQ(firstEtag.rfind("\"old-", 0), 0u) << firstEtag;
        EXPECT_EQ(readBytes(m_dest / path), bytes);
        EXPECT_EQ(r->bytesTransferred, bytes.size() / 2 + bytes.size());
    }
}

TEST_F(FileDownload, AWrongHashIsAClearErrorAndNothingIsInstalled) {
    makeRepo({{"behaviour", {{"wrong_hash", true}}}});
    startServer();
    auto c = client();
    loadTree(*c);
    for (const std::string& path : kBoth) {
        PartState st;
        auto r = fetch(*c, path, st);
        ASSERT_FALSE(r) << path;
        EXPECT_EQ(r.status().code(), ErrorCode::Malformed);
        const std::string m = r.status().message();
        EXPECT_NE(m.find("hash mismatch"), std::string::npos) << m;
        EXPECT_NE(m.find(path), std::string::npos) << m;
        EXPECT_NE(m.find(path == "model.safetensors" ? "SHA-256" : "git blob"), std::string::npos)
            << m;
        EXPECT_FALSE(fs::exists(m_dest / path));
        EXPECT_FALSE(fs::exists(m_dest / (path + ".part")));
        EXPECT_TRUE(st.etag.empty());
    }
}

TEST_F(FileDownload, TooManyRequestsWaitsForRetryAfterThenSucceeds) {
    makeRepo({{"behaviour", {{"retry_after", {{"count", 2}, {"seconds", 1}}}}}});
    startServer();
    auto c = client();
    loadTree(*c);
    PartState st;
    auto r = fetch(*c, "model.safetensors", st);
    ASSERT_TRUE(r) << r.status().toString();
    EXPECT_EQ(r->retries, 2);
    EXPECT_EQ(readBytes(m_dest / "model.safetensors"), m_lfs);
    // The server's 1 s, not the policy's 0.02 s backoff.
    EXPECT_TRUE(noted("HTTP 429")) << (m_notes.empty() ? "" : m_notes.back());
    EXPECT_TRUE(noted("in 1.0 s")) << (m_notes.empty() ? "" : m_notes.back());
    EXPECT_NE(std::find(m_phases.begin(), m_phases.end(), "waiting"), m_phases.end());
}

TEST_F(FileDownload, ServerErrorsAreRetriedUntilTheRetriesRunOut) {
    makeRepo({{"behaviour", {{"retry_after", {{"count", 100}, {"seconds", 0}, {"status", 503}}}}}});
    startServer();
    auto c = client();
    loadTree(*c);
    PartState st;
    RetryPolicy p = fastPolicy();
    p.maxRetries = 2;
    auto r = fetch(*c, "notes/readme.txt", st, p);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.status().code(), ErrorCode::Network);
    EXPECT_NE(r.status().message().find("giving up after 2 retries"), std::string::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find("HTTP 503"), std::string::npos) << r.status().message();
}

TEST_F(FileDownload, AStalledTransferIsRetriedAndResumed) {
    makeRepo({{"behaviour", {{"stall", {{"count", 1}, {"after", 1000}, {"seconds", 10}}}}}});
    startServer();
    auto c = client();
    loadTree(*c);
    PartState st;
    auto r = fetch(*c, "model.safetensors", st, stallPolicy(6));
    ASSERT_TRUE(r) << r.status().toString();
    EXPECT_EQ(r->retries, 1);
    EXPECT_EQ(r->bytesTransferred, m_lfs.size());
    EXPECT_TRUE(noted("stalled")) << (m_notes.empty() ? "" : m_notes.back());
    EXPECT_EQ(readBytes(m_dest / "model.safetensors"), m_lfs);
}

TEST_F(FileDownload, AServerThatKeepsStallingEndsWithAClearError) {
    makeRepo({{"behaviour", {{"stall", {{"count", 100}, {"after", 0}, {"seconds", 10}}}}}});
    startServer();
    auto c = client();
    loadTree(*c);
    PartState st;
    auto r = fetch(*c, "notes/readme.txt", st, stallPolicy(1));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.status().code(), ErrorCode::Network);
    EXPECT_NE(r.status().message().find("stalled"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("giving up"), std::string::npos) << r.status().message();
}

TEST_F(FileDownload, DiskFullStopsWithNoSpaceKeepsThePartAndARerunFinishes) {
    makeRepo(nullptr);
    startServer();
    auto c = client();
    loadTree(*c);
    const uint64_t half = m_lfs.size() / 2;
    convert::FaultyFileSystem full(convert::posixFileSystem(), half);
    PartState st;
    auto r = fetch(*c, "model.safetensors", st, fastPolicy(), full);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.status().code(), ErrorCode::NoSpace) << r.status().toString();
    EXPECT_NE(r.status().message().find("disk full"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("kept"), std::string::npos) << r.status().message();
    const fs::path part = m_dest / "model.safetensors.part";
    ASSERT_TRUE(fs::exists(part));
    EXPECT_EQ(fs::file_size(part), half);
    EXPECT_FALSE(fs::exists(m_dest / "model.safetensors"));
    EXPECT_FALSE(st.etag.empty()); // kept for the resume

    // Space freed: the same state resumes from the .part.
    m_phases.clear();
    auto again = fetch(*c, "model.safetensors", st);
    ASSERT_TRUE(again) << again.status().toString();
    EXPECT_FALSE(again->restarted);
    EXPECT_EQ(again->bytesTransferred, m_lfs.size() - half);
    EXPECT_EQ(readBytes(m_dest / "model.safetensors"), m_lfs);
}

TEST_F(FileDownload, CancelKeepsThePart) {
    makeRepo(nullptr, 400000);
    HubServerOptions o;
    o.extraArgs = {"--throttle", "400000"}; // about a second for the file
    startServer(o);
    auto c = client();
    loadTree(*c);
    std::atomic<bool> cancel{false};
    m_onProgress = [&](const FileProgress& p) {
        if (p.bytesDone > 0) cancel = true;
    };
    PartState st;
    auto r = fetch(*c, "model.safetensors", st, fastPolicy(), convert::posixFileSystem(), &cancel);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.status().code(), ErrorCode::Cancelled) << r.status().toString();
    EXPECT_TRUE(fs::exists(m_dest / "model.safetensors.part"));
    EXPECT_FALSE(fs::exists(m_dest / "model.safetensors"));
}

TEST_F(FileDownload, MissingFilesAndUnsafePathsAreRefused) {
    makeRepo(nullptr);
    startServer();
    auto c = client();
    loadTree(*c);
    RepoFile ghost = m_files["notes/readme.txt"];
    ghost.path = "notes/ghost.txt";
    PartState st;
    auto r = downloadFile(*c, kRepo, m_commit, ghost, m_dest.string(), st, fastPolicy());
    ASSERT_FALSE(r);
    EXPECT_EQ(r.status().code(), ErrorCode::NotFound) << r.status().toString();
    EXPECT_NE(r.status().message().find("notes/ghost.txt"), std::string::npos);
    for (const char* bad : {"../escape.txt", "/etc/passwd", "a//b", "a/./b", ""}) {
        RepoFile evil = m_files["notes/readme.txt"];
        evil.path = bad;
        auto e = downloadFile(*c, kRepo, m_commit, evil, m_dest.string(), st, fastPolicy());
        ASSERT_FALSE(e) << bad;
        EXPECT_EQ(e.status().code(), ErrorCode::InvalidArgument) << bad;
    }
    EXPECT_FALSE(fs::exists(m_tmp.path() / "escape.txt"));
}

TEST_F(FileDownload, HttpsWorksWithTheTestCaAndAnUntrustedCertificateIsRefused) {
    const fs::path certs = m_tmp.path() / "certs";
    const std::string err = hub_test::makeCerts(certs);
    ASSERT_TRUE(err.empty()) << err;
    makeRepo(nullptr);
    HubServerOptions o;
    o.tlsCert = (certs / "server.pem").string();
    o.tlsKey = (certs / "server.key").string();
    startServer(o);
    ASSERT_EQ(m_server->endpoint().rfind("https://", 0), 0u);
    {
        ScopedCaBundle ca((certs / "ca.pem").string());
        auto c = client();
        loadTree(*c);
        for (const std::string& path : kBoth) {
            PartState st;
            auto r = fetch(*c, path, st);
            ASSERT_TRUE(r) << r.status().toString();
        }
        EXPECT_EQ(readBytes(m_dest / "model.safetensors"), m_lfs);
        EXPECT_EQ(readBytes(m_dest / "notes/readme.txt"), m_plain);
    }
    ScopedCaBundle none("");
    auto c = client();
    m_dest = m_tmp.path() / "dest2";
    PartState st;
    auto r = fetch(*c, "model.safetensors", st);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.status().code(), ErrorCode::Network);
    EXPECT_TRUE(isCertificateFailure(r.status())) << r.status().message();
    EXPECT_NE(r.status().message().find("TLS"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("certificate"), std::string::npos);
    EXPECT_TRUE(m_notes.empty()) << "a certificate failure is not retried";
    EXPECT_FALSE(fs::exists(m_dest / "model.safetensors"));
}

TEST(FileDownloadPolicy, PlainHttpToANonLoopbackHostIsRefused) {
    TempDir tmp;
    HubEndpoint e;
    e.base = "http://hub.example.com";
    HttpClient c(e);
    RepoFile f;
    f.path = "config.json";
    f.size = 10;
    f.blobId = std::string(40, 'a');
    PartState st;
    auto r = downloadFile(c, kRepo, std::string(40, 'c'), f, tmp.path().string(), st);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.status().code(), ErrorCode::InvalidArgument);
    EXPECT_NE(r.status().message().find("loopback"), std::string::npos) << r.status().message();
    EXPECT_FALSE(fs::exists(tmp.path() / "config.json.part"));
}

} // namespace
} // namespace coli::hub
