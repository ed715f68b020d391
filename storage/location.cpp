#include "storage/location.h"

#include <cstdlib>

namespace coli::storage {

Result<std::string> defaultDatabasePathFrom(const char* xdgDataHome, const char* home) {
    if (xdgDataHome && xdgDataHome[0] == '/')
        return std::string(xdgDataHome) + "/colibri/colibri.db";
    if (home && home[0] == '/') return std::string(home) + "/.local/share/colibri/colibri.db";
    return {ErrorCode::NotFound, "no place for the Colibri database: neither XDG_DATA_HOME nor "
                                 "HOME is set to an absolute folder"};
}

Result<std::string> defaultDatabasePath() {
    return defaultDatabasePathFrom(std::getenv("XDG_DATA_HOME"), std::getenv("HOME"));
}

} // namespace coli::storage
