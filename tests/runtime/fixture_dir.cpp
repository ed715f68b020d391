#include "fixture_dir.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <unistd.h>

namespace fs = std::filesystem;

namespace coli::test {

std::string fixturePath(const std::string& name) {
    return std::string(COLI_FIXTURE_DIR) + "/" + name;
}

std::string copyFixture(const std::string& name, const std::string& tag) {
    const fs::path dst = fs::path(COLI_BINARY_DIR) / "test-tmp" /
                         ("runtime-" + std::to_string(getpid()) + "-" + tag + "-" + name);
    fs::remove_all(dst);
    fs::create_directories(dst.parent_path());
    fs::copy(fixturePath(name), dst, fs::copy_options::recursive);
    return dst.string();
}

nlohmann::json readJson(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return nlohmann::json::parse(ss.str());
}

void writeText(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
}

const LoadedModel* sharedModel(const std::string& name, std::string* error) {
    static std::mutex mu;
    static std::map<std::string, std::unique_ptr<LoadedModel>> cache;
    std::lock_guard lock(mu);
    auto it = cache.find(name);
    if (it != cache.end()) return it->second.get();
    auto lm = LoadedModel::load(fixturePath(name), ModelLoadOptions{});
    if (!lm) {
        if (error) *error = lm.status().toString();
        return nullptr;
    }
    return (cache[name] = std::move(lm.value())).get();
}

} // namespace coli::test
