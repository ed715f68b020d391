#include "convert/sha256.h"

#include "core/regular_file.h"
#include "core/strings.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>
#include <vector>

namespace coli::convert {

struct Sha256::Impl {
    EVP_MD_CTX* ctx = nullptr;
};

Sha256::Sha256() : m_impl(new Impl) {
    m_impl->ctx = EVP_MD_CTX_new();
    EVP_DigestInit_ex(m_impl->ctx, EVP_sha256(), nullptr);
}

Sha256::~Sha256() {
    EVP_MD_CTX_free(m_impl->ctx);
}

void Sha256::update(const void* data, size_t n) {
    EVP_DigestUpdate(m_impl->ctx, data, n);
}

std::string Sha256::finishHex() {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_DigestFinal_ex(m_impl->ctx, md, &len);
    return hexLower(md, len);
}

Result<std::string> sha256File(const std::string& path, void (*onBytes)(void*, size_t), void* ctx) {
    Result<int> opened = openRegularFile(path);
    if (!opened) return opened.status();
    const int fd = opened.value();
    Sha256 h;
    std::vector<unsigned char> buf(size_t(4) << 20);
    for (;;) {
        const ssize_t got = ::read(fd, buf.data(), buf.size());
        if (got < 0) {
            if (errno == EINTR) continue;
            const int err = errno;
            ::close(fd);
            return {ErrorCode::Io, path + ": read failed: " + std::strerror(err)};
        }
        if (got == 0) break;
        h.update(buf.data(), size_t(got));
        if (onBytes) onBytes(ctx, size_t(got));
    }
    ::close(fd);
    return h.finishHex();
}

} // namespace coli::convert
