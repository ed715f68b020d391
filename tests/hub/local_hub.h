#pragma once
// Test helper: runs tests/hub/hub_server.py (the local stand-in for the Hub) as a child process
// for the life of a LocalHub, and builds fixture repo folders. Header-only; tests only.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace hub_test {

namespace fs = std::filesystem;

// A fresh folder under the build tree, removed at destruction.
struct TempDir {
    fs::path root;
    explicit TempDir(const std::string& name) {
        root = fs::path(COLI_BINARY_DIR) / "tests" / "hub" / "tmp" /
               (name + "-" + std::to_string(::getpid()));
        fs::remove_all(root);
        fs::create_directories(root);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(root, ec);
    }
    std::string file(const std::string& rel) const { return (root / rel).string(); }
};

inline void writeFile(const fs::path& p, const std::string& bytes) {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << bytes;
}

inline std::string readFile(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

inline std::string randomBytes(size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::string s(n, '\0');
    for (auto& c : s)
        c = char(rng());
    return s;
}

// The shipped tiny model's config.json (a supported MixtralForCausalLM).
inline std::string supportedConfig() {
    return readFile(fs::path(COLI_SOURCE_DIR) / "resources/models/colibri-moe-tiny/config.json");
}

class LocalHub {
public:
    // args: hub_server.py arguments ("--repo", "o/n=DIR", ...). Starts it and waits for its
    // "HUB <endpoint> CDN <origin>" line.
    explicit LocalHub(const std::vector<std::string>& args) {
        int out[2];
        if (::pipe(out) != 0) return;
        m_pid = ::fork();
        if (m_pid == 0) {
            ::dup2(out[1], 1);
            ::close(out[0]);
            ::close(out[1]);
            std::vector<std::string> all = {"/usr/bin/python3", std::string(COLI_SOURCE_DIR) +
                                                                    "/tests/hub/hub_server.py"};
            all.insert(all.end(), args.begin(), args.end());
            std::vector<char*> argv;
            for (auto& a : all)
                argv.push_back(a.data());
            argv.push_back(nullptr);
            ::execv(argv[0], argv.data());
            ::_exit(127);
        }
        ::close(out[1]);
        FILE* f = ::fdopen(out[0], "r");
        char line[512] = {};
        if (f && std::fgets(line, sizeof line, f)) {
            char hub[256] = {}, cdn[256] = {};
            if (std::sscanf(line, "HUB %255s CDN %255s", hub, cdn) == 2) {
                m_endpoint = hub;
                m_cdn = cdn;
            }
        }
        if (f) std::fclose(f);
    }
    ~LocalHub() {
        if (m_pid > 0) {
            ::kill(m_pid, SIGTERM);
            ::waitpid(m_pid, nullptr, 0);
        }
    }
    LocalHub(const LocalHub&) = delete;
    LocalHub& operator=(const LocalHub&) = delete;
    bool ok() const { return !m_endpoint.empty(); }
    const std::string& endpoint() const { return m_endpoint; }
    const std::string& cdn() const { return m_cdn; }

private:
    pid_t m_pid = -1;
    std::string m_endpoint, m_cdn;
};

} // namespace hub_test
