#pragma once
// The room a memory cgroup leaves the process: inside a container or a systemd slice with a
// memory limit, MemAvailable describes the whole machine and a budget taken from it gets the
// process OOM-killed (issue 14). The rule (issue 14, "I/O defaults"):
//   1. the hierarchy holding the memory controller comes from /proc/self/mountinfo: a cgroup v1
//      mount ("cgroup", super option "memory"), else the cgroup v2 mount ("cgroup2") when its
//      cgroup.controllers lists "memory"; hybrid machines (v1 memory beside a v2 "unified" mount)
//      use the v1 one. The process's cgroup path comes from /proc/self/cgroup.
//   2. every cgroup from the process's own up to the mount's root is read: its limit (v2: the
//      smaller of memory.max and memory.high; v1: hierarchical_memory_limit of memory.stat) and,
//      where it has one, its usage less the page cache the kernel drops first (v2: memory.current
//      less memory.stat's inactive_file; v1: memory.usage_in_bytes less memory.stat's
//      total_inactive_file, else inactive_file).
//   3. room = limit - that usage, and the cgroup that leaves the least room decides. With one
//      limited cgroup this is "the tightest limit less its usage"; reading each level's own usage
//      also covers a parent whose limit is shared with busy siblings.
// "max", and values at or above 2^62 (v1 writes "no limit" as 9223372036854771712, the largest
// page counter times the 4 KiB page; other page sizes round it a little lower), mean no limit.
// Thread-safety: reads files only; safe from any thread.
#include "core/status.h"

#include <cstdint>
#include <string>

namespace coli {

// Where the files are read from; tests point both at a fake tree.
struct CgroupPaths {
    std::string procRoot = "/proc"; // self/mountinfo and self/cgroup are read under it
    std::string fsRoot;             // put before each mount point of mountinfo ("" = as listed)
};

// What the memory cgroup leaves the process.
struct CgroupMemory {
    int version = 0;         // 1 or 2: the hierarchy read; 0: no memory controller mounted
    bool limited = false;    // a cgroup on the path has a limit (the fields below are set)
    uint64_t limitBytes = 0; // the limit of the cgroup that leaves the least room
    uint64_t usedBytes = 0;  // that cgroup's usage less its inactive file cache (bytes)
    uint64_t roomBytes = 0;  // limitBytes - usedBytes, 0 when usage is at or above the limit
    std::string cgroupDir;   // that cgroup's directory (under CgroupPaths::fsRoot)
};

// Where the process's memory cgroup is (steps 1 and the mapping of its path onto the mount).
struct MemoryCgroupLocation {
    int version = 0;      // 1 or 2; 0: no memory controller mounted (the paths are empty)
    std::string mountDir; // the hierarchy's mount point under CgroupPaths::fsRoot
    std::string relPath;  // the process's cgroup below it: "" for the mount's root, else "/a/b"
    std::string dir() const { return mountDir + relPath; }
};
// A cgroup path outside the mount's root (a cgroup namespace shows "/" while the mount, made
// outside it, shows the host's path; "/.." for a process outside the namespace) maps to the
// mount's root, the deepest cgroup the process can see. Errors: as cgroupMemory's for
// mountinfo, the v2 mount's cgroup.controllers and /proc/self/cgroup.
Result<MemoryCgroupLocation> locateMemoryCgroup(const CgroupPaths& paths = {});

// The process's memory cgroup room by the rule above, read at call time (the callers choose the
// expert budget after the dense weights are loaded, so their memory is in the usage).
// No memory controller mounted, or no limit on the path: an OK result with limited = false.
// Errors: NotFound naming a file that cannot be opened (mountinfo, the cgroup's directory
// files), Malformed naming a file whose content cannot be parsed (a memory.max that is not a
// number or "max", a memory.stat without its inactive_file line, a /proc/self/cgroup without
// the hierarchy's line). Callers fall back to MemAvailable alone on an error.
Result<CgroupMemory> cgroupMemory(const CgroupPaths& paths = {});

// Whether a limit value from a cgroup file means "no limit" ("max", or >= 2^62, see above).
bool cgroupValueUnlimited(uint64_t value);

} // namespace coli
