#pragma once
// Which disk serves an expert read: the model's own folder (the primary) or a mirror of some of
// its files on a second disk (docs/mirror.md "The engine's use of a mirror"). The expert sources
// (tiers/expert_source.h) open their files and submit each expert's reads through a DiskRouter.
//   - An expert whose reads all lie in mirrored files is read from the mirror when
//     mirrorPick(layer, expert) < MirrorSetup::share, else from the primary: a fixed,
//     deterministic split (the same experts go to the same disk on every run), weighted by the
//     disks' read bandwidths (share = w_mirror / (w_primary + w_mirror)).
//   - Before a mirror read the mirror file must still be the file opened at load (stat of its path:
//     same device and inode); a mirror read that fails or a file that is gone (the folder removed,
//     the disk unmounted) switches the whole mirror off for the rest of the run (one message,
//     mirrorStatus().problem) and the expert is read again from the primary: the caller sees one
//     completion, from the primary, with the same bytes.
//   - Nothing is ever written to the mirror.
// Thread-safety: openFile() only before the first read (at load, one thread); submit() and
// mirrorStatus() from any thread; completions run on the pool's threads.
#include "aio/io_pool.h"
#include "core/status.h"
#include "tiers/tier_telemetry.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace coli::tiers {

enum class Disk : uint8_t { Primary = 0, Mirror = 1 };

// The mirror as checked at load (engine/mirror/mirror_load.h makes it).
struct MirrorSetup {
    std::string dir; // the mirror folder as given
    // Primary path (weakly canonical) -> the mirror's copy (checked: same size, same header).
    std::map<std::string, std::string> files;
    double share = 0; // [0, 1]: the share of mirrored experts read from the mirror
    double primaryWeight = 0, mirrorWeight = 0; // as measured (bytes/s) or given (--disk-weights)
    bool measured = false;                      // the weights came from measureReadBandwidth
};

// The split's hash: splitmix64 of (layer << 32 | expert), its top 53 bits as a fraction in [0, 1).
// Pure.
double mirrorPick(int layer, int expert);

class DiskRouter {
public:
    // Reads of one expert, completed together: OK, or the first error; `disk` served them all.
    using Done = std::function<void(const Status&, Disk disk)>;

    // `pool` must outlive the router. An empty setup (no files) routes everything to the primary.
    DiskRouter(aio::IoPool& pool, MirrorSetup setup);

    // Opens `primaryPath` in the pool and, when it is mirrored, its mirror copy too. Returns the
    // primary's file index (what read requests name). `buffered`: read the file buffered whatever
    // the pool's mode (IoPool::openFile); the mirror copy of a buffered primary is read buffered
    // too. A mirror copy that cannot be opened is dropped with a warning (warnings()); the
    // primary's errors are returned (the pool's openFile errors, naming the path). A file read
    // buffered because O_DIRECT was refused (IoPool::fileNote) adds its note to warnings().
    Result<int> openFile(const std::string& primaryPath, bool buffered = false);
    // Problems and notes found while opening (a mirror copy that could not be opened, a file read
    // buffered because its file system refused O_DIRECT), one message each.
    const std::vector<std::string>& warnings() const { return m_warnings; }

    // The disk the expert's reads go to now (the split, the files, the mirror's state).
    Disk pick(int layer, int expert, std::span<const aio::ReadRequest> reads) const;
    // Submits the expert's reads (file indices from openFile) to the chosen disk; `done` runs once,
    // on a pool thread, after all of them (and a fallback to the primary, if one was needed).
    void submit(int layer, int expert, std::span<const aio::ReadRequest> reads, Done done);

    MirrorStatus mirrorStatus() const;

private:
    struct MirrorFile {
        int file = -1; // pool index of the mirror copy
        std::string path;
        uint64_t dev = 0, ino = 0; // identity at open
    };
    bool mirrored(std::span<const aio::ReadRequest> reads) const;
    // Switches the mirror off; the first call's message is kept.
    void fallBack(const std::string& why);
    // The mirror copy of every read still the file opened at load; else the reason.
    std::string mirrorGone(std::span<const aio::ReadRequest> reads) const;
    void submitTo(Disk disk, int layer, int expert, std::vector<aio::ReadRequest> reads, Done done);

    aio::IoPool& m_pool;
    MirrorSetup m_setup;
    std::map<int, MirrorFile> m_mirrorOf; // primary pool index -> its mirror copy
    std::vector<std::string> m_warnings;
    std::atomic<bool> m_off{false};
    mutable std::mutex m_mutex; // guards m_problem
    std::string m_problem;
};

} // namespace coli::tiers
