#pragma once
// Blocking reads of one byte range (the pread backend's workers and IoPool::readNow), and the
// error messages every backend uses, so both backends report a failure in the same words.
// Thread-safety: stateless; safe from any thread.
#include "core/status.h"

#include <cstdint>
#include <string>

namespace coli::aio {

// Io "PATH: read of LENGTH bytes at offset OFFSET failed: WHAT".
Status readError(const std::string& path, uint64_t offset, uint64_t length,
                 const std::string& what);
// Io for end of file before `length` bytes: names the path, the offset and the byte where the
// file ended (offset + bytes already read).
Status endOfFileError(const std::string& path, uint64_t offset, uint64_t length, uint64_t got);

// Reads `length` bytes at `offset` of `fd` into `dst` with pread(), looping over short reads and
// EINTR (a read may return fewer bytes than asked for at any time, and at most 0x7ffff000 per
// call on Linux). The end of the file after at least `need` bytes (<= length) ends the read
// without error. Errors: readError with the errno text, endOfFileError.
Status preadFully(int fd, const std::string& path, uint64_t offset, uint64_t length, void* dst,
                  uint64_t need);

// posix_fadvise(POSIX_FADV_DONTNEED) on [offset, offset + length): drops the page-cache copy of
// what a buffered read just returned. Advice only: a failure is ignored.
void dropCachedRange(int fd, uint64_t offset, uint64_t length);

} // namespace coli::aio
