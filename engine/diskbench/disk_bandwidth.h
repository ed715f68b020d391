#pragma once
// The read bandwidth of the disk that holds some files, as `coli doctor`, `coli plan` and the
// mirror's read split need it: random aligned reads of `requestBytes` through aio::IoPool, spread
// over the files in proportion to their size, after the files' page cache is dropped
// (POSIX_FADV_DONTNEED), with O_DIRECT where the file system allows it (else buffered, and the
// result says so: on tmpfs or a cached file the figure is the memory's, not a disk's).
// Thread-safety: a call builds its own pool; calls must not overlap when their figures matter
// (two measurements of one disk share it).
#include "aio/io_pool.h"
#include "core/status.h"
#include "diskbench/io_bench.h"

#include <cstdint>
#include <string>
#include <vector>

namespace coli::diskbench {

struct BandwidthOptions {
    uint64_t requestBytes = 4ull << 20; // bytes per read (rounded down to kDirectIoAlign, >= 4096)
    uint64_t totalBytes = 256ull << 20; // bytes read at most (capped by the files' total size)
    int queueDepth = 4;                 // reads in flight (1..64)
    uint32_t seed = 1;                  // fixes the sequence of offsets
};

struct DiskBandwidth {
    double bytesPerSecond = 0; // bytes read / seconds with a read in flight
    uint64_t bytes = 0;        // bytes read
    double seconds = 0;        // busy seconds (steady clock)
    bool directIo = false;     // false: buffered reads (O_DIRECT refused by the file system)
    aio::IoBackend backend{};  // the backend that ran
};

// The files of `paths` that exist, with their sizes. Errors: NotFound / Io naming the first path
// that cannot be stat'ed.
Result<std::vector<ReadFile>> statFiles(const std::vector<std::string>& paths);

// Measures the read bandwidth over `files` (see above). Files smaller than the request are
// skipped; when none is large enough the request shrinks to the largest file's aligned size.
// Errors: InvalidArgument (no file of at least 4096 bytes, bad options); Io naming a file that
// cannot be opened or read.
Result<DiskBandwidth> measureReadBandwidth(const std::vector<ReadFile>& files,
                                           const BandwidthOptions& options = {});

} // namespace coli::diskbench
