#pragma once
// The mirror plan (docs/mirror.md "The plan"): which of a model's expert-holding files to copy to
// a second disk. Whole files are the unit. Files are ranked by learned heat per byte: the heat of
// the experts stored in the file (an expert split over several files counts in each with the share
// of its bytes there) over the file's size; without usage history, by expert bytes per byte (every
// expert equally hot). Ties: expert bytes per byte, then the path. The hottest are fitted into the
// mirror file system's free space minus a reserve, capped by a budget, greedily in rank order: a
// file that does not fit is passed over and the next ones are still tried.
//
// Files already in the mirror with the primary's size (an earlier stage) stay in the plan at no
// cost in free space (they count against the budget); a temporary copy left by an interrupted
// stage counts as free space, since staging restarts or removes it. A file of the same name but
// another size (or not a regular file) in the mirror folder is never touched: the plan leaves that
// file out (Conflict). Thread-safety: plain functions; planMirror is pure.
#include "core/status.h"
#include "mirror/expert_files.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace coli::mirror {

// Staging copies each file to "<path>.mirror-partial" in the mirror folder first.
constexpr const char* kPartialSuffix = ".mirror-partial";

struct DiskSpace {
    uint64_t freeBytes = 0;     // usable by an unprivileged writer (statvfs f_bavail * f_frsize)
    uint64_t totalBytes = 0;    // the file system's size (f_blocks * f_frsize)
    uint64_t blockBytes = 4096; // allocation unit (f_frsize): files occupy whole blocks
};
// statvfs of the file system holding `dir`. Errors: Io naming dir.
Result<DiskSpace> diskSpace(const std::string& dir);
// The default reserve: max(1 GiB, 5 % of the file system's size), kept free for the system and
// other programs (the same margin as the downloads').
uint64_t defaultReserveBytes(uint64_t totalBytes);

// What the mirror folder already holds of the model's expert files.
struct MirrorFolderState {
    std::map<std::string, uint64_t> present;    // path -> size of the regular file mirror/path
    std::map<std::string, std::string> blocked; // path -> what is there instead ("a directory")
    std::map<std::string, uint64_t> partial;    // path -> size of mirror/path + kPartialSuffix
};
// Looks for each of `model`'s files in `mirrorDir` (lstat: a symbolic link is "blocked").
// Errors: Io (a stat failing other than ENOENT), naming the path.
Result<MirrorFolderState> scanMirrorFolder(const std::string& mirrorDir,
                                           const ModelExpertFiles& model);

// Learned heat per routed expert: (layer, expert) -> heat (>= 0), decayed to one point in time.
// Experts absent count as 0; an empty map (or all zeros) means no usage history.
using ExpertHeatMap = std::map<std::pair<int, int>, double>;

struct MirrorPlanOptions {
    std::optional<uint64_t> budgetBytes;  // at most this many bytes in the mirror (all files)
    std::optional<uint64_t> reserveBytes; // unset: defaultReserveBytes(totalBytes)
};

enum class FileChoice {
    Staged,     // already in the mirror with the primary's size: kept (staging re-checks it)
    Chosen,     // to copy
    DoesNotFit, // ranked, but the free space or the budget left was too small
    Conflict,   // something else of that name is in the mirror folder: left alone
};
const char* fileChoiceName(FileChoice c); // "staged", "copy", "does not fit", "conflict"

struct PlannedFile {
    std::string path;         // relative to the model folder
    uint64_t size = 0;        // bytes
    uint64_t expertBytes = 0; // bytes of routed experts in the file
    int experts = 0;          // routed experts with bytes in the file
    double heat = 0;          // the file's share of learned heat (0 without history)
    double heatPerByte = 0;   // the ranking key: heat / size (or expertBytes / size)
    FileChoice choice = FileChoice::DoesNotFit;
    std::string note; // Conflict: what is in the way
};

struct MirrorPlan {
    std::string modelDir, mirrorDir;
    bool byHeat = false;            // false: no usage history, ranked by expert bytes per byte
    std::vector<PlannedFile> files; // every expert-holding file, best first
    // Temporaries of files left out of the plan: staging removes them (its own files).
    std::vector<std::string> staleTemporaries;
    DiskSpace space;
    uint64_t reserveBytes = 0;
    uint64_t usableBytes = 0; // free space (plus temporaries) minus the reserve, before the plan
    std::optional<uint64_t> budgetBytes;
    uint64_t mirrorBytes = 0; // bytes of Staged + Chosen files: the mirror's size once staged
    uint64_t copyBytes = 0;   // bytes of Chosen files: what staging copies
    double heatTotal = 0;     // all files' heat (byHeat), else all expert bytes
    double heatCovered = 0;   // the part in Staged + Chosen files
    double coveredShare() const { return heatTotal > 0 ? heatCovered / heatTotal : 0; }
    // Staged + Chosen paths in rank order: what staging copies or re-checks and the receipt lists.
    std::vector<std::string> stagePaths() const;
};

// The plan from the given facts (pure: the same inputs give the same plan).
MirrorPlan planMirror(const ModelExpertFiles& model, const ExpertHeatMap& heat,
                      const std::string& mirrorDir, const DiskSpace& space,
                      const MirrorFolderState& state, const MirrorPlanOptions& options);

// The plan for a real mirror folder: diskSpace + scanMirrorFolder + planMirror.
// Errors: NotFound (mirrorDir missing: "create it first"), InvalidArgument (mirrorDir is not a
// folder, or is the model folder itself), Io.
Result<MirrorPlan> planMirrorFolder(const ModelExpertFiles& model, const ExpertHeatMap& heat,
                                    const std::string& mirrorDir, const MirrorPlanOptions& options);

// True when both paths lie on one file system (st_dev): a mirror there adds no bandwidth.
bool sameFileSystem(const std::string& a, const std::string& b);

} // namespace coli::mirror
