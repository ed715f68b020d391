#include "hub/download_receipt.h"

#include "convert/file_layer.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

namespace coli::hub {

namespace {

using nlohmann::json;

bool isHex(const std::string& s, size_t n) {
    return s.size() == n && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

} // namespace

Result<DownloadReceipt> readDownloadReceipt(const std::string& dir) {
    const std::string path = dir + "/" + kDownloadReceiptName;
    std::ifstream in(path, std::ios::binary);
    if (!in) return Status(ErrorCode::NotFound, path + ": no download receipt");
    std::stringstream ss;
    ss << in.rdbuf();
    const auto bad = [&](const std::string& why) {
        return Status(ErrorCode::Malformed, path + ": " + why);
    };
    json j = json::parse(ss.str(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
    if (j.value("format", "") != "colibri-download")
        return bad("\"format\" is not colibri-download");
    if (!j.contains("version") || !j["version"].is_number_integer() || j["version"] != 1)
        return bad("unsupported \"version\" (this build reads version 1)");
    DownloadReceipt r;
    for (const char* key : {"endpoint", "repo", "revision", "commit"})
        if (!j.contains(key) || !j[key].is_string())
            return bad(std::string("\"") + key + "\" missing");
    r.endpoint = j["endpoint"];
    r.repo = j["repo"];
    r.revision = j["revision"];
    r.commit = j["commit"];
    if (!j.contains("completed_ms") || !j["completed_ms"].is_number_integer())
        return bad("\"completed_ms\" missing");
    r.completedMs = j["completed_ms"];
    if (!j.contains("files") || !j["files"].is_array()) return bad("\"files\" is not an array");
    for (size_t i = 0; i < j["files"].size(); ++i) {
        const json& f = j["files"][i];
        const std::string where = "files[" + std::to_string(i) + "]";
        if (!f.is_object() || !f.contains("path") || !f["path"].is_string() ||
            !f.contains("size") || !f["size"].is_number_unsigned() || !f.contains("blob_id") ||
            !f["blob_id"].is_string())
            return bad(where + ": needs path, size and blob_id");
        RepoFile rf;
        rf.path = f["path"];
        rf.size = f["size"];
        rf.blobId = f["blob_id"];
        if (rf.path.empty() || rf.path[0] == '/' || rf.path.find("..") != std::string::npos)
            return bad(where + ": path '" + rf.path + "' is not a relative path inside the folder");
        if (!isHex(rf.blobId, 40)) return bad(where + ": blob_id is not 40 hex digits");
        if (f.contains("lfs_sha256") && !f["lfs_sha256"].is_null()) {
            if (!f["lfs_sha256"].is_string() || !isHex(f["lfs_sha256"], 64))
                return bad(where + ": lfs_sha256 is not 64 hex digits");
            rf.lfsSha256 = f["lfs_sha256"];
        }
        r.files.push_back(std::move(rf));
    }
    return r;
}

Status writeDownloadReceipt(const std::string& dir, const DownloadReceipt& r) {
    json files = json::array();
    for (const RepoFile& f : r.files)
        files.push_back({{"path", f.path},
                         {"size", f.size},
                         {"blob_id", f.blobId},
                         {"lfs_sha256", f.isLfs() ? json(f.lfsSha256) : json(nullptr)}});
    const json j = {{"format", "colibri-download"},  {"version", 1},
                    {"endpoint", r.endpoint},        {"repo", r.repo},
                    {"revision", r.revision},        {"commit", r.commit},
                    {"completed_ms", r.completedMs}, {"files", files}};
    const std::string text = j.dump(1) + "\n";
    return convert::writeFileAtomically(dir + "/" + kDownloadReceiptName, text);
}

} // namespace coli::hub
