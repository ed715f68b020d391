#pragma once
// SHA-256 (FIPS 180-4) through OpenSSL's libcrypto EVP interface, as lowercase hex.
// Thread-safety: a Sha256 object is used by one thread; the free function is thread-safe.
#include "core/status.h"

#include <cstddef>
#include <memory>
#include <string>

namespace coli::convert {

class Sha256 {
public:
    Sha256();
    ~Sha256();
    Sha256(const Sha256&) = delete;
    Sha256& operator=(const Sha256&) = delete;
    void update(const void* data, size_t n);
    // The digest as 64 lowercase hex digits; the object must not be updated afterwards.
    std::string finishHex();

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

// SHA-256 of a whole file, read in 4 MiB pieces. `onBytes` (optional) is told each piece's size,
// for progress. Errors: NotFound, Io.
Result<std::string> sha256File(const std::string& path, void (*onBytes)(void*, size_t) = nullptr,
                               void* ctx = nullptr);

} // namespace coli::convert
