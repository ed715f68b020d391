#include "core/file_text.h"

#include "core/regular_file.h"
#include "core/strings.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

namespace coli {

namespace {

// "256 MiB", "1024 bytes"
std::string limitText(uint64_t bytes) {
    if (bytes >= (uint64_t(1) << 20) && bytes % (uint64_t(1) << 20) == 0)
        return std::to_string(bytes >> 20) + " MiB";
    return std::to_string(bytes) + " bytes";
}

} // namespace

Result<std::string> readTextFile(const std::string& path, uint64_t maxBytes) {
    uint64_t size = 0;
    Result<int> fd = openRegularFile(path, &size);
    if (!fd) return fd.status();
    if (size > maxBytes) {
        ::close(fd.value());
        return Status(ErrorCode::Malformed, path + ": " + std::to_string(size) + " bytes (" +
                                                mibString(size) + "), over the " +
                                                limitText(maxBytes) + " limit for this file");
    }
    // Up to maxBytes + 1 bytes, so a file that grows after fstat is still caught.
    std::string text(size_t(size), '\0');
    size_t have = 0;
    for (;;) {
        if (have == text.size()) {
            if (text.size() > maxBytes) break;
            text.resize(std::min<uint64_t>(maxBytes + 1, text.size() + 65536));
        }
        const ssize_t got = ::read(fd.value(), text.data() + have, text.size() - have);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            const int err = errno;
            ::close(fd.value());
            return Status(ErrorCode::Io, path + ": read failed: " + std::strerror(err));
        }
        if (got == 0) break;
        have += size_t(got);
    }
    ::close(fd.value());
    if (have > maxBytes)
        return Status(ErrorCode::Malformed, path + ": grew past the " + limitText(maxBytes) +
                                                " limit for this file while being read");
    text.resize(have);
    return text;
}

Result<std::optional<std::string>> readOptionalFile(const std::string& path, uint64_t maxBytes) {
    struct stat lst {};
    if (::lstat(path.c_str(), &lst) != 0 && errno == ENOENT) return std::optional<std::string>();
    auto text = readTextFile(path, maxBytes);
    if (!text) return text.status();
    return std::optional<std::string>(std::move(text.value()));
}

} // namespace coli
