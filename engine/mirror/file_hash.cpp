#include "mirror/file_hash.h"

#include "convert/sha256.h"
#include "core/regular_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>
#include <vector>

namespace coli::mirror {

Result<FileDigest> hashFile(const std::string& path, const HashBytesFn& onBytes,
                            const std::atomic<bool>* cancel, bool dropCache) {
    auto opened = openRegularFile(path);
    if (!opened) return opened.status();
    const int fd = opened.value();
    // Clean pages only: the caller fsync'ed what it wrote, so all of them go.
    if (dropCache) ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    convert::Sha256 h;
    std::vector<unsigned char> buf(size_t(4) << 20);
    FileDigest d;
    for (;;) {
        if (cancel && cancel->load(std::memory_order_relaxed)) {
            ::close(fd);
            return Status(ErrorCode::Cancelled, path + ": interrupted while hashing");
        }
        const ssize_t got = ::read(fd, buf.data(), buf.size());
        if (got < 0) {
            if (errno == EINTR) continue;
            const int err = errno;
            ::close(fd);
            return Status(ErrorCode::Io, path + ": read failed: " + std::strerror(err));
        }
        if (got == 0) break;
        h.update(buf.data(), size_t(got));
        d.size += uint64_t(got);
        if (onBytes) onBytes(uint64_t(got));
    }
    ::close(fd);
    d.sha256 = h.finishHex();
    return d;
}

} // namespace coli::mirror
