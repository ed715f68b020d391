#include "core/file_text.h"
#include "core/regular_file.h"
#include "io/dtype.h"
#include "io/file_io.h"
#include "io/safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <map>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

namespace coli {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kIndexName = "model.safetensors.index.json";
constexpr uint64_t kMaxIndexBytes = uint64_t(100) << 20;

// No directory entry of that name at all (a dangling symbolic link or a loop is an entry: opening
// it names the problem).
bool absent(const fs::path& p) {
    struct stat st {};
    return ::lstat(p.c_str(), &st) != 0 && errno == ENOENT;
}

// A shard name from the index must stay inside the checkpoint directory.
bool safeShardName(const std::string& s) {
    if (s.empty() || s.front() == '/') return false;
    for (const auto& part : fs::path(s)) {
        if (part == "..") return false;
    }
    return true;
}

} // namespace

Result<std::unique_ptr<Checkpoint>> Checkpoint::open(const std::string& dir) {
    std::unique_ptr<Checkpoint> ck(new Checkpoint());
    ck->m_dir = dir;
    std::error_code ec;
    COLI_RETURN_IF_ERROR(symbolicLinkProblem(dir));
    if (!fs::is_directory(dir, ec)) {
        return {ErrorCode::NotFound, dir + ": not a directory (expected a checkpoint folder)"};
    }

    const std::string indexPath = (fs::path(dir) / kIndexName).string();
    std::vector<std::string> shardNames;
    std::map<std::string, std::string> weightMap; // tensor -> shard file name (index only)
    if (!absent(indexPath)) {
        auto text = readTextFile(indexPath, kMaxIndexBytes);
        if (!text) return text.status();
        json root;
        try {
            root = json::parse(text.value());
        } catch (const json::exception& e) {
            return {ErrorCode::Malformed, indexPath + ": not valid JSON: " + e.what()};
        }
        if (!root.is_object() || !root.contains("weight_map") || !root["weight_map"].is_object()) {
            return {ErrorCode::Malformed, indexPath + ": missing the 'weight_map' object"};
        }
        std::set<std::string> names;
        for (auto it = root["weight_map"].begin(); it != root["weight_map"].end(); ++it) {
            if (!it.value().is_string()) {
                return {ErrorCode::Malformed, indexPath + ": weight_map entry for tensor '" +
                                                  it.key() + "' is not a string"};
            }
            const std::string shard = it.value().get<std::string>();
            if (!safeShardName(shard)) {
                return {ErrorCode::Malformed, indexPath + ": tensor '" + it.key() +
                                                  "' maps to shard '" + shard +
                                                  "', a path outside the checkpoint folder"};
            }
            weightMap.emplace(it.key(), shard);
            names.insert(shard);
        }
        if (names.empty()) return {ErrorCode::Malformed, indexPath + ": weight_map is empty"};
        shardNames.assign(names.begin(), names.end());
        // Every shard must be present before any is opened: a half-downloaded checkpoint fails
        // here, naming what is missing, not midway through loading.
        for (const std::string& s : shardNames) {
            const fs::path p = fs::path(dir) / s;
            if (absent(p)) {
                std::string firstTensor;
                for (const auto& [t, sh] : weightMap) {
                    if (sh == s) {
                        firstTensor = t;
                        break;
                    }
                }
                return {ErrorCode::NotFound, p.string() + ": shard '" + s + "' listed in " +
                                                 indexPath + " (e.g. for tensor '" + firstTensor +
                                                 "') does not exist"};
            }
        }
    } else {
        // Every *.safetensors entry but a folder: a named pipe, device or broken link of that
        // name is refused by name when opened, not skipped in silence.
        for (const auto& e : fs::directory_iterator(dir, ec)) {
            std::error_code typeEc;
            if (e.path().extension() == ".safetensors" && !e.is_directory(typeEc))
                shardNames.push_back(e.path().filename().string());
        }
        if (ec) return {ErrorCode::Io, dir + ": cannot list directory: " + ec.message()};
        std::sort(shardNames.begin(), shardNames.end());
        if (shardNames.empty()) {
            return {ErrorCode::NotFound,
                    dir + ": no *.safetensors file and no " + std::string(kIndexName)};
        }
    }

    for (size_t i = 0; i < shardNames.size(); ++i) {
        const std::string p = (fs::path(dir) / shardNames[i]).string();
        auto f = SafetensorsFile::open(p);
        if (!f) return f.status();
        for (TensorInfo& t : f.value()->m_tensors)
            t.shard = int(i);
        ck->m_shardPaths.push_back(p);
        ck->m_files.push_back(std::move(f.value()));
    }
    for (const auto& file : ck->m_files) {
        for (const TensorInfo& t : file->tensors()) {
            auto [it, inserted] = ck->m_byName.emplace(t.name, &t);
            if (!inserted) {
                return {ErrorCode::Malformed, dir + ": tensor '" + t.name + "' is in two shards: " +
                                                  ck->m_shardPaths[size_t(it->second->shard)] +
                                                  " and " + file->path()};
            }
        }
    }
    for (const auto& [name, shard] : weightMap) {
        auto it = ck->m_byName.find(name);
        const std::string p = (fs::path(dir) / shard).string();
        if (it == ck->m_byName.end()) {
            return {ErrorCode::Malformed, indexPath + ": tensor '" + name +
                                              "' is listed in shard '" + shard +
                                              "' but that shard does not hold it"};
        }
        if (ck->m_shardPaths[size_t(it->second->shard)] != p) {
            return {ErrorCode::Malformed, indexPath + ": tensor '" + name +
                                              "' is listed in shard '" + shard + "' but is in " +
                                              ck->m_shardPaths[size_t(it->second->shard)]};
        }
    }
    return ck;
}

