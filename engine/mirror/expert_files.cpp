#include "mirror/expert_files.h"

#include "convert/manifest.h"
#include "io/safetensors.h"
#include "model/config.h"
#include "model/weights.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <system_error>

namespace coli::mirror {

namespace fs = std::filesystem;

namespace {

// path (relative) -> (layer, expert) -> bytes
using PieceMap = std::map<std::string, std::map<std::pair<int, int>, uint64_t>>;

Result<ModelExpertFiles> collect(const std::string& dir, bool container, const PieceMap& pieces) {
    ModelExpertFiles out;
    out.dir = dir;
    out.container = container;
    for (const auto& [path, experts] : pieces) {
        ExpertFile f;
        f.path = path;
        std::error_code ec;
        const std::string full = (fs::path(dir) / path).string();
        f.size = uint64_t(fs::file_size(full, ec));
        if (ec)
            return Status(ErrorCode::Io, full + ": cannot read the file's size: " + ec.message());
        for (const auto& [id, bytes] : experts) {
            f.pieces.push_back({id.first, id.second, bytes});
            f.expertBytes += bytes;
            out.expertBytes[id] += bytes;
        }
        out.files.push_back(std::move(f));
    }
    if (out.files.empty())
        return Status(ErrorCode::Malformed,
                      dir + ": the model has no routed expert, so there is nothing to mirror");
    return out;
}

Result<ModelExpertFiles> fromContainer(const std::string& dir) {
    auto box = convert::openContainer(dir);
    if (!box) return box.status();
    PieceMap pieces;
    for (const convert::ExpertEntry& e : box.value().experts)
        pieces[e.file][{e.layer, e.expert}] += e.length;
    return collect(dir, true, pieces);
}

Result<ModelExpertFiles> fromCheckpoint(const std::string& dir) {
    auto cfg = loadConfig(dir);
    if (!cfg) return cfg.status();
    auto ckpt = Checkpoint::open(dir);
    if (!ckpt) return ckpt.status();
    const Checkpoint& ck = *ckpt.value();
    COLI_RETURN_IF_ERROR(checkPlausibleSizes(ck, cfg.value()));
    const ModelConfig& c = cfg.value();
    PieceMap pieces;
    for (int layer = 0; layer < c.nLayers; ++layer) {
        if (size_t(layer) >= c.sparseLayer.size() || !c.sparseLayer[size_t(layer)]) continue;
        for (int expert = 0; expert < c.nExperts; ++expert) {
            auto where = locateExpert(ck, c, layer, expert);
            if (!where) return where.status();
            for (const ExpertTensorRange& r : where.value()) {
                const std::string& shard = ck.shardPaths()[size_t(r.tensor->shard)];
                const std::string rel = fs::path(shard).lexically_relative(dir).generic_string();
                pieces[rel][{layer, expert}] += uint64_t(r.count) * dtypeSize(r.tensor->dtype);
            }
        }
    }
    return collect(dir, false, pieces);
}

} // namespace

Result<ModelExpertFiles> findExpertFiles(const std::string& modelDir) {
    if (convert::isContainerDir(modelDir)) return fromContainer(modelDir);
    return fromCheckpoint(modelDir);
}

} // namespace coli::mirror
