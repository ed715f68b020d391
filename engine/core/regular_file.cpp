#include "core/regular_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace coli {

const char* fileTypeName(unsigned mode) {
    switch (mode & S_IFMT) {
    case S_IFREG:
        return "a regular file";
    case S_IFDIR:
        return "a directory";
    case S_IFIFO:
        return "a named pipe";
    case S_IFSOCK:
        return "a socket";
    case S_IFCHR:
        return "a character device";
    case S_IFBLK:
        return "a block device";
    case S_IFLNK:
        return "a symbolic link";
    }
    return "not a file";
}

namespace {

// Why open(path) failed, in the user's terms: a dangling link is named as such (ENOENT alone
// would say "not found" for a name that ls shows), a loop as a loop.
Status openError(const std::string& path, int err) {
    if (err == ENOENT) {
        struct stat lst {};
        if (::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
            char target[4096];
            const ssize_t n = ::readlink(path.c_str(), target, sizeof target - 1);
            const std::string to = n > 0 ? std::string(target, size_t(n)) : std::string("?");
            return {ErrorCode::NotFound,
                    path + ": dangling symbolic link (its target '" + to + "' does not exist)"};
        }
        return {ErrorCode::NotFound, path + ": file not found"};
    }
    if (err == ELOOP)
        return {ErrorCode::Io, path + ": symbolic link loop (too many levels of symbolic links)"};
    return {ErrorCode::Io, path + ": cannot open: " + std::strerror(err)};
}

} // namespace

Status symbolicLinkProblem(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) return Status::ok();
    const int err = errno;
    if (err == ELOOP) return openError(path, err);
    if (err == ENOENT) {
        Status s = openError(path, err);
        if (s.message().find("dangling") != std::string::npos) return s;
    }
    return Status::ok();
}

Result<int> openRegularFile(const std::string& path, uint64_t* size) {
    int fd = -1;
    do {
        fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) return openError(path, errno);
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        return Status(ErrorCode::Io, path + ": cannot stat: " + std::strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        return Status(ErrorCode::Malformed,
                      path + ": not a regular file (" + fileTypeName(st.st_mode) + ")");
    }
    // Regular files ignore O_NONBLOCK today; cleared so later reads keep their plain meaning.
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        const int err = errno;
        ::close(fd);
        return Status(ErrorCode::Io, path + ": fcntl: " + std::strerror(err));
    }
    if (size) *size = uint64_t(st.st_size);
    return fd;
}

} // namespace coli
