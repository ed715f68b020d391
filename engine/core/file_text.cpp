#include "core/file_text.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace coli {

Result<std::string> readTextFile(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
        return Status(ErrorCode::NotFound, path + ": file not found");
    if (std::filesystem::is_directory(path, ec))
        return Status(ErrorCode::Malformed, path + ": is a directory, expected a file");
    std::ifstream in(path, std::ios::binary);
    if (!in) return Status(ErrorCode::Io, path + ": cannot open: " + std::strerror(errno));
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) return Status(ErrorCode::Io, path + ": read failed");
    return ss.str();
}

Result<std::string> readOptionalFile(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return std::string();
    return readTextFile(path);
}

} // namespace coli
