#include "wizard/wizard_space.h"

#include "hub/repo_plan.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sys/statvfs.h>
#include <system_error>

namespace coli::app::wizard {

uint64_t spaceMargin(uint64_t diskBytes) {
    return hub::defaultSpaceMargin(diskBytes); // the same margin `coli download` keeps
}

SpaceNeed spaceNeeded(uint64_t downloadBytes, uint64_t containerBytes, uint64_t marginBytes) {
    SpaceNeed n;
    n.download = downloadBytes;
    n.container = containerBytes;
    n.margin = marginBytes;
    n.total = n.download + n.container + n.margin;
    return n;
}

std::string existingAncestor(const std::string& dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path p = fs::path(dir.empty() ? "/" : dir).lexically_normal();
    if (p.is_relative()) p = fs::absolute(p, ec);
    while (!p.empty()) {
        if (fs::is_directory(p, ec)) return p.string();
        if (!p.has_parent_path() || p.parent_path() == p) break;
        p = p.parent_path();
    }
    return "/";
}

Result<uint64_t> freeBytesFor(const std::string& dir, convert::FileSystem& fs) {
    const std::string at = existingAncestor(dir);
    auto r = fs.freeBytes(at);
    if (!r) return Status(r.status().code(), "free space of " + dir + ": " + r.status().message());
    return r.value();
}

Result<uint64_t> diskBytesFor(const std::string& dir) {
    const std::string at = existingAncestor(dir);
    struct statvfs s {};
    if (statvfs(at.c_str(), &s) != 0)
        return Status(ErrorCode::Io,
                      "size of the disk holding " + dir + ": " + std::strerror(errno));
    return uint64_t(s.f_blocks) * uint64_t(s.f_frsize);
}

std::string bytesText(uint64_t bytes) {
    static const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    if (bytes < 1024) return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
    double v = double(bytes) / 1024.0;
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        ++u;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, v < 10 ? "%.1f %s" : "%.0f %s", v, units[u]);
    return buf;
}

} // namespace coli::app::wizard
