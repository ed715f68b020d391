#pragma once
// Reading the JSON side files of a checkpoint (config.json, tokenizer.json, tokenizer_config.json,
// generation_config.json, chat_template.jinja, colibri.json, ...) whole. Not for weights: those go
// through io/. Thread-safety: free functions, no shared state.
#include "core/status.h"

#include <cstdint>
#include <optional>
#include <string>

namespace coli {

// The largest side file read into memory: real tokenizer.json files reach ~30 MB, so this is
// generous, and a 20 GB file is refused from its size before any byte is read.
inline constexpr uint64_t kMaxTextFileBytes = uint64_t(256) << 20;

// The whole file as text. Only a regular file is read (openRegularFile: a named pipe or device in
// its place is refused at once, never waited on). Errors, each naming path: NotFound (missing, a
// dangling symbolic link), Malformed (not a regular file; larger than maxBytes, checked from the
// file's size before reading), Io (a symbolic link loop, permissions, read errors).
Result<std::string> readTextFile(const std::string& path, uint64_t maxBytes = kMaxTextFileBytes);
// As readTextFile for an optional side file: nullopt when no file of that name exists (a dangling
// symbolic link is an error, not absence); an empty file is "" (not absence).
Result<std::optional<std::string>> readOptionalFile(const std::string& path,
                                                    uint64_t maxBytes = kMaxTextFileBytes);

} // namespace coli
