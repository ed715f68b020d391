#pragma once
// Test helper: a tiny safetensors writer (F32 only) to build broken checkpoints, and a reader
// that copies a fixture checkpoint's tensors (as f32) so a test can drop or reshape one.
#include "io/safetensors.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace coli::test {

struct TensorData {
    std::string name;
    std::vector<int64_t> shape;
    std::vector<float> data;
};

// Writes `tensors` to `path` in the safetensors format (8-byte LE header length, JSON, data).
inline void writeSafetensors(const std::string& path, const std::vector<TensorData>& tensors) {
    nlohmann::json header = nlohmann::json::object();
    uint64_t offset = 0;
    for (const TensorData& t : tensors) {
        const uint64_t bytes = t.data.size() * sizeof(float);
        header[t.name] = {
            {"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
        offset += bytes;
    }
    std::string h = header.dump();
    while (h.size() % 8)
        h += ' ';
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    uint64_t n = h.size();
    unsigned char len[8];
    for (int i = 0; i < 8; ++i)
        len[i] = static_cast<unsigned char>(n >> (8 * i));
    out.write(reinterpret_cast<const char*>(len), 8);
    out.write(h.data(), std::streamsize(h.size()));
    for (const TensorData& t : tensors)
        out.write(reinterpret_cast<const char*>(t.data.data()),
                  std::streamsize(t.data.size() * sizeof(float)));
}

// All tensors of the checkpoint in `dir`, converted to f32. Empty on failure.
inline std::vector<TensorData> readAll(const std::string& dir) {
    std::vector<TensorData> out;
    auto ck = Checkpoint::open(dir);
    if (!ck) return out;
    for (const TensorInfo* t : (*ck)->tensors()) {
        TensorData d{t->name, t->shape, {}};
        if (!(*ck)->readF32(t->name, d.data).isOk()) return {};
        out.push_back(std::move(d));
    }
    return out;
}

// A fresh directory under the build tree holding the fixture's config.json and the given
// tensors as one model.safetensors.
inline std::string makeCheckpoint(const std::string& testName, const std::string& fixture,
                                  const std::vector<TensorData>& tensors) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(COLI_BINARY_DIR) / "test_model_tmp" / testName;
    fs::remove_all(dir);
    fs::create_directories(dir);
    fs::copy_file(fs::path(COLI_FIXTURE_DIR) / fixture / "config.json", dir / "config.json");
    writeSafetensors((dir / "model.safetensors").string(), tensors);
    return dir.string();
}

} // namespace coli::test
