#include "hub/repo_plan.h"

#include "runtime/expert_budget.h" // formatBytes

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <fnmatch.h>
#include <sys/statvfs.h>

namespace coli::hub {

namespace {

namespace fsys = std::filesystem;

bool endsWith(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string gib(uint64_t bytes) {
    return formatBytes(bytes);
}

// The nearest existing folder at or above `dir` (the disk the files will land on).
std::string existingAncestor(const std::string& dir) {
    fsys::path p = fsys::absolute(dir);
    std::error_code ec;
    while (!p.empty() && !fsys::is_directory(p, ec) && p != p.root_path())
        p = p.parent_path();
    return p.empty() ? std::string("/") : p.string();
}

uint64_t sizeIfFile(const fsys::path& p) {
    std::error_code ec;
    const auto n = fsys::file_size(p, ec);
    return ec ? 0 : uint64_t(n);
}

} // namespace

bool matchesIncludes(const std::string& path, const std::vector<std::string>& globs) {
    if (globs.empty()) return true;
    for (std::string g : globs) {
        if (!g.empty() && g.back() == '/') g += '*';
        if (::fnmatch(g.c_str(), path.c_str(), FNM_NOESCAPE) == 0) return true;
    }
    return false;
}

uint64_t defaultSpaceMargin(uint64_t diskBytes) {
    return std::max<uint64_t>(1ull << 30, diskBytes / 20);
}

uint64_t RepoPlan::requiredBytes() const {
    return (totalBytes > presentBytes ? totalBytes - presentBytes : 0) + containerBytes +
           marginBytes;
}

Result<RepoPlan> planRepoDownload(HubApi& api, const RepoPlanRequest& req,
                                  convert::FileSystem& fs) {
    RepoPlan plan;
    auto info = api.modelInfo(req.repo, req.commit.empty() ? req.revision : req.commit);
    if (!info.isOk()) return info.status();
    plan.info = std::move(info.value());
    if (!req.commit.empty()) plan.info.revision = req.revision;

    const RepoFile* config = nullptr;
    bool gguf = false;
    for (const auto& f : plan.info.files) {
        if (f.path == "config.json") config = &f;
        gguf = gguf || endsWith(f.path, ".gguf");
    }
    for (const auto& f : plan.info.files)
        if (&f == config || matchesIncludes(f.path, req.includes)) plan.files.push_back(f);
    bool weights = false;
    for (const auto& f : plan.files)
        weights = weights || endsWith(f.path, ".safetensors") || f.path == "colibri.json";
    const std::string what = req.repo + " (" + plan.info.commit.substr(0, 12) + ")";
    if (config == nullptr) {
        if (gguf)
            return Status(ErrorCode::Unsupported,
                          what + " has GGUF files only; this app reads safetensors checkpoints");
        return Status(ErrorCode::Unsupported,
                      what + " has no config.json: not a transformers checkpoint this app runs");
    }
    if (!weights) {
        bool anyWeights = false;
        for (const auto& f : plan.info.files)
            anyWeights = anyWeights || endsWith(f.path, ".safetensors");
        if (anyWeights)
            return Status(ErrorCode::InvalidArgument,
                          what + ": the --include patterns keep no .safetensors file");
        return Status(ErrorCode::Unsupported,
                      what + (gguf ? " has GGUF weights only" : " has no safetensors weights") +
                          "; this app reads safetensors checkpoints");
    }
    // The architecture, before any large file.
    auto text = api.fetchText(req.repo, plan.info.commit, "config.json", 4ull << 20);
    if (!text.isOk()) return text.status();
    plan.configJson = std::move(text.value());
    std::string note;
    const Support s = supportFromConfig(plan.configJson, &note);
    if (s != Support::Supported) return Status(ErrorCode::Unsupported, what + ": " + note);

    std::stable_sort(plan.files.begin(), plan.files.end(),
                     [](const RepoFile& a, const RepoFile& b) {
                         const auto rank = [](const RepoFile& f) {
                             return f.path == "config.json" ? 0 : f.isLfs() ? 2 : 1;
                         };
                         if (rank(a) != rank(b)) return rank(a) < rank(b);
                         return a.path < b.path;
                     });
    for (const auto& f : plan.files) {
        plan.totalBytes += f.size;
        const fsys::path dest = fsys::path(req.dir) / f.path;
        const uint64_t installed = sizeIfFile(dest);
        plan.presentBytes +=
            installed == f.size ? f.size : std::min(f.size, sizeIfFile(dest.string() + ".part"));
    }

    const std::string disk = existingAncestor(req.dir);
    struct statvfs v {};
    if (::statvfs(disk.c_str(), &v) != 0)
        return Status(ErrorCode::Io, disk + ": cannot read the disk's size (statvfs)");
    plan.diskBytes = uint64_t(v.f_blocks) * v.f_frsize;
    auto freeBytes = fs.freeBytes(disk);
    if (!freeBytes.isOk()) return freeBytes.status();
    plan.freeBytes = freeBytes.value();
    plan.marginBytes =
        req.marginBytes >= 0 ? uint64_t(req.marginBytes) : defaultSpaceMargin(plan.diskBytes);
    plan.containerBytes = req.containerBytes;
    if (plan.freeBytes < plan.requiredBytes())
        return Status(
            ErrorCode::NoSpace,
            fmt::format(
                "{}: not enough free space for {}: {} to download{} plus a "
                "margin of {} needs {}, but {} is free; free some space or "
                "choose another folder",
                disk, req.repo, gib(plan.totalBytes - std::min(plan.totalBytes, plan.presentBytes)),
                plan.containerBytes ? " and " + gib(plan.containerBytes) + " for the container"
                                    : std::string(),
                gib(plan.marginBytes), gib(plan.requiredBytes()), gib(plan.freeBytes)));
    return plan;
}

} // namespace coli::hub
