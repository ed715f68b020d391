#include "aio/direct_probe.h"

#include "aio/io_pool.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

namespace coli::aio {

std::string fileSystemName(int fd) {
    struct statfs s {};
    if (::fstatfs(fd, &s) != 0) return "unknown";
    // Magic numbers from <linux/magic.h> (and NTFS3's, which it lacks), written out so that the
    // list does not depend on the headers' age.
    switch (static_cast<unsigned long>(s.f_type) & 0xffffffffUL) {
    case 0xEF53:
        return "ext2/3/4";
    case 0x58465342:
        return "xfs";
    case 0x9123683E:
        return "btrfs";
    case 0x01021994:
        return "tmpfs";
    case 0x858458f6:
        return "ramfs";
    case 0x6969:
        return "nfs";
    case 0x794c7630:
        return "overlayfs";
    case 0x65735546:
        return "fuse";
    case 0x2fc12fc1:
        return "zfs";
    case 0x4d44:
        return "vfat";
    case 0x2011BAB0:
        return "exfat";
    case 0x5346544e: // ntfs-3g is fuse; this is the kernel's ntfs / ntfs3
    case 0x7366746e:
        return "ntfs";
    case 0xFF534D42:
        return "cifs";
    case 0xFE534D42:
        return "smb2";
    case 0x01021997:
        return "9p";
    case 0x73717368:
        return "squashfs";
    case 0xF2F52010:
        return "f2fs";
    case 0xf15f:
        return "ecryptfs";
    case 0xE0F5E1E2:
        return "erofs";
    default:
        break;
    }
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%lx", static_cast<unsigned long>(s.f_type) & 0xffffffffUL);
    return hex;
}

std::string refuseDirectPattern(const std::string& optionPattern) {
    if (!optionPattern.empty()) return optionPattern;
    const char* env = std::getenv(kRefuseDirectEnv);
    return env ? std::string(env) : std::string();
}

std::string dioAlignProblem(uint64_t memAlign, uint64_t offsetAlign) {
    if (offsetAlign == 0)
        return "the file system reports no direct I/O for this file (statx DIOALIGN)";
    if (kDirectIoAlign % offsetAlign != 0 || (memAlign != 0 && kDirectIoAlign % memAlign != 0))
        return "direct I/O needs " + std::to_string(offsetAlign) + "-byte offsets and " +
               std::to_string(memAlign) + "-byte buffers (statx DIOALIGN), not " +
               std::to_string(kDirectIoAlign);
    return "";
}

namespace {

// The alignment statx reports for `fd`, checked against ours; "" when it allows our reads or the
// kernel (or the file system: tmpfs) does not report it, else why not.
std::string statxAlignProblem([[maybe_unused]] int fd) {
#ifdef STATX_DIOALIGN
    struct statx stx {};
    if (::statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) != 0) return "";
    if (!(stx.stx_mask & STATX_DIOALIGN)) return ""; // not reported: the test read decides
    return dioAlignProblem(stx.stx_dio_mem_align, stx.stx_dio_offset_align);
#else
    return ""; // headers without STATX_DIOALIGN: the test read decides
#endif
}

} // namespace

Result<DirectProbe> probeDirectRead(const std::string& path, const std::string& refusePattern) {
    DirectProbe p;
    const bool injected = !refusePattern.empty() && path.find(refusePattern) != std::string::npos;
    const int fd = injected ? -1 : ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
    if (fd < 0) {
        const int e = injected ? EINVAL : errno;
        // The file system's name comes from a plain handle: the O_DIRECT open failed.
        const int plain = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        p.fsName = plain >= 0 ? fileSystemName(plain) : "unknown";
        if (plain >= 0) ::close(plain);
        if (e != EINVAL)
            return Status(ErrorCode::Io, path + ": cannot open with O_DIRECT: " + std::strerror(e));
        p.reason = std::string("open with O_DIRECT failed: ") + std::strerror(e) +
                   (injected ? std::string(" (injected by the test hook ") + kRefuseDirectEnv + ")"
                             : std::string());
        return p;
    }
    p.fsName = fileSystemName(fd);
    p.reason = statxAlignProblem(fd);
    if (p.reason.empty()) {
        // One aligned read at offset 0 (short at the end of a small file, 0 for an empty one).
        struct FreeDeleter {
            void operator()(void* q) const { std::free(q); }
        };
        std::unique_ptr<void, FreeDeleter> buf(std::aligned_alloc(kDirectIoAlign, kDirectIoAlign));
        if (!buf) {
            ::close(fd);
            return Status(ErrorCode::Internal, path + ": no memory for the O_DIRECT test read");
        }
        ssize_t n;
        do {
            n = ::pread(fd, buf.get(), kDirectIoAlign, 0);
        } while (n < 0 && errno == EINTR);
        if (n < 0) {
            const int e = errno;
            if (e != EINVAL) {
                ::close(fd);
                return Status(ErrorCode::Io, path + ": O_DIRECT test read of " +
                                                 std::to_string(kDirectIoAlign) +
                                                 " bytes at offset 0 failed: " + std::strerror(e));
            }
            p.reason = std::string("an aligned O_DIRECT test read failed: ") + std::strerror(e);
        }
    }
    if (!p.reason.empty()) {
        ::close(fd);
        return p;
    }
    p.fd = fd;
    return p;
}

} // namespace coli::aio
