#include "aio/read_range.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <unistd.h>

namespace coli::aio {

Status readError(const std::string& path, uint64_t offset, uint64_t length,
                 const std::string& what) {
    return Status(ErrorCode::Io, path + ": read of " + std::to_string(length) +
                                     " bytes at offset " + std::to_string(offset) +
                                     " failed: " + what);
}

Status endOfFileError(const std::string& path, uint64_t offset, uint64_t length, uint64_t got) {
    return readError(path, offset, length,
                     "end of file at byte " + std::to_string(offset + got) + " (" +
                         std::to_string(got) + " of " + std::to_string(length) +
                         " bytes read; is the file truncated?)");
}

Status preadFully(int fd, const std::string& path, uint64_t offset, uint64_t length, void* dst,
                  uint64_t need) {
    auto* out = static_cast<unsigned char*>(dst);
    uint64_t got = 0;
    while (got < length) {
        const ssize_t n = ::pread(fd, out + got, size_t(length - got), off_t(offset + got));
        if (n < 0) {
            if (errno == EINTR) continue;
            return readError(path, offset, length, std::strerror(errno));
        }
        if (n == 0) return got >= need ? Status::ok() : endOfFileError(path, offset, length, got);
        got += uint64_t(n);
    }
    return Status::ok();
}

void dropCachedRange(int fd, uint64_t offset, uint64_t length) {
    (void)::posix_fadvise(fd, off_t(offset), off_t(length), POSIX_FADV_DONTNEED);
}

} // namespace coli::aio
