#include "mirror/mirror_receipt.h"

#include "convert/file_layer.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

namespace coli::mirror {

using nlohmann::json;

Result<MirrorReceipt> readMirrorReceipt(const std::string& mirrorDir) {
    const std::string path = mirrorDir + "/" + kMirrorReceiptName;
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return Status(ErrorCode::NotFound, path + ": no mirror receipt (not staged, or staging "
                                                  "did not finish)");
    std::stringstream ss;
    ss << in.rdbuf();
    const auto bad = [&](const std::string& why) {
        return Status(ErrorCode::Malformed, path + ": " + why);
    };
    json j = json::parse(ss.str(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
    if (j.value("format", "") != "colibri-mirror") return bad("\"format\" is not colibri-mirror");
    if (!j.contains("version") || !j["version"].is_number_integer() || j["version"] != 1)
        return bad("unsupported \"version\" (this build reads version 1)");
    if (!j.contains("primary") || !j["primary"].is_string()) return bad("\"primary\" missing");
    if (!j.contains("created_ms") || !j["created_ms"].is_number_integer())
        return bad("\"created_ms\" missing");
    if (!j.contains("files") || !j["files"].is_array()) return bad("\"files\" is not an array");
    MirrorReceipt r;
    r.primary = j["primary"];
    r.createdMs = j["created_ms"];
    for (size_t i = 0; i < j["files"].size(); ++i) {
        const json& f = j["files"][i];
        const std::string where = "files[" + std::to_string(i) + "]";
        if (!f.is_object() || !f.contains("path") || !f["path"].is_string() ||
            !f.contains("size") || !f["size"].is_number_unsigned() || !f.contains("sha256") ||
            !f["sha256"].is_string())
            return bad(where + ": needs path, size and sha256");
        MirrorFile mf{f["path"], f["size"], f["sha256"]};
        if (mf.path.empty() || mf.path[0] == '/' || mf.path.find("..") != std::string::npos)
            return bad(where + ": path '" + mf.path + "' is not a relative path inside the folder");
        if (mf.sha256.size() != 64 ||
            mf.sha256.find_first_not_of("0123456789abcdef") != std::string::npos)
            return bad(where + ": sha256 is not 64 lower-case hex digits");
        r.files.push_back(std::move(mf));
    }
    return r;
}

Status writeMirrorReceipt(const std::string& mirrorDir, const MirrorReceipt& r) {
    json files = json::array();
    for (const MirrorFile& f : r.files)
        files.push_back({{"path", f.path}, {"size", f.size}, {"sha256", f.sha256}});
    const json j = {{"format", "colibri-mirror"},
                    {"version", 1},
                    {"primary", r.primary},
                    {"created_ms", r.createdMs},
                    {"files", files}};
    const std::string text = j.dump(1) + "\n";
    return convert::writeFileAtomically(mirrorDir + "/" + kMirrorReceiptName, text);
}

} // namespace coli::mirror
