#pragma once
// What downloading a repo would take, decided before any large byte moves (docs/hub.md
// "coli download"): the model info and its whole file tree (one commit), the files kept by the
// --include globs, config.json fetched and checked against the supported families (an
// unsupported architecture is refused by name), and the free disk space checked against what is
// still missing plus a margin.
// Thread-safety: plain functions; `api` is used from the calling thread only.
#include "convert/file_layer.h"
#include "core/status.h"
#include "hub/hub_api.h"
#include "hub/hub_types.h"

#include <cstdint>
#include <string>
#include <vector>

namespace coli::hub {

// huggingface_hub's allow_patterns: true when `path` matches one of `globs` with Python's
// fnmatch (case-sensitive; '*' and '?' also match '/'; [seq], [!seq]; no backslash escapes); a
// glob ending in '/' matches everything under that folder. No globs: every path matches.
bool matchesIncludes(const std::string& path, const std::vector<std::string>& globs);

// The margin left free by default: max(1 GiB, 5 % of the disk's size).
uint64_t defaultSpaceMargin(uint64_t diskBytes);

struct RepoPlanRequest {
    std::string repo;                  // "owner/name"
    std::string revision = "main";     // branch, tag or commit
    std::string commit;                // when set (a resumed download): list this commit instead
    std::vector<std::string> includes; // globs; config.json is always kept
    std::string dir;                   // destination folder (need not exist yet)
    uint64_t containerBytes = 0;       // the converted container's estimated size, when a
                                       // conversion into the same disk is planned (0: none)
    int64_t marginBytes = -1;          // free space to keep; -1: defaultSpaceMargin
};

struct RepoPlan {
    ModelInfo info;                 // info.files: the whole tree
    std::vector<RepoFile> files;    // the files to download: config.json first, then small
                                    // (non-LFS) files by path, then LFS files by path
    std::string configJson;         // config.json's text as fetched
    uint64_t totalBytes = 0;        // sum of files' sizes
    uint64_t presentBytes = 0;      // already in dir (installed files of the right size, .parts)
    uint64_t freeBytes = 0;         // free on the destination's disk at planning time
    uint64_t diskBytes = 0;         // the disk's size
    uint64_t marginBytes = 0;       // the margin used
    uint64_t requiredBytes() const; // totalBytes - presentBytes + containerBytes + margin
    uint64_t containerBytes = 0;
};

// Lists the repo, filters, fetches config.json and checks it, then the space. Errors: from the
// API (NotFound, Unauthorized, Network, Malformed); Unsupported when the repo cannot run here:
// its config.json names an unsupported architecture (named in the message), it has GGUF files
// only, no config.json or no safetensors weights among the files kept; InvalidArgument when the
// globs keep no weight file; NoSpace when the disk lacks requiredBytes() (the message gives both
// figures and the margin); Io when the disk cannot be examined.
Result<RepoPlan> planRepoDownload(HubApi& api, const RepoPlanRequest& request,
                                  convert::FileSystem& fs = convert::posixFileSystem());

} // namespace coli::hub
