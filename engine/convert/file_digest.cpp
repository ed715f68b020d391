#include "convert/file_digest.h"

#include "core/regular_file.h"
#include "core/strings.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <unistd.h>
#include <vector>

namespace coli::convert {
namespace {

struct MdCtxFree {
    void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
using MdCtx = std::unique_ptr<EVP_MD_CTX, MdCtxFree>;

MdCtx newContext(const EVP_MD* md) {
    MdCtx c(EVP_MD_CTX_new());
    if (c && EVP_DigestInit_ex(c.get(), md, nullptr) != 1) c.reset();
    return c;
}

std::string finishHex(EVP_MD_CTX* c) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_DigestFinal_ex(c, md, &len);
    return hexLower(md, len);
}

struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
};

} // namespace

Result<FileDigests> hashFile(const std::string& path, const DigestRequest& what,
                             const std::function<void(uint64_t)>& onBytes,
                             const std::atomic<bool>* cancel) {
    const bool sha256 = what.sha256, gitBlobSha1 = what.gitBlobSha1;
    uint64_t size = 0;
    Result<int> opened = openRegularFile(path, &size);
    if (!opened) return opened.status();
    FdCloser closer{opened.value()};
    // Clean pages only: the caller fsync'ed what it wrote, so all of them go.
    if (what.dropCache) ::posix_fadvise(closer.fd, 0, 0, POSIX_FADV_DONTNEED);
    MdCtx s256, s1;
    if (sha256 && !(s256 = newContext(EVP_sha256())))
        return Status(ErrorCode::Internal, path + ": cannot start SHA-256 (libcrypto)");
    if (gitBlobSha1) {
        if (!(s1 = newContext(EVP_sha1())))
            return Status(ErrorCode::Internal, path + ": cannot start SHA-1 (libcrypto)");
        // git hashes the object header with the size it had when it was stored: the file's size
        // now. A file that grows or shrinks while it is read then mismatches, as it should.
        const std::string head = "blob " + std::to_string(size) + std::string(1, '\0');
        EVP_DigestUpdate(s1.get(), head.data(), head.size());
    }
    FileDigests out;
    std::vector<unsigned char> buf(size_t(4) << 20);
    for (;;) {
        if (cancel && cancel->load(std::memory_order_relaxed))
            return Status(ErrorCode::Cancelled, path + ": hashing cancelled");
        const ssize_t got = ::read(closer.fd, buf.data(), buf.size());
        if (got < 0) {
            if (errno == EINTR) continue;
            return Status(ErrorCode::Io, path + ": read failed: " + std::strerror(errno));
        }
        if (got == 0) break;
        if (s256) EVP_DigestUpdate(s256.get(), buf.data(), size_t(got));
        if (s1) EVP_DigestUpdate(s1.get(), buf.data(), size_t(got));
        out.bytes += uint64_t(got);
        if (onBytes) onBytes(uint64_t(got));
    }
    if (s1 && out.bytes != size)
        return Status(ErrorCode::Io, path + ": the file changed size while it was read (" +
                                         std::to_string(size) + " then " +
                                         std::to_string(out.bytes) + " bytes)");
    if (s256) out.sha256 = finishHex(s256.get());
    if (s1) out.gitBlobSha1 = finishHex(s1.get());
    return out;
}

} // namespace coli::convert
