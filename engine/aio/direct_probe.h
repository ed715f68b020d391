#pragma once
// Whether one file can be read with O_DIRECT at the pool's alignment (kDirectIoAlign), checked
// before the pool uses its O_DIRECT handle (docs/tiers.md "Buffered or O_DIRECT"):
//   1. open(O_DIRECT): EINVAL is the kernel's answer for a file system without direct I/O;
//   2. statx(STATX_DIOALIGN) where the kernel reports it (Linux 6.1+; the field is left out of
//      the mask by older kernels and by file systems that do not say): a zero offset alignment
//      means no direct I/O for this file, an alignment that does not divide kDirectIoAlign means
//      our reads would be refused;
//   3. one aligned read of up to kDirectIoAlign bytes at offset 0 through the O_DIRECT handle
//      (some file systems accept the open and refuse the read with EINVAL).
// Test hook: a path containing IoOptions::testRefuseDirect (or, when that is empty, the value of
// the environment variable COLI_TEST_REFUSE_DIRECT_IO) is refused as if the open had failed with
// EINVAL, so the fallback and the refusal can be tested on any file system.
// Thread-safety: stateless apart from reading the environment; safe from any thread.
#include "core/status.h"

#include <cstdint>
#include <string>

namespace coli::aio {

// The environment variable of the test hook above.
inline constexpr const char* kRefuseDirectEnv = "COLI_TEST_REFUSE_DIRECT_IO";

struct DirectProbe {
    int fd = -1;        // the O_DIRECT handle (owned by the caller), or -1 when refused
    std::string reason; // why it was refused ("" when accepted): errno text or the alignment
    std::string fsName; // the file system's type (fileSystemName), filled in either way
};

// Opens `path` with O_RDONLY | O_CLOEXEC | O_DIRECT and runs the checks above. `refusePattern`
// is the test hook's pattern ("" = none). Returns the probe (fd >= 0: accepted, the caller closes
// it; fd == -1: refused, `reason` says why). Errors: Io naming the path for failures that are not
// a refusal of direct I/O (ENOENT, EACCES, an I/O error of the test read ...).
Result<DirectProbe> probeDirectRead(const std::string& path, const std::string& refusePattern);

// The file system type of the file open as `fd`, from fstatfs's f_type: "ext2/3/4", "xfs",
// "btrfs", "tmpfs", "nfs", "overlayfs", "fuse", "zfs", "vfat", "exfat", "ntfs", "cifs", "smb2",
// "9p", "squashfs", "f2fs", "ecryptfs", else "0x" and the hex magic; "unknown" when fstatfs fails.
std::string fileSystemName(int fd);

// What statx's DIOALIGN figures (bytes; as reported, i.e. with STATX_DIOALIGN in the mask) say of
// reads at kDirectIoAlign: "" when they allow them, else why not (an offset alignment of 0: no
// direct I/O for the file; an alignment that does not divide kDirectIoAlign: larger or odd). Pure.
std::string dioAlignProblem(uint64_t memAlign, uint64_t offsetAlign);

// The test hook's pattern: `optionPattern` when not empty, else the environment variable
// kRefuseDirectEnv ("" when unset).
std::string refuseDirectPattern(const std::string& optionPattern);

} // namespace coli::aio
