#include "storage/model_identity.h"

#include "convert/sha256.h"
#include "io/safetensors.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sys/stat.h>

namespace coli::storage {

namespace fs = std::filesystem;

namespace {

bool endsWith(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

} // namespace

std::string identityFromShards(std::vector<SourceShard> shards) {
    std::sort(shards.begin(), shards.end(),
              [](const SourceShard& a, const SourceShard& b) { return a.file < b.file; });
    std::string text = "colibri-model-identity 1\n";
    for (const SourceShard& s : shards)
        text += std::to_string(s.file.size()) + ":" + s.file + " " + std::to_string(s.bytes) + " " +
                s.sha256 + "\n";
    convert::Sha256 h;
    h.update(text.data(), text.size());
    return h.finishHex();
}

Result<std::string> containerIdentity(const convert::Container& manifest) {
    std::vector<SourceShard> shards;
    for (const convert::FileEntry& f : manifest.sourceFiles)
        if (endsWith(f.file, ".safetensors")) shards.push_back({f.file, f.bytes, f.sha256});
    if (shards.empty())
        return {ErrorCode::Malformed, manifest.dir + "/" + convert::kManifestName +
                                          ": source.files lists no *.safetensors file, so the "
                                          "model has no identity"};
    return identityFromShards(std::move(shards));
}

Result<std::string> checkpointIdentity(const std::string& dir, FileHashCache* cache) {
    auto ck = Checkpoint::open(dir);
    if (!ck) return ck.status();
    std::vector<SourceShard> shards;
    for (const std::string& p : ck.value()->shardPaths()) {
        struct stat st {};
        if (::stat(p.c_str(), &st) != 0)
            return {ErrorCode::Io, p + ": stat failed: " + std::strerror(errno)};
        std::error_code ec;
        const fs::path abs = fs::weakly_canonical(fs::path(p), ec);
        FileStamp stamp{ec ? p : abs.string(), uint64_t(st.st_size),
                        int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
        std::optional<std::string> digest;
        if (cache) digest = cache->findHash(stamp);
        if (!digest) {
            auto h = convert::sha256File(p);
            if (!h) return h.status();
            digest = h.value();
            if (cache) cache->rememberHash(stamp, *digest);
        }
        shards.push_back({fs::path(p).filename().string(), stamp.bytes, *digest});
    }
    return identityFromShards(std::move(shards));
}

Result<std::string> modelIdentity(const std::string& dir, FileHashCache* cache) {
    if (convert::isContainerDir(dir)) {
        auto c = convert::openContainer(dir);
        if (!c) return c.status();
        return containerIdentity(c.value());
    }
    return checkpointIdentity(dir, cache);
}

} // namespace coli::storage
