#pragma once
// Where the database lives by default (XDG Base Directory Specification, "XDG_DATA_HOME"):
// $XDG_DATA_HOME/colibri/colibri.db when XDG_DATA_HOME is set to an absolute path, else
// $HOME/.local/share/colibri/colibri.db. Downloaded models go beside it by default, in
// $XDG_DATA_HOME/colibri/models (else $HOME/.local/share/colibri/models), one folder per repo
// named owner--name (docs/storage.md "Location").
// Thread-safety: defaultDatabasePathFrom is pure; defaultDatabasePath reads the environment
// (getenv), safe as long as no thread changes it meanwhile.
#include "core/status.h"

#include <string>

namespace coli::storage {

// From explicit values (nullptr = unset). A relative or empty XDG_DATA_HOME is ignored, as the
// specification says. Errors: NotFound when neither gives an absolute folder.
Result<std::string> defaultDatabasePathFrom(const char* xdgDataHome, const char* home);
// The same from the process environment.
Result<std::string> defaultDatabasePath();

// The default models folder, from explicit values as above. Errors: NotFound as above.
Result<std::string> defaultModelsDirFrom(const char* xdgDataHome, const char* home);
Result<std::string> defaultModelsDir();
// The folder a downloaded repo "owner/name" gets in `modelsDir`: modelsDir/owner--name.
std::string modelFolderName(const std::string& repo);

} // namespace coli::storage
