#pragma once
// Helpers shared by the mirror staging tests: a colibri container with several expert shards
// made from a fixture, whole-file reads and writes.
#include "st_writer.h" // st_test::TempDir

#include "convert/converter.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace mirror_test {

inline std::string fixture(const std::string& family) {
    return std::string(COLI_FIXTURE_DIR) + "/" + family;
}

// The qwen3moe fixture converted with 64 KiB shards: several shards hold experts, the first one
// only dense tensors.
inline void makeContainer(const std::string& dst) {
    coli::convert::ConvertOptions opt;
    opt.plan.maxShardBytes = 64 << 10;
    auto r = coli::convert::convertCheckpoint(fixture("qwen3moe"), dst, opt);
    ASSERT_TRUE(r.isOk()) << r.status().message();
}

inline std::string readAll(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

inline void writeAll(const std::string& path, const std::string& bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), std::streamsize(bytes.size()));
}

inline bool exists(const std::string& path) {
    std::error_code ec;
    return std::filesystem::exists(path, ec);
}

} // namespace mirror_test
