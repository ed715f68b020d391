// A Hugging Face checkpoint: the index, each shard, then the checkpoint as the engine opens it and
// the tensors config.json needs.
#include "core/file_text.h"
#include "doctor/doctor_context.h"
#include "io/safetensors.h"
#include "model/weights.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <map>

namespace coli::doctor::detail {
namespace {

namespace fs = std::filesystem;
constexpr const char* kIndex = "model.safetensors.index.json";

// shard file -> the first tensor the index maps to it; false (with a finding) when the index
// cannot be read.
bool readIndex(Context& c, std::map<std::string, std::string>* shards) {
    if (c.isBroken(kIndex)) return false;
    auto text = readTextFile(c.path(kIndex));
    const std::string action = c.replaceAction(kIndex);
    if (!text) {
        c.add(Severity::Error, kIndex, c.bare(text.status().message(), kIndex), action);
        return false;
    }
    const nlohmann::json root = nlohmann::json::parse(text.value(), nullptr, false);
    if (root.is_discarded()) {
        c.add(Severity::Error, kIndex, "not valid JSON", action);
        return false;
    }
    if (!root.is_object() || !root.contains("weight_map") || !root["weight_map"].is_object() ||
        root["weight_map"].empty()) {
        c.add(Severity::Error, kIndex, "no 'weight_map' object naming the shards", action);
        return false;
    }
    for (auto it = root["weight_map"].begin(); it != root["weight_map"].end(); ++it) {
        const std::string shard = it.value().is_string() ? it.value().get<std::string>() : "";
        const fs::path sp(shard);
        const bool safe = !shard.empty() && sp.is_relative() &&
                          std::find(sp.begin(), sp.end(), fs::path("..")) == sp.end();
        if (!safe) {
            c.add(Severity::Error, kIndex,
                  "tensor '" + it.key() + "' maps to " +
                      (it.value().is_string() ? "'" + shard + "', a path outside the folder"
                                              : std::string("a value that is not a file name")),
                  action);
            return false;
        }
        shards->emplace(shard, it.key()); // keeps the first tensor (keys are sorted)
    }
    return true;
}

} // namespace

void checkCheckpoint(Context& c) {
    std::map<std::string, std::string> shards; // file -> a tensor the index maps to it
    std::error_code ec;
    const bool indexed = fs::exists(c.path(kIndex), ec) || fs::is_symlink(c.path(kIndex), ec);
    if (indexed) {
        if (!readIndex(c, &shards)) return;
    } else {
        for (const auto& e : fs::directory_iterator(c.dir, ec))
            if (e.path().extension() == ".safetensors")
                shards.emplace(e.path().filename().string(), "");
        if (shards.empty()) {
            c.add(Severity::Error, "",
                  "no weights: no *.safetensors file and no " + std::string(kIndex),
                  c.replaceAction("model.safetensors"));
            return;
        }
    }
    bool allGood = true;
    for (const auto& [file, tensor] : shards) {
        c.weightFiles.push_back(file);
        ++c.report.weightFiles;
        if (c.cancelled()) return;
        const std::string listedBy =
            indexed ? std::string(kIndex) + " (e.g. for tensor '" + tensor + "')" : "the folder";
        allGood = checkShard(c, file, listedBy, std::nullopt, "") != nullptr && allGood;
    }
    if (!allGood) return;
    // Across shards, as the engine opens them: a tensor in two shards, or not in the shard the
    // index names.
    c.step("checking", "tensors");
    auto ck = Checkpoint::open(c.dir);
    const std::string where = indexed ? kIndex : "";
    if (!ck) {
        c.add(Severity::Error, where, c.bare(ck.status().message(), where),
              c.replaceAction(where.empty() ? shards.begin()->first : where));
        return;
    }
    if (!c.config) return;
    Status fits = checkCheckpointFits(*ck.value(), *c.config);
    if (!fits.isOk())
        c.add(Severity::Error, "config.json",
              "the weights do not match config.json: " + c.bare(fits.message(), "config.json"),
              "download the model again (config.json and the shards from one revision); if the "
              "publisher's files are like this, the model cannot be run");
}

} // namespace coli::doctor::detail
