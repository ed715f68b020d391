#pragma once
// Staging a mirror (docs/mirror.md "Staging"): copies the plan's files from the model folder to the
// mirror folder, crash-safe and resumable, then writes the receipt (mirror_receipt.h) LAST.
//
// Each file to copy goes to "<path>.mirror-partial" in the mirror folder (created or truncated:
// an interrupted copy restarts), through a convert::FileSystem (tests inject a full disk),
// hashing the primary's bytes as they are read; then fsync, the copy re-read from disk (its pages
// dropped from the cache first) and its SHA-256 compared with the primary's, then an atomic
// rename to "<path>" and an fsync of the folder. A file an earlier stage finished (in the mirror
// with the primary's size) is kept when its SHA-256 equals the primary's. Staging never deletes
// or overwrites a mirror file other than its own temporaries: a file of the same name that
// differs from the primary is left alone and out of the receipt (StageReport::conflicts).
// Temporaries of files the plan no longer holds are removed.
// On any failure the files finished so far stay, the receipt is not (re)written, and running the
// stage again resumes: finished files are checked and kept, the failed one restarts.
// Thread-safety: one stage per mirror folder at a time; the callbacks run on the calling thread.
#include "convert/file_layer.h"
#include "core/status.h"
#include "mirror/mirror_plan.h"
#include "mirror/mirror_receipt.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace coli::mirror {

struct StageProgress {
    const char* phase = ""; // "checking" (a kept file and its primary hashed), "copying",
                            // "verifying" (the new copy re-read and hashed)
    std::string path;       // the file, relative to the model folder
    int fileIndex = 0;      // 0-based among fileCount
    int fileCount = 0;
    uint64_t fileDone = 0;  // bytes of this file done in this phase
    uint64_t fileBytes = 0; // the file's size
    uint64_t workDone = 0;  // bytes read or written over the whole stage
    uint64_t workTotal = 0; // 2 x the files' sizes (copy + verify, or both hashes of a kept file)
    double seconds = 0;     // since staging started
};
using StageProgressFn = std::function<void(const StageProgress&)>;

struct StageOptions {
    convert::FileSystem* fs = nullptr; // writes of the copies; null: convert::posixFileSystem()
    StageProgressFn progress;          // at most every 4 MiB
    const std::atomic<bool>* cancel = nullptr; // checked every 4 MiB
    // Set (when not null) to true when a failure is on the mirror's side (creating, writing,
    // syncing or renaming a copy, a copy that reads back wrong, the receipt), false when it is
    // on the model's (a primary missing, unreadable or changing).
    bool* mirrorSide = nullptr;
};

struct StageReport {
    std::vector<MirrorFile> files; // what the receipt lists, in the plan's order
    int copied = 0;                // files copied now
    int kept = 0;                  // files an earlier stage finished, checked and kept
    uint64_t bytesCopied = 0;
    std::vector<std::string> removedTemporaries; // stale temporaries removed (relative paths)
    std::vector<std::string> conflicts;          // "path: why" for files left out (never touched)
    double seconds = 0;
    std::string receiptPath; // mirrorDir/colibri-mirror.json
};

// Stages plan.stagePaths() from plan.modelDir into plan.mirrorDir and writes the receipt.
// Errors, each naming the file: NoSpace (the mirror's disk is full: the partial temporary is kept;
// free space and run again), Io (a read or write failed; a copy that reads back different from the
// primary is removed and reported; the primary changed while it was copied), NotFound / Malformed
// (a primary file missing or not a regular file), InvalidArgument (the plan is empty: nothing to
// stage), Cancelled (*cancel turned true: the partial temporary is kept).
Result<StageReport> stageMirror(const MirrorPlan& plan, const StageOptions& options = {});

} // namespace coli::mirror
