#pragma once
// Helpers shared by the converter's tests: fixture paths, whole-file reads, cosine similarity.
#include "st_writer.h" // st_test::TempDir

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace convert_test {

inline const char* const kFamilies[] = {"olmoe",      "qwen2moe",   "qwen3moe",  "mixtral",
                                        "granitemoe", "deepseekv2", "deepseekv3"};

inline std::string fixture(const std::string& family) {
    return std::string(COLI_FIXTURE_DIR) + "/" + family;
}

inline std::vector<uint8_t> readFile(const std::filesystem::path& p) {
    std::ifstream f(p, std::ios::binary);
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)),
                                std::istreambuf_iterator<char>());
}

inline std::vector<uint8_t> readRange(const std::filesystem::path& p, uint64_t off, uint64_t n) {
    std::ifstream f(p, std::ios::binary);
    f.seekg(std::streamoff(off));
    std::vector<uint8_t> b(n);
    f.read(reinterpret_cast<char*>(b.data()), std::streamsize(n));
    if (uint64_t(f.gcount()) != n) b.clear();
    return b;
}

// name -> bytes of every regular file directly in dir.
inline std::map<std::string, std::vector<uint8_t>> allFiles(const std::filesystem::path& dir) {
    std::map<std::string, std::vector<uint8_t>> m;
    for (const auto& e : std::filesystem::directory_iterator(dir))
        if (e.is_regular_file()) m[e.path().filename().string()] = readFile(e.path());
    return m;
}

// cos(a, b) in double; 1 when both are all zero.
inline double cosine(const float* a, const float* b, size_t n) {
    double ab = 0, aa = 0, bb = 0;
    for (size_t i = 0; i < n; ++i) {
        ab += double(a[i]) * b[i];
        aa += double(a[i]) * a[i];
        bb += double(b[i]) * b[i];
    }
    if (aa == 0 && bb == 0) return 1;
    return ab / std::sqrt(aa * bb);
}

inline void copyDir(const std::filesystem::path& from, const std::filesystem::path& to) {
    std::filesystem::create_directories(to);
    for (const auto& e : std::filesystem::directory_iterator(from))
        std::filesystem::copy_file(e.path(), to / e.path().filename(),
                                   std::filesystem::copy_options::overwrite_existing);
}

} // namespace convert_test
