#pragma once
// `coli mirror verify`: every file the receipt lists is re-hashed in the mirror folder and
// compared with the receipt's size and SHA-256, and its size with the primary's (the model
// folder's file of the same path). The primary is not hashed: `coli doctor --deep` checks the
// model itself. docs/mirror.md "Verify".
// Thread-safety: plain function; the callback runs on the calling thread.
#include "core/status.h"
#include "mirror/mirror_receipt.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace coli::mirror {

struct VerifyFinding {
    std::string path;    // the file (relative), or the receipt's name for the receipt itself
    std::string problem; // e.g. "SHA-256 differs from the receipt: the copy was altered"
};

struct VerifyProgress {
    std::string path;
    int fileIndex = 0, fileCount = 0;
    uint64_t bytesDone = 0, bytesTotal = 0; // over all the receipt's files
    double seconds = 0;
};
using VerifyProgressFn = std::function<void(const VerifyProgress&)>;

struct VerifyReport {
    MirrorReceipt receipt;
    std::vector<VerifyFinding> findings; // empty: the mirror is sound
    int filesOk = 0;
    uint64_t bytesHashed = 0;
    double seconds = 0;
};

// Findings (the report, not errors): the receipt's primary is another folder than modelDir; a
// file missing from the mirror or not a regular file; its size differs from the receipt's or the
// primary's; the primary missing; the SHA-256 differs from the receipt's; a read failing.
// Errors: NotFound / Malformed (readMirrorReceipt: no receipt, a damaged one), Cancelled.
Result<VerifyReport> verifyMirror(const std::string& modelDir, const std::string& mirrorDir,
                                  const VerifyProgressFn& progress = {},
                                  const std::atomic<bool>* cancel = nullptr);

} // namespace coli::mirror