const TensorInfo* Checkpoint::find(const std::string& name) const {
    auto it = m_byName.find(name);
    return it == m_byName.end() ? nullptr : it->second;
}

std::vector<const TensorInfo*> Checkpoint::tensors() const {
    std::vector<const TensorInfo*> out;
    out.reserve(m_byName.size());
    for (const auto& [name, t] : m_byName)
        out.push_back(t);
    std::sort(out.begin(), out.end(),
              [](const TensorInfo* a, const TensorInfo* b) { return a->name < b->name; });
    return out;
}

uint64_t Checkpoint::totalBytes() const {
    uint64_t n = 0;
    for (const auto& [name, t] : m_byName)
        n += t->nbytes;
    return n;
}

Status Checkpoint::readRaw(const TensorInfo& t, uint64_t offset, uint64_t nbytes, void* dst) const {
    if (t.shard < 0 || size_t(t.shard) >= m_files.size()) {
        return {ErrorCode::InvalidArgument, m_dir + ": tensor '" + t.name + "': shard index " +
                                                std::to_string(t.shard) + " out of range"};
    }
    return m_files[size_t(t.shard)]->readRaw(t, offset, nbytes, dst);
}

Status Checkpoint::readF32(const std::string& name, std::vector<float>& out) const {
    const TensorInfo* t = find(name);
    if (!t) return {ErrorCode::NotFound, m_dir + ": no tensor '" + name + "'"};
    out.resize(size_t(t->numel()));
    return readF32Range(name, 0, t->numel(), out.data());
}

Status Checkpoint::readF32Range(const std::string& name, int64_t first, int64_t count,
                                float* dst) const {
    const TensorInfo* t = find(name);
    if (!t) return {ErrorCode::NotFound, m_dir + ": no tensor '" + name + "'"};
    const std::string& file = m_shardPaths[size_t(t->shard)];
    const int64_t n = t->numel();
    if (first < 0 || count < 0 || first > n || count > n - first) {
        return {ErrorCode::InvalidArgument,
                file + ": tensor '" + name + "': element range [" + std::to_string(first) + ", " +
                    std::to_string(first) + "+" + std::to_string(count) + ") outside its " +
                    std::to_string(n) + " elements"};
    }
    const uint64_t es = dtypeSize(t->dtype);
    switch (t->dtype) {
    case DType::F32:
        return readRaw(*t, uint64_t(first) * es, uint64_t(count) * es, dst);
    case DType::F16:
    case DType::BF16: {
        // Convert through a bounded staging buffer so a huge tensor never needs a second copy.
        constexpr int64_t kChunk = int64_t(1) << 16;
        std::vector<uint16_t> buf(size_t(std::min(count, kChunk)));
        for (int64_t done = 0; done < count;) {
            const int64_t m = std::min(count - done, kChunk);
            COLI_RETURN_IF_ERROR(
                readRaw(*t, uint64_t(first + done) * es, uint64_t(m) * es, buf.data()));
            if (t->dtype == DType::F16)
                f16ToF32(buf.data(), dst + done, size_t(m));
            else
                bf16ToF32(buf.data(), dst + done, size_t(m));
            done += m;
        }
        return Status::ok();
    }
    default:
        return {ErrorCode::Unsupported, file + ": tensor '" + name + "': dtype " +
                                            dtypeName(t->dtype) + " cannot be read as f32"};
    }
}

} // namespace coli
