#pragma once
// The engine's side of a mirror (docs/mirror.md "The engine's use of a mirror"): at model load,
// the mirror folder's receipt (mirror/mirror_receipt.h) names the model files copied there; each
// is checked against the primary before any expert is read from it, and the two disks' read
// bandwidths weight the split of expert reads (tiers/disk_router.h). Read-only: nothing in the
// mirror folder is ever written, renamed or removed.
// Thread-safety: plain functions (they read files and measure the disks; call from one thread at
// a time when the measurement matters).
#include "core/status.h"
#include "tiers/disk_router.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace coli::mirror {

// Bytes compared at the start of a mirror file and of its primary: the first 64 KiB, or the
// whole safetensors header (8 + N bytes, N the little-endian u64 at offset 0) when that is longer;
// never more than the file.
constexpr uint64_t kHeaderCompareBytes = 64 * 1024;
// Bytes read from each disk to measure its bandwidth at load (unless the weights are given).
constexpr uint64_t kMeasureBytes = 32ull << 20;

struct MirrorLoadOptions {
    std::string dir; // the mirror folder (coli --mirror DIR, the app's setting)
    // Read weights of the primary and the mirror (coli --disk-weights A,B): unset = measured at
    // load (measureReadBandwidth over the mirrored files on each disk, measureBytes each).
    std::optional<std::pair<double, double>> weights;
    uint64_t measureBytes = kMeasureBytes;
};

struct PreparedMirror {
    tiers::MirrorSetup setup;          // files accepted; empty when the mirror is not used
    std::vector<std::string> warnings; // one per problem, naming the file (or the folder)
};

// Empty when the weights may be used, else what is wrong with them ("--disk-weights" is for the
// caller to add): each finite and >= 0, not both 0.
std::string checkDiskWeights(double primary, double mirror);

// Checks one mirror file against its primary: both regular files of `expectedSize` bytes (the
// receipt's), the first bytes identical (kHeaderCompareBytes, or the whole safetensors header).
// Errors, naming the file: NotFound, Malformed ("size 123 bytes, the primary's 456"; "its header
// bytes differ from the primary's"), Io.
Status checkMirrorFile(const std::string& primaryPath, const std::string& mirrorPath,
                       uint64_t expectedSize);

// Reads the receipt of options.dir and checks every file it lists against modelDir; files that
// fail are left out, one warning each ("mirror DIR: FILE: ...; the primary serves it"). No
// receipt (or a damaged one): no mirror, one warning. Then the split's weights: options.weights,
// else the measured bandwidths (a failed measurement: equal weights, with a warning). Never fails:
// a mirror is an optimisation; what cannot be used is reported and left out.
PreparedMirror prepareMirror(const std::string& modelDir, const MirrorLoadOptions& options);

} // namespace coli::mirror
