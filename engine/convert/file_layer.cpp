#include "convert/file_layer.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/statvfs.h>
#include <unistd.h>

namespace coli::convert {

namespace {

std::string diskFull(const std::string& path) {
    return "disk full writing " + path;
}

class PosixFile : public WritableFile {
public:
    PosixFile(int fd, std::string path) : m_fd(fd), m_path(std::move(path)) {}
    ~PosixFile() override {
        if (m_fd >= 0) ::close(m_fd);
    }

    Status write(const void* data, size_t n) override {
        const auto* p = static_cast<const unsigned char*>(data);
        while (n > 0) {
            const ssize_t w = ::write(m_fd, p, std::min<size_t>(n, size_t(1) << 30));
            if (w < 0) {
                if (errno == EINTR) continue;
                if (errno == ENOSPC || errno == EDQUOT)
                    return {ErrorCode::NoSpace, diskFull(m_path)};
                if (errno == EFBIG)
                    return {ErrorCode::NoSpace, m_path + ": the file size limit was reached "
                                                         "(ulimit -f, or the file system's)"};
                return {ErrorCode::Io, m_path + ": write failed: " + std::strerror(errno)};
            }
            p += w;
            n -= size_t(w);
        }
        return {};
    }

    Status sync() override {
        if (::fsync(m_fd) != 0) {
            if (errno == ENOSPC || errno == EDQUOT) return {ErrorCode::NoSpace, diskFull(m_path)};
            return {ErrorCode::Io, m_path + ": fsync failed: " + std::strerror(errno)};
        }
        return {};
    }

    Status close() override {
        if (m_fd < 0) return {};
        const int rc = ::close(m_fd);
        m_fd = -1;
        if (rc != 0) return {ErrorCode::Io, m_path + ": close failed: " + std::strerror(errno)};
        return {};
    }

private:
    int m_fd;
    std::string m_path;
};

class PosixFileSystem : public FileSystem {
public:
    Result<std::unique_ptr<WritableFile>> create(const std::string& path) override {
        const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) return {ErrorCode::Io, path + ": cannot create: " + std::strerror(errno)};
        return std::unique_ptr<WritableFile>(new PosixFile(fd, path));
    }

    Result<std::unique_ptr<WritableFile>> openAppend(const std::string& path) override {
        const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0)
            return {ErrorCode::Io, path + ": cannot open for appending: " + std::strerror(errno)};
        return std::unique_ptr<WritableFile>(new PosixFile(fd, path));
    }

    Status rename(const std::string& from, const std::string& to) override {
        if (::rename(from.c_str(), to.c_str()) != 0)
            return {ErrorCode::Io,
                    "cannot rename " + from + " to " + to + ": " + std::strerror(errno)};
        // The rename is durable only once the directory entry is on disk.
        // (Not `dir = "."` on an empty string: GCC 12 warns -Wrestrict on that, falsely.)
        const std::filesystem::path parent = std::filesystem::path(to).parent_path();
        const std::string dir = parent.empty() ? std::string(".") : parent.string();
        const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0) {
            ::fsync(fd);
            ::close(fd);
        }
        return {};
    }

    Result<uint64_t> freeBytes(const std::string& dir) override {
        struct statvfs s {};
        if (::statvfs(dir.c_str(), &s) != 0)
            return {ErrorCode::Io, dir + ": statvfs failed: " + std::strerror(errno)};
        return uint64_t(s.f_bavail) * uint64_t(s.f_frsize);
    }
};

} // namespace

FileSystem& posixFileSystem() {
    static PosixFileSystem fs;
    return fs;
}

class FaultyFile : public WritableFile {
public:
    FaultyFile(FaultyFileSystem& fs, std::unique_ptr<WritableFile> base, std::string path)
        : m_fs(fs), m_base(std::move(base)), m_path(std::move(path)) {}

    Status write(const void* data, size_t n) override {
        const uint64_t left = m_fs.m_budget > m_fs.m_written ? m_fs.m_budget - m_fs.m_written : 0;
        const size_t now = size_t(std::min<uint64_t>(n, left));
        if (now > 0) {
            COLI_RETURN_IF_ERROR(m_base->write(data, now));
            m_fs.m_written += now;
        }
        if (now < n) return {ErrorCode::NoSpace, diskFull(m_path)};
        return {};
    }
    Status sync() override { return m_base->sync(); }
    Status close() override { return m_base->close(); }

private:
    FaultyFileSystem& m_fs;
    std::unique_ptr<WritableFile> m_base;
    std::string m_path;
};

Result<std::unique_ptr<WritableFile>> FaultyFileSystem::create(const std::string& path) {
    auto f = m_base.create(path);
    if (!f) return f.status();
    m_created.push_back(path);
    return std::unique_ptr<WritableFile>(new FaultyFile(*this, std::move(f.value()), path));
}

Result<std::unique_ptr<WritableFile>> FaultyFileSystem::openAppend(const std::string& path) {
    auto f = m_base.openAppend(path);
    if (!f) return f.status();
    m_appended.push_back(path);
    return std::unique_ptr<WritableFile>(new FaultyFile(*this, std::move(f.value()), path));
}

Status FaultyFileSystem::rename(const std::string& from, const std::string& to) {
    return m_base.rename(from, to);
}

Result<uint64_t> FaultyFileSystem::freeBytes(const std::string& dir) {
    if (reportedFree != UINT64_MAX) return reportedFree;
    return m_base.freeBytes(dir);
}

Status writeFileAtomically(const std::string& path, const std::string& bytes, FileSystem& fs) {
    const std::string tmp = path + ".tmp";
    auto file = fs.create(tmp);
    if (!file) return file.status();
    COLI_RETURN_IF_ERROR(file.value()->write(bytes.data(), bytes.size()));
    COLI_RETURN_IF_ERROR(file.value()->sync());
    COLI_RETURN_IF_ERROR(file.value()->close());
    return fs.rename(tmp, path);
}

} // namespace coli::convert
