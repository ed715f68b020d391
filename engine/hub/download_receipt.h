#pragma once
// The receipt a finished download leaves in the model folder, `colibri-download.json`: where the
// files came from and the hashes the Hub gave for them, so that `coli doctor --deep` can re-check
// them later without the network. Written last, atomically (temporary file, fsync, rename), once
// every file is installed; its absence means the download did not finish. Format (docs/hub.md):
//   {"format": "colibri-download", "version": 1, "endpoint": "https://huggingface.co",
//    "repo": "owner/name", "revision": "main", "commit": "<40 hex>", "completed_ms": 1764633600000,
//    "files": [{"path": "config.json", "size": 712, "blob_id": "<40 hex>", "lfs_sha256": null},
//              {"path": "model.safetensors", "size": 123, "blob_id": "...", "lfs_sha256": "<64
//              hex>"}]}
// Thread-safety: plain functions.
#include "core/status.h"
#include "hub/hub_types.h"

#include <cstdint>
#include <string>
#include <vector>

namespace coli::hub {

constexpr const char* kDownloadReceiptName = "colibri-download.json";

struct DownloadReceipt {
    std::string endpoint;
    std::string repo;
    std::string revision;
    std::string commit;
    int64_t completedMs = 0; // Unix milliseconds
    std::vector<RepoFile> files;
};

// Errors: NotFound (no receipt in `dir`), Malformed naming the file and the field.
Result<DownloadReceipt> readDownloadReceipt(const std::string& dir);
// Writes dir/colibri-download.json atomically. Errors: NoSpace (disk full), Io naming the file.
Status writeDownloadReceipt(const std::string& dir, const DownloadReceipt& receipt);

} // namespace coli::hub
