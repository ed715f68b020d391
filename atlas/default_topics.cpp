#include "atlas/default_topics.h"

#include "storage/model_identity.h"

#include <filesystem>

namespace coli::atlas {

namespace fs = std::filesystem;

namespace {

std::string installedData(const std::string& binDir, const std::string& sub) {
    return (fs::path(binDir) / ".." / "share" / "colibri" / sub).lexically_normal().string();
}

} // namespace

std::string topicsDir(const std::string& binDir) {
    const std::string installed = installedData(binDir, "topics");
    std::error_code ec;
    if (fs::is_regular_file(fs::path(installed) / "general.json", ec)) return installed;
    return COLI_TOPICS_SOURCE_DIR;
}

std::string shippedModelDir(const std::string& binDir) {
    const std::string installed =
        installedData(binDir, std::string("models/") + COLI_SHIPPED_MODEL_NAME);
    std::error_code ec;
    if (fs::is_regular_file(fs::path(installed) / "config.json", ec)) return installed;
    return COLI_SHIPPED_MODEL_SOURCE_DIR;
}

Result<std::string> defaultTopicFile(const std::string& binDir, const std::string& modelIdentity,
                                     storage::FileHashCache* cache) {
    const fs::path dir = topicsDir(binDir);
    auto shipped = storage::modelIdentity(shippedModelDir(binDir), cache);
    if (!shipped) return shipped.status();
    return (dir / (*shipped == modelIdentity ? "default-model.json" : "general.json")).string();
}

} // namespace coli::atlas
