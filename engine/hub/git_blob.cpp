// gitBlobSha1 (declared in file_download.h): the id git gives a file's bytes, which the Hub's tree
// lists as "oid" and which checks a non-LFS file.
#include "core/regular_file.h"
#include "hub/file_download.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <unistd.h>
#include <vector>

namespace coli::hub {

Result<std::string> gitBlobSha1(const std::string& path) {
    uint64_t size = 0;
    Result<int> opened = openRegularFile(path, &size);
    if (!opened) return opened.status();
    const int fd = opened.value();
    std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha1(), nullptr) != 1) {
        ::close(fd);
        return Status(ErrorCode::Internal, "OpenSSL: SHA-1 is not available");
    }
    const std::string header = "blob " + std::to_string(size) + '\0';
    EVP_DigestUpdate(ctx.get(), header.data(), header.size());
    std::vector<unsigned char> buf(size_t(4) << 20);
    uint64_t seen = 0;
    for (;;) {
        const ssize_t got = ::read(fd, buf.data(), buf.size());
        if (got < 0) {
            if (errno == EINTR) continue;
            const int err = errno;
            ::close(fd);
            return Status(ErrorCode::Io, path + ": read failed: " + std::strerror(err));
        }
        if (got == 0) break;
        EVP_DigestUpdate(ctx.get(), buf.data(), size_t(got));
        seen += uint64_t(got);
    }
    ::close(fd);
    // The header carries the size read by fstat: a file that changed size meanwhile has no id.
    if (seen != size)
        return Status(ErrorCode::Io, path + ": the file changed size while it was hashed");
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_DigestFinal_ex(ctx.get(), md, &len);
    static const char* kHex = "0123456789abcdef";
    std::string out;
    for (unsigned i = 0; i < len; ++i) {
        out += kHex[md[i] >> 4];
        out += kHex[md[i] & 15];
    }
    return out;
}

} // namespace coli::hub
