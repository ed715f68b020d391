#include "mirror/mirror_plan.h"

#include "core/regular_file.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sys/stat.h>
#include <sys/statvfs.h>

namespace coli::mirror {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t kGiB = uint64_t(1) << 30;

uint64_t occupied(uint64_t bytes, uint64_t block) {
    if (block == 0) return bytes;
    return (bytes + block - 1) / block * block;
}

uint64_t saturatingSub(uint64_t a, uint64_t b) {
    return a > b ? a - b : 0;
}

} // namespace

Result<DiskSpace> diskSpace(const std::string& dir) {
    struct statvfs s {};
    if (::statvfs(dir.c_str(), &s) != 0)
        return Status(ErrorCode::Io, dir + ": statvfs failed: " + std::strerror(errno));
    DiskSpace d;
    d.freeBytes = uint64_t(s.f_bavail) * uint64_t(s.f_frsize);
    d.totalBytes = uint64_t(s.f_blocks) * uint64_t(s.f_frsize);
    d.blockBytes = s.f_frsize > 0 ? uint64_t(s.f_frsize) : 4096;
    return d;
}

uint64_t defaultReserveBytes(uint64_t totalBytes) {
    return std::max(kGiB, totalBytes / 20);
}

const char* fileChoiceName(FileChoice c) {
    switch (c) {
    case FileChoice::Staged:
        return "staged";
    case FileChoice::Chosen:
        return "copy";
    case FileChoice::DoesNotFit:
        return "does not fit";
    case FileChoice::Conflict:
        return "conflict";
    }
    return "?";
}

Result<MirrorFolderState> scanMirrorFolder(const std::string& mirrorDir,
                                           const ModelExpertFiles& model) {
    MirrorFolderState st;
    for (const ExpertFile& f : model.files) {
        for (const bool temp : {false, true}) {
            const std::string p =
                (fs::path(mirrorDir) / f.path).string() + (temp ? kPartialSuffix : "");
            struct stat s {};
            if (::lstat(p.c_str(), &s) != 0) {
                if (errno == ENOENT || errno == ENOTDIR) continue;
                return Status(ErrorCode::Io, p + ": cannot stat: " + std::strerror(errno));
            }
            if (S_ISREG(s.st_mode)) {
                (temp ? st.partial : st.present)[f.path] = uint64_t(s.st_size);
            } else if (!temp) {
                st.blocked[f.path] = fileTypeName(unsigned(s.st_mode));
            } else {
                // Not a file staging wrote: it is in the way of the temporary, never removed.
                st.blocked[f.path] = std::string(fileTypeName(unsigned(s.st_mode))) + " named " +
                                     f.path + kPartialSuffix;
            }
        }
    }
    return st;
}

std::vector<std::string> MirrorPlan::stagePaths() const {
    std::vector<std::string> out;
    for (const PlannedFile& f : files)
        if (f.choice == FileChoice::Staged || f.choice == FileChoice::Chosen) out.push_back(f.path);
    return out;
}

