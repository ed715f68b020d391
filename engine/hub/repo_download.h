#pragma once
// A whole repo, downloaded resumably (docs/hub.md "coli download"): planRepoDownload (list, filter,
// config.json checked, free space checked), then each file through downloadFile (file_download.h)
// into its .part and, once its hash matches, into place; a download record in the database
// (storage/downloads.h) keeps the commit and each .part's ETag so that a killed process resumes
// the same commit where it stopped; the receipt (download_receipt.h) is written last.
// Shared by `coli download` and the app's wizard.
// Thread-safety: runs on the calling thread (a worker thread in the app); `progress` is called on
// it. `record`, when given, is a Storage opened on this same thread. `stop`/`discard` may be set
// from any thread.
#include "convert/file_layer.h"
#include "core/status.h"
#include "hub/file_download.h"
#include "hub/hub_api.h"
#include "hub/repo_plan.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

namespace coli::storage {
class Storage;
}

namespace coli::hub {

// The whole repo's progress, for a progress bar.
struct RepoProgress {
    std::string repo;
    size_t fileIndex = 0; // 0-based index of the current file in RepoPlan::files
    size_t fileCount = 0;
    FileProgress file;             // the current file (file_download.h)
    uint64_t bytesDone = 0;        // all files: installed + in .parts
    uint64_t bytesTotal = 0;       // all files kept
    uint64_t bytesTransferred = 0; // received over the network in this run
    double bytesPerSecond = 0;     // over the last few seconds (0 until known)
    double etaSeconds = -1;        // (total - done) / rate; -1 when the rate is unknown
    const char* phase = "";        // "planning", "downloading", "waiting", "verifying", or
                                   // "done" once the whole repo is (a finished file: file.phase)
};
using RepoProgressFn = std::function<void(const RepoProgress&)>;

struct RepoDownloadOptions {
    RepoPlanRequest request;
    RetryPolicy retry;
    storage::Storage* record = nullptr; // the download record's database (null: no record)
    // Set to stop at the next chunk: the .parts and the record are kept (paused). With `discard`
    // also set, the download is cancelled: its .part files are deleted and the record says
    // cancelled (installed files stay).
    const std::atomic<bool>* stop = nullptr;
    const std::atomic<bool>* discard = nullptr;
    RepoProgressFn progress;
    convert::FileSystem* fs = nullptr; // null: the real file system
};

struct RepoDownloadResult {
    RepoPlan plan;
    uint64_t bytesTransferred = 0; // body bytes received in this run
    int filesFetched = 0;          // files that needed bytes in this run
    int filesPresent = 0;          // files already installed and matching
    int retries = 0;
    bool restarted = false; // some .part had to restart (ETag changed, Range ignored)
    int64_t recordId = 0;   // the record's id (0 without a record)
};

// Errors: those of planRepoDownload (nothing downloaded); then NoSpace (disk full: the .part and
// the record are kept, paused; the message says to free space and run again), Cancelled (stopped:
// paused or cancelled as above), Unauthorized, NotFound, Network, Malformed (hash mismatch) from
// downloadFile (record: failed, with the message; .parts kept except a mismatching one), Io for
// the record's database or the receipt.
Result<RepoDownloadResult> downloadRepo(HubApi& api, const RepoDownloadOptions& options);

} // namespace coli::hub
