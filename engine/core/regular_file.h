#pragma once
// Opening a file the engine reads (JSON side files, safetensors shards, container blobs) by path,
// refusing what is not a regular file before any read could block on it: a named pipe in place
// of config.json would otherwise hang open() itself, and a character device (/dev/zero) would
// never end. Thread-safety: free functions, no shared state.
#include "core/status.h"

#include <cstdint>
#include <string>

namespace coli {

// Opens path read-only (O_CLOEXEC, blocking I/O) when it is a regular file, following symbolic
// links. Never blocks: the open is O_NONBLOCK, the type is checked with fstat on the descriptor
// (no window between check and open), and O_NONBLOCK is cleared afterwards. On success the caller
// owns the returned descriptor and closes it; *size (if given) gets the file's size in bytes.
// Errors, each naming path: NotFound ("file not found", or "dangling symbolic link" to a missing
// target), Malformed ("not a regular file (a named pipe)", "(a directory)", ...), Io (a symbolic
// link loop, permission denied, other open/fstat failures).
Result<int> openRegularFile(const std::string& path, uint64_t* size = nullptr);

// For a path that cannot be followed because of a symbolic link: NotFound "dangling symbolic link
// (its target '...' does not exist)" or Io "symbolic link loop (...)", naming path; an OK Status
// otherwise (the path resolves, or is simply absent). For folder checks, whose own message
// ("no such model directory") would hide the link.
Status symbolicLinkProblem(const std::string& path);

// "a named pipe", "a directory", "a socket", "a character device", "a block device", "a symbolic
// link", "a regular file" for a stat st_mode.
const char* fileTypeName(unsigned mode);

} // namespace coli