MirrorPlan planMirror(const ModelExpertFiles& model, const ExpertHeatMap& heat,
                      const std::string& mirrorDir, const DiskSpace& space,
                      const MirrorFolderState& state, const MirrorPlanOptions& options) {
    MirrorPlan plan;
    plan.modelDir = model.dir;
    plan.mirrorDir = mirrorDir;
    plan.space = space;
    plan.budgetBytes = options.budgetBytes;
    plan.reserveBytes = options.reserveBytes.value_or(defaultReserveBytes(space.totalBytes));

    for (const auto& [id, h] : heat)
        if (h > 0 && model.expertBytes.count(id)) plan.byHeat = true;

    for (const ExpertFile& f : model.files) {
        PlannedFile p;
        p.path = f.path;
        p.size = f.size;
        p.expertBytes = f.expertBytes;
        p.experts = int(f.pieces.size());
        if (plan.byHeat) {
            for (const ExpertPiece& piece : f.pieces) {
                const auto it = heat.find({piece.layer, piece.expert});
                if (it == heat.end() || !(it->second > 0)) continue;
                const uint64_t all = model.expertBytes.at({piece.layer, piece.expert});
                p.heat += it->second * double(piece.bytes) / double(all);
            }
            p.heatPerByte = f.size ? p.heat / double(f.size) : 0;
            plan.heatTotal += p.heat;
        } else {
            p.heatPerByte = f.size ? double(f.expertBytes) / double(f.size) : 0;
            plan.heatTotal += double(f.expertBytes);
        }
        plan.files.push_back(std::move(p));
    }
    std::sort(plan.files.begin(), plan.files.end(), [](const PlannedFile& a, const PlannedFile& b) {
        if (a.heatPerByte != b.heatPerByte) return a.heatPerByte > b.heatPerByte;
        const double ea = a.size ? double(a.expertBytes) / double(a.size) : 0;
        const double eb = b.size ? double(b.expertBytes) / double(b.size) : 0;
        if (ea != eb) return ea > eb;
        return a.path < b.path;
    });

    // Free space as staging will find it: our own temporaries are restarted or removed.
    uint64_t free = space.freeBytes;
    for (const auto& [path, bytes] : state.partial)
        free += occupied(bytes, space.blockBytes);
    // The receipt is written last and needs room too (about 200 bytes a file).
    const uint64_t receipt = occupied(512 + 200 * uint64_t(model.files.size()), space.blockBytes);
    plan.usableBytes = saturatingSub(free, plan.reserveBytes);
    uint64_t usable = saturatingSub(plan.usableBytes, receipt);
    uint64_t budgetLeft = options.budgetBytes.value_or(UINT64_MAX);

    // Files an earlier stage finished cost no free space, only budget; conflicts are left out.
    for (PlannedFile& p : plan.files) {
        if (const auto b = state.blocked.find(p.path); b != state.blocked.end()) {
            p.choice = FileChoice::Conflict;
            p.note = b->second + " is in the mirror folder in its place";
        } else if (const auto it = state.present.find(p.path); it != state.present.end()) {
            if (it->second == p.size) {
                p.choice = FileChoice::Staged;
                budgetLeft = saturatingSub(budgetLeft, p.size);
            } else {
                p.choice = FileChoice::Conflict;
                p.note = "a file of another size (" + std::to_string(it->second) +
                         " bytes) has its name in the mirror folder";
            }
        }
    }
    for (PlannedFile& p : plan.files) {
        if (p.choice == FileChoice::Staged || p.choice == FileChoice::Conflict) continue;
        const uint64_t need = occupied(p.size, space.blockBytes);
        if (need <= usable && p.size <= budgetLeft) {
            p.choice = FileChoice::Chosen;
            usable -= need;
            budgetLeft -= p.size;
        } else {
            p.choice = FileChoice::DoesNotFit;
        }
    }
    for (const PlannedFile& p : plan.files) {
        if (p.choice == FileChoice::Staged || p.choice == FileChoice::Chosen) {
            plan.mirrorBytes += p.size;
            plan.heatCovered += plan.byHeat ? p.heat : double(p.expertBytes);
        }
        if (p.choice == FileChoice::Chosen) plan.copyBytes += p.size;
        if (p.choice != FileChoice::Chosen && state.partial.count(p.path) &&
            !state.blocked.count(p.path))
            plan.staleTemporaries.push_back(p.path);
    }
    return plan;
}

bool sameFileSystem(const std::string& a, const std::string& b) {
    struct stat sa {
    }, sb{};
    return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev;
}

Result<MirrorPlan> planMirrorFolder(const ModelExpertFiles& model, const ExpertHeatMap& heat,
                                    const std::string& mirrorDir,
                                    const MirrorPlanOptions& options) {
    COLI_RETURN_IF_ERROR(symbolicLinkProblem(mirrorDir));
    std::error_code ec;
    const auto st = fs::status(mirrorDir, ec);
    if (!fs::exists(st))
        return Status(ErrorCode::NotFound,
                      mirrorDir + ": no such folder (create the mirror folder on the second disk "
                                  "first)");
    if (!fs::is_directory(st))
        return Status(ErrorCode::InvalidArgument, mirrorDir + ": not a folder");
    if (fs::equivalent(mirrorDir, model.dir, ec))
        return Status(ErrorCode::InvalidArgument,
                      mirrorDir + ": this is the model folder itself; a mirror needs its own "
                                  "folder, on another disk");
    auto space = diskSpace(mirrorDir);
    if (!space) return space.status();
    auto state = scanMirrorFolder(mirrorDir, model);
    if (!state) return state.status();
    return planMirror(model, heat, mirrorDir, space.value(), state.value(), options);
}

} // namespace coli::mirror
