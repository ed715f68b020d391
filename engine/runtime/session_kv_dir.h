#pragma once
// Where persisted session KV files live and how much disk they may take: one file per session,
// <folder of the database>/<its name without extension>.kv/session-<id>.kv (colibri.kv/ beside
// colibri.db; runtime/session_kv_file.h), shared by the app and
// `coli chat --session`. Their total is capped (default: 10 % of the size of the file system
// holding them, at most 20 GiB); over the cap the least recently written files of other sessions
// are deleted. A session whose KV file is gone keeps its text and is prefilled again when it is
// next continued.
// Thread-safety: pure functions over the file system; concurrent callers on one folder may race
// on which file is deleted first, never on a file's contents (writers hold their own files).
#include "core/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace coli {

// <dirname(databasePath)>/<stem(databasePath)>.kv
std::string sessionKvDir(const std::string& databasePath);
// <dir>/session-<id>.kv
std::string sessionKvPath(const std::string& dir, int64_t sessionId);
// Bytes of the session's KV file; 0 when it has none.
uint64_t sessionKvBytes(const std::string& dir, int64_t sessionId);
// Deletes the session's KV file and a set-aside <file>.old; missing files are fine.
// Errors: Io naming the file.
Status removeSessionKv(const std::string& dir, int64_t sessionId);
// 10 % of the size of the file system holding `dir` (or its parent when it does not exist yet),
// at most 20 GiB; 20 GiB when the size cannot be read.
uint64_t defaultSessionKvCap(const std::string& dir);
// Deletes the least recently written session KV files of `dir` (by modification time; ties: the
// lower session id first), never `keep`'s, until all of them together take at most capBytes.
// Returns the sessions whose files were deleted, in deletion order. A missing dir holds nothing.
// Errors: Io (the folder cannot be listed, a file cannot be deleted; naming it).
Result<std::vector<int64_t>> enforceSessionKvCap(const std::string& dir, uint64_t capBytes,
                                                 int64_t keep);

} // namespace coli
