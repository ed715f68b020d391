#pragma once
// The wizard's disk arithmetic (Qt-free): what a model needs on the disk it goes to and what that
// disk has free. The rule (issue 13; `coli download`'s plan keeps the same margin): the repo's
// bytes still to download, plus the container's bytes when converting, plus a margin of
// max(1 GiB, 5 % of the disk's size), must be at most the free bytes of the folder's file system.
// Thread-safety: pure functions; freeBytesFor reads the file system (call it on a worker thread).
#include "convert/file_layer.h"
#include "core/status.h"

#include <cstdint>
#include <string>

namespace coli::app::wizard {

// max(1 GiB, 5 % of `diskBytes`): hub::defaultSpaceMargin, the margin `coli download` keeps.
uint64_t spaceMargin(uint64_t diskBytes);

struct SpaceNeed {
    uint64_t download = 0;  // bytes to download (0: the files are already there)
    uint64_t container = 0; // bytes of the container to write (0: no conversion)
    uint64_t margin = 0;    // free space to keep: spaceMargin(the disk's size) by default
    uint64_t total = 0;     // download + container + margin
};
SpaceNeed spaceNeeded(uint64_t downloadBytes, uint64_t containerBytes, uint64_t marginBytes);

// The nearest folder at or above `dir` that exists ("/" at worst), so that the free space of a
// folder not created yet can be asked.
std::string existingAncestor(const std::string& dir);

// Free bytes for an unprivileged writer on the file system that will hold `dir` (statvfs through
// `fs`, asked of existingAncestor(dir)). Errors: Io naming the folder.
Result<uint64_t> freeBytesFor(const std::string& dir,
                              convert::FileSystem& fs = convert::posixFileSystem());

// The size of the file system that will hold `dir` (statvfs f_blocks * f_frsize of
// existingAncestor(dir)). Errors: Io naming the folder.
Result<uint64_t> diskBytesFor(const std::string& dir);

// "1.2 GiB", "512 MiB", "3.4 KiB", "12 bytes" (binary units, one decimal under 10).
std::string bytesText(uint64_t bytes);

} // namespace coli::app::wizard
