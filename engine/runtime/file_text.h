#pragma once
// Small file helpers for the runtime's JSON side files (not for weights: those go through io/).
// Thread-safety: free functions, no shared state.
#include "core/status.h"

#include <string>

namespace coli {

// The whole file as text. Errors: NotFound (naming path), Io.
Result<std::string> readTextFile(const std::string& path);
// As readTextFile, but a missing file gives "" (an optional side file).
Result<std::string> readOptionalFile(const std::string& path);

} // namespace coli
