#pragma once
// Internal: bounded positional reads with EINTR and short-read handling. Not part of the API.
#include "core/status.h"

#include <cstdint>
#include <string>

namespace coli::io_detail {

// Reads exactly `nbytes` at absolute `offset` of `fd` into dst. `what` names the file (and tensor)
// for the error message. Errors: Io (read error, or end of file before nbytes).
Status preadAll(int fd, uint64_t offset, uint64_t nbytes, void* dst, const std::string& what);

} // namespace coli::io_detail
