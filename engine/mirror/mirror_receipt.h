#pragma once
// The receipt of a mirror folder, `colibri-mirror.json`, written last by `coli mirror stage`
// (atomically: temporary file, fsync, rename) and read by `coli mirror verify` and by the engine
// at load (`--mirror DIR`). It lists the model files copied to the mirror, each with its size and
// SHA-256 as hashed after the copy. A mirror folder without a receipt is not used (staging did not
// finish). Format (docs/mirror.md):
//   {"format": "colibri-mirror", "version": 1, "primary": "/abs/path/of/the/model",
//    "created_ms": 1764633600000,
//    "files": [{"path": "model-00002-of-00004.safetensors", "size": 123, "sha256": "<64 hex>"}]}
// Paths are relative to the model folder (and to the mirror folder, which has the same layout).
// Thread-safety: plain functions.
#include "core/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace coli::mirror {

constexpr const char* kMirrorReceiptName = "colibri-mirror.json";

struct MirrorFile {
    std::string path; // relative, '/'-separated, no ".."
    uint64_t size = 0;
    std::string sha256; // 64 lower-case hex digits
};

struct MirrorReceipt {
    std::string primary; // the model folder it mirrors (absolute)
    int64_t createdMs = 0;
    std::vector<MirrorFile> files;
};

// Errors: NotFound (no receipt in `mirrorDir`), Malformed naming the file and the field.
Result<MirrorReceipt> readMirrorReceipt(const std::string& mirrorDir);
// Writes mirrorDir/colibri-mirror.json atomically. Errors: NoSpace, Io naming the file.
Status writeMirrorReceipt(const std::string& mirrorDir, const MirrorReceipt& receipt);

} // namespace coli::mirror
