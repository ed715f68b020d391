#include "storage/location.h"

#include <cstdlib>

namespace coli::storage {

namespace {

// $XDG_DATA_HOME/colibri, else $HOME/.local/share/colibri.
Result<std::string> dataDir(const char* xdgDataHome, const char* home, const char* what) {
    if (xdgDataHome && xdgDataHome[0] == '/') return std::string(xdgDataHome) + "/colibri";
    if (home && home[0] == '/') return std::string(home) + "/.local/share/colibri";
    return {ErrorCode::NotFound, std::string("no place for ") + what +
                                     ": neither XDG_DATA_HOME nor HOME is set to an absolute "
                                     "folder"};
}

} // namespace

Result<std::string> defaultDatabasePathFrom(const char* xdgDataHome, const char* home) {
    auto d = dataDir(xdgDataHome, home, "the Colibri database");
    if (!d) return d.status();
    return d.value() + "/colibri.db";
}

Result<std::string> defaultModelsDirFrom(const char* xdgDataHome, const char* home) {
    auto d = dataDir(xdgDataHome, home, "downloaded models");
    if (!d) return d.status();
    return d.value() + "/models";
}

Result<std::string> defaultModelsDir() {
    return defaultModelsDirFrom(std::getenv("XDG_DATA_HOME"), std::getenv("HOME"));
}

std::string modelFolderName(const std::string& repo) {
    std::string out;
    for (char c : repo)
        out += c == '/' ? std::string("--") : std::string(1, c);
    return out;
}

Result<std::string> defaultDatabasePath() {
    return defaultDatabasePathFrom(std::getenv("XDG_DATA_HOME"), std::getenv("HOME"));
}

} // namespace coli::storage
