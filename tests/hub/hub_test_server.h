#pragma once
// The test rig for everything that talks to the Hub: starts tests/hub/hub_server.py (the local
// Hub, docs/hub.md "Testing") as a child process on 127.0.0.1, reads its "HUB <endpoint> CDN
// <origin>" line, and stops it (SIGTERM, then SIGKILL) when destroyed; the child also dies with
// the test process (PR_SET_PDEATHSIG). Plus small helpers to lay out fixture repos and to make the
// HTTPS test certificates (tests/hub/make_certs.sh).
// Header-only so that every test of tests/hub can use it. Thread-safety: one object per test.
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <poll.h>
#include <random>
#include <string>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>
#include <vector>

#ifndef COLI_PYTHON
#define COLI_PYTHON "/usr/bin/python3"
#endif

namespace coli::hub_test {

// A fresh folder under the system's temp dir, removed with its contents on destruction.
class TempDir {
public:
    TempDir() {
        std::random_device rd;
        const auto base = std::filesystem::temp_directory_path();
        for (;;) {
            m_path = base / ("coli-hub-test-" + std::to_string(rd()) + std::to_string(rd()));
            if (std::filesystem::create_directory(m_path)) break;
        }
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(m_path, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::filesystem::path& path() const { return m_path; }

private:
    std::filesystem::path m_path;
};

inline void writeBytes(const std::filesystem::path& p, const std::string& bytes) {
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

inline std::string readBytes(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// `n` pseudo-random bytes from `seed` (reproducible fixtures).
inline std::string randomBytes(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::string s(n, '\0');
    for (auto& c : s)
        c = char(rng() & 0xFF);
    return s;
}

// Runs make_certs.sh into `dir` (ca.pem, server.pem, server.key). Returns "" on success, else
// why it failed.
inline std::string makeCerts(const std::filesystem::path& dir) {
    const std::string cmd =
        "sh '" + std::string(COLI_SOURCE_DIR) + "/tests/hub/make_certs.sh' '" + dir.string() + "'";
    const int rc = std::system(cmd.c_str());
    return rc == 0 ? std::string() : "make_certs.sh failed (status " + std::to_string(rc) + ")";
}

struct HubServerOptions {
    std::vector<std::pair<std::string, std::string>> repos; // "owner/name", folder
    std::string token;                                      // the token gated repos accept
    std::string tlsCert, tlsKey;                            // both set: HTTPS
    std::vector<std::string> extraArgs;                     // e.g. {"--throttle", "1000000"}
};

class HubServer {
public:
    // Starts the server and waits (up to 20 s) for its address line. On failure returns null and
    // says why in *error.
    static std::unique_ptr<HubServer> start(const HubServerOptions& o, std::string* error) {
        std::vector<std::string> args = {COLI_PYTHON,
                                         std::string(COLI_SOURCE_DIR) + "/tests/hub/hub_server.py"};
        for (const auto& [id, folder] : o.repos) {
            args.push_back("--repo");
            args.push_back(id + "=" + folder);
        }
        if (!o.token.empty()) {
            args.push_back("--token");
            args.push_back(o.token);
        }
        if (!o.tlsCert.empty()) {
            args.push_back("--tls");
            args.push_back(o.tlsCert);
            args.push_back(o.tlsKey);
        }
        args.insert(args.end(), o.extraArgs.begin(), o.extraArgs.end());
        int fds[2];
        if (::pipe(fds) != 0) {
            *error = "pipe failed";
            return nullptr;
        }
        const pid_t parent = ::getpid();
        const pid_t pid = ::fork();
        if (pid < 0) {
            *error = "fork failed";
            return nullptr;
        }
        if (pid == 0) {
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (::getppid() != parent) ::_exit(127);
            ::dup2(fds[1], 1);
            ::close(fds[0]);
            ::close(fds[1]);
            std::vector<char*> argv;
            for (auto& a : args)
                argv.push_back(a.data());
            argv.push_back(nullptr);
            ::execv(argv[0], argv.data());
            ::_exit(127);
        }
        ::close(fds[1]);
        std::unique_ptr<HubServer> s(new HubServer(pid, fds[0]));
        std::string line;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (line.find('\n') == std::string::npos) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            pollfd p{fds[0], POLLIN, 0};
            if (left.count() <= 0 || ::poll(&p, 1, int(left.count())) <= 0) {
                *error = "hub_server.py did not print its address within 20 s";
                return nullptr;
            }
            char buf[512];
            const ssize_t got = ::read(fds[0], buf, sizeof buf);
            if (got <= 0) {
                *error = "hub_server.py exited before printing its address (see its stderr)";
                return nullptr;
            }
            line.append(buf, size_t(got));
        }
        char hub[256] = {}, cdn[256] = {};
        if (std::sscanf(line.c_str(), "HUB %255s CDN %255s", hub, cdn) != 2) {
            *error = "unexpected first line from hub_server.py: " + line;
            return nullptr;
        }
        s->m_endpoint = hub;
        s->m_cdn = cdn;
        return s;
    }

    ~HubServer() {
        ::kill(m_pid, SIGTERM);
        int status = 0;
        for (int i = 0; i < 100; ++i) {
            if (::waitpid(m_pid, &status, WNOHANG) == m_pid) {
                m_pid = -1;
                break;
            }
            ::usleep(20000);
        }
        if (m_pid > 0) {
            ::kill(m_pid, SIGKILL);
            ::waitpid(m_pid, &status, 0);
        }
        ::close(m_out);
    }
    HubServer(const HubServer&) = delete;
    HubServer& operator=(const HubServer&) = delete;

    const std::string& endpoint() const { return m_endpoint; } // e.g. "http://127.0.0.1:4711"
    const std::string& cdnOrigin() const { return m_cdn; }

private:
    HubServer(pid_t pid, int out) : m_pid(pid), m_out(out) {}
    pid_t m_pid;
    int m_out;
    std::string m_endpoint, m_cdn;
};

inline std::unique_ptr<HubServer> startHub(const std::vector<std::string>& args,
                                           std::string* error) {
    HubServerOptions o;
    o.extraArgs = args;
    return HubServer::start(o, error);
}

inline bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

#ifdef COLI_SOURCE_DIR
// The shipped tiny model's config.json (a supported MixtralForCausalLM).
inline std::string supportedConfig() {
    return readBytes(std::string(COLI_SOURCE_DIR) +
                     "/resources/models/colibri-moe-tiny/config.json");
}
#endif

} // namespace coli::hub_test
