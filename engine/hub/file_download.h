#pragma once
// One file of a repo, downloaded resumably and checked (docs/hub.md "Downloads"):
//   - bytes go to DEST.part (DEST = dir/path, folders created); an existing .part is resumed with
//     `Range: bytes=N-` + `If-Range: <etag>` (the ETag recorded when the .part was started; with
//     none recorded, Range goes alone, as huggingface_hub sends it: the URL is pinned to a commit
//     and the hash check below catches the rest); only a 206 whose Content-Range starts at N and
//     whose total is the expected size is appended. A 200 (a server that ignores Range, or an
//     If-Range whose ETag no longer matches) rewrites the .part from 0 with that response's
//     bytes; a 206 that does not continue the .part, or a 416, discards it and retries;
//   - retries with exponential backoff (initialBackoff doubling to maxBackoff; a `Retry-After`,
//     seconds or HTTP date, replaces the backoff, capped at maxBackoff too) on 408, 429, 5xx,
//     timeouts, stalls, dropped connections and short bodies; at most maxRetries in a row without
//     progress (a retry that added bytes resets the count). A TLS certificate that cannot be
//     verified is not retried;
//   - when all bytes are there the size is checked first (short or empty: "incomplete", resumed;
//     longer: restarted), then the SHA-256 (LFS files) or the git blob SHA-1 (others) is
//     computed on the calling thread (callers run downloads on a worker thread), and only a
//     matching file is renamed atomically to DEST (fsync of the file and of the folder). A DEST
//     already there with the right size and hash is kept (alreadyInstalled) and its .part removed;
//   - ENOSPC while writing stops at once with NoSpace: the .part and its ETag are kept.
// Writes go through `fs` (create for a new .part, openAppend to resume, rename to install), so
// tests inject a full disk with convert::FaultyFileSystem.
// Thread-safety: one call per HttpClient at a time; distinct files may download concurrently with
// distinct clients. `progress` is called on the calling thread: before each request, once the
// response's ETag is known (before its first byte is written: persist `state` then), every
// 256 KiB, when waiting to retry (phase "waiting", `note` says why and how long), when verifying
// and when done.
#include "convert/file_layer.h"
#include "core/status.h"
#include "hub/http_client.h"
#include "hub/hub_types.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

namespace coli::hub {

struct RetryPolicy {
    int maxRetries = 6;               // attempts in a row without progress
    double initialBackoffSeconds = 1; // first wait, doubled each retry ...
    double maxBackoffSeconds = 60;    // ... up to this; Retry-After (capped here too) wins
    long stallBytesPerSecond = 1024;  // a stall is under this rate ...
    long stallSeconds = 30;           // ... for this long
    double connectTimeoutSeconds = 30;
};

struct FileProgress {
    std::string path;       // repo path of the file
    uint64_t bytesDone = 0; // bytes in the .part (or the whole file once installed)
    uint64_t bytesTotal = 0;
    uint64_t bytesTransferred = 0; // body bytes received over the network by this call
    int retries = 0;               // retries so far in this call
    const char* phase = "";        // "downloading", "waiting" (backoff), "verifying", "done"
    std::string note;              // the last retry's reason, in words (empty when none)
};
using FileProgressFn = std::function<void(const FileProgress&)>;

// The resume state a caller keeps (in the download record) between runs.
struct PartState {
    std::string etag;       // ETag of the response that started the .part ("" = unknown)
    uint64_t bytesDone = 0; // informative; the .part's size is the truth
};

struct FileDownloadResult {
    uint64_t bytesTransferred = 0; // body bytes received (all attempts)
    int retries = 0;
    bool restarted = false;        // the .part was discarded at least once (ETag changed, no Range)
    bool alreadyInstalled = false; // DEST existed with the right size and hash: nothing fetched
};

// Downloads `file` of `repo` at `commit` from `client`'s endpoint into `dir`. `state` is read to
// resume and updated (ETag) as the download goes, so the caller can persist it from `progress`.
// Errors, each naming repo/path: NoSpace (disk full; .part and state.etag kept), Unauthorized
// (401/403: gated or private repo, the message says to set HF_TOKEN; the token is never printed),
// NotFound (404), Network (retries exhausted: "giving up after N retries without progress: <the
// last reason>"; an untrusted TLS certificate at once, see isCertificateFailure; another HTTP
// status), Malformed ("hash mismatch", or the server sends another size than the tree lists: the
// .part is deleted and DEST is not installed), Cancelled (the .part is kept), InvalidArgument (a
// path that is absolute, empty or has . or .. segments; no usable hash in `file`; an endpoint the
// URL policy refuses, e.g. plain http to a non-loopback host), Io naming the file for other write
// failures.
Result<FileDownloadResult> downloadFile(HttpClient& client, const std::string& repo,
                                        const std::string& commit, const RepoFile& file,
                                        const std::string& dir, PartState& state,
                                        const RetryPolicy& policy = {},
                                        const FileProgressFn& progress = {},
                                        const std::atomic<bool>* cancel = nullptr,
                                        convert::FileSystem& fs = convert::posixFileSystem());

// The git blob id of a file's bytes: SHA-1 of "blob <size>\0" + bytes, 40 lower-case hex digits.
// Errors: NotFound / Io naming the file.
Result<std::string> gitBlobSha1(const std::string& path);

} // namespace coli::hub
