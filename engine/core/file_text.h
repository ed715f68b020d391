#pragma once
// Reading the JSON side files of a checkpoint (config.json, tokenizer.json, tokenizer_config.json,
// generation_config.json) whole. Not for weights: those go through io/.
// Thread-safety: free functions, no shared state.
#include "core/status.h"

#include <string>

namespace coli {

// The whole file as text. Errors: NotFound (naming path), Io.
Result<std::string> readTextFile(const std::string& path);
// As readTextFile, but a missing file gives "" (an optional side file).
Result<std::string> readOptionalFile(const std::string& path);

} // namespace coli
