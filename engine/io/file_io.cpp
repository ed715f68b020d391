#include "io/file_io.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace coli::io_detail {

Status preadAll(int fd, uint64_t offset, uint64_t nbytes, void* dst, const std::string& what) {
    auto* out = static_cast<unsigned char*>(dst);
    uint64_t done = 0;
    while (done < nbytes) {
        // Linux caps one read at ~2 GiB; ask for at most 1 GiB at a time.
        const uint64_t want = std::min<uint64_t>(nbytes - done, uint64_t(1) << 30);
        const ssize_t got = ::pread(fd, out + done, size_t(want), off_t(offset + done));
        if (got < 0) {
            if (errno == EINTR) continue;
            return {ErrorCode::Io, what + ": read of " + std::to_string(nbytes) +
                                       " bytes at offset " + std::to_string(offset) +
                                       " failed: " + std::strerror(errno)};
        }
        if (got == 0) {
            return {ErrorCode::Io, what + ": unexpected end of file reading " +
                                       std::to_string(nbytes) + " bytes at offset " +
                                       std::to_string(offset) + " (got " + std::to_string(done) +
                                       "; file shrank after opening?)"};
        }
        done += uint64_t(got);
    }
    return Status::ok();
}

} // namespace coli::io_detail
