// The read bandwidth of the disk under the weights, measured the one way the project measures
// it (diskbench/disk_bandwidth.h), for `coli plan`'s figures and the user's expectations.
#include "doctor/doctor_context.h"

#include <algorithm>
#include <cstdio>
#include <linux/magic.h>
#include <sys/vfs.h>

namespace coli::doctor::detail {
namespace {

// True when `path` lies on a file system held in memory (tmpfs, ramfs): since Linux 6.6 tmpfs
// accepts O_DIRECT, so the measurement alone cannot tell memory from a disk.
bool inMemory(const std::string& path) {
    struct statfs fs {};
    if (::statfs(path.c_str(), &fs) != 0) return false;
    return fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC;
}

} // namespace

void measureBandwidth(Context& c) {
    std::vector<diskbench::ReadFile> files;
    for (const std::string& f : c.weightFiles) {
        if (c.isBroken(f)) continue;
        auto st = diskbench::statFiles({c.path(f)});
        if (st) files.push_back(st.value()[0]);
    }
    if (files.empty()) return; // the findings above say why
    uint64_t largest = 0;
    for (const auto& f : files)
        largest = std::max(largest, f.bytes);
    if (largest < aio::kDirectIoAlign) {
        c.add(Severity::Info, "",
              "the disk's read bandwidth was not measured: no weight file has 4,096 bytes",
              "nothing to do");
        return;
    }
    c.step("measuring", "");
    auto bw = diskbench::measureReadBandwidth(files, c.options.bandwidth);
    if (!bw) {
        c.add(Severity::Warning, "",
              "the disk's read bandwidth could not be measured: " + bw.status().message(),
              "check the disk (dmesg); coli bench io measures it with more detail");
        return;
    }
    c.report.bandwidth = bw.value();
    char rate[64];
    std::snprintf(rate, sizeof rate, "%.2f GB/s", bw->bytesPerSecond / 1e9);
    const std::string onDisk =
        "to know a disk's rate, keep the model on a disk file system (ext4, xfs, btrfs)";
    if (inMemory(files[0].path))
        c.add(Severity::Info, "",
              std::string("the model lies on tmpfs (memory), so the measured ") + rate +
                  " is the memory's, not a disk's",
              onDisk);
    else if (!bw->directIo)
        c.add(Severity::Info, "",
              std::string("the file system refused O_DIRECT, so the measured ") + rate +
                  " is the page cache's (memory), not a disk's",
              onDisk);
}

} // namespace coli::doctor::detail
