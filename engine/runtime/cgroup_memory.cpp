#include "runtime/cgroup_memory.h"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

namespace coli {
namespace {

constexpr uint64_t kUnlimitedFrom = uint64_t(1) << 62;

Result<std::string> readText(const std::string& path) {
    std::ifstream f(path);
    if (!f) return Status(ErrorCode::NotFound, path + ": cannot open");
    std::ostringstream s;
    s << f.rdbuf();
    if (f.bad()) return Status(ErrorCode::Io, path + ": read failed");
    return s.str();
}

std::vector<std::string> splitOn(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : s) {
        if (c == sep) {
            out.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    out.push_back(cur);
    return out;
}

std::string trim(const std::string& s) {
    const size_t b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

std::optional<uint64_t> parseU64(const std::string& s) {
    uint64_t v = 0;
    const char* end = s.data() + s.size();
    auto [p, ec] = std::from_chars(s.data(), end, v);
    if (ec != std::errc() || p != end || s.empty()) return std::nullopt;
    return v;
}

// mountinfo escapes space, tab, newline and backslash in paths as \ooo (octal).
std::string unescapeMountPath(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3' &&
            s[i + 2] >= '0' && s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
            out += char((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
            i += 3;
        } else {
            out += s[i];
        }
    }
    return out;
}

struct Mount {
    std::string root;       // the cgroup path shown at the mount point
    std::string mountPoint; // where it is mounted
};

// The limit value of one file: nullopt for "no limit". `path` names the file in errors.
Result<std::optional<uint64_t>> parseLimit(const std::string& text, const std::string& path) {
    const std::string t = trim(text);
    if (t == "max") return std::optional<uint64_t>();
    std::optional<uint64_t> v = parseU64(t);
    if (!v) return Status(ErrorCode::Malformed, path + ": cannot parse '" + t + "'");
    if (cgroupValueUnlimited(*v)) return std::optional<uint64_t>();
    return v;
}

Result<uint64_t> readCounter(const std::string& path) {
    Result<std::string> text = readText(path);
    if (!text) return text.status();
    std::optional<uint64_t> v = parseU64(trim(*text));
    if (!v) return Status(ErrorCode::Malformed, path + ": cannot parse '" + trim(*text) + "'");
    return *v;
}

// The value of the first of `keys` found in a memory.stat ("key value" lines).
Result<uint64_t> readStatKey(const std::string& path, std::initializer_list<const char*> keys) {
    Result<std::string> text = readText(path);
    if (!text) return text.status();
    for (const char* key : keys) {
        std::istringstream in(*text);
        std::string line;
        while (std::getline(in, line)) {
            std::istringstream fields(line);
            std::string k, v;
            if (!(fields >> k) || k != key) continue;
            fields >> v;
            std::optional<uint64_t> n = parseU64(v);
            if (!n) return Status(ErrorCode::Malformed, path + ": cannot parse '" + line + "'");
            return *n;
        }
    }
    std::string names;
    for (const char* key : keys)
        names += std::string(names.empty() ? "" : " or ") + key;
    return Status(ErrorCode::Malformed, path + ": no " + names + " line");
}

// One cgroup's limit and usage; limit nullopt: no limit at this level.
struct Level {
    std::optional<uint64_t> limit;
    uint64_t used = 0;
};

Result<Level> readLevelV2(const std::string& dir) {
    Level l;
    bool any = false;
    for (const char* name : {"memory.max", "memory.high"}) {
        const std::string path = dir + "/" + name;
        if (!std::filesystem::exists(path)) continue; // the root cgroup has neither
        any = true;
        Result<std::string> text = readText(path);
        if (!text) return text.status();
        Result<std::optional<uint64_t>> v = parseLimit(*text, path);
        if (!v) return v.status();
        if (*v && (!l.limit || **v < *l.limit)) l.limit = **v;
    }
    if (!any && !std::filesystem::is_directory(dir))
        return Status(ErrorCode::NotFound, dir + ": no such cgroup directory");
    if (!l.limit) return l;
    Result<uint64_t> current = readCounter(dir + "/memory.current");
    if (!current) return current.status();
    Result<uint64_t> inactive = readStatKey(dir + "/memory.stat", {"inactive_file"});
    if (!inactive) return inactive.status();
    l.used = *current - std::min(*current, *inactive);
    return l;
}

Result<Level> readLevelV1(const std::string& dir) {
    Level l;
    const std::string stat = dir + "/memory.stat";
    Result<uint64_t> limit = readStatKey(stat, {"hierarchical_memory_limit"});
    if (!limit) return limit.status();
    if (cgroupValueUnlimited(*limit)) return l;
    l.limit = *limit;
    Result<uint64_t> usage = readCounter(dir + "/memory.usage_in_bytes");
    if (!usage) return usage.status();
    Result<uint64_t> inactive = readStatKey(stat, {"total_inactive_file", "inactive_file"});
    if (!inactive) return inactive.status();
    l.used = *usage - std::min(*usage, *inactive);
    return l;
}

// The process's cgroup relative to the mount's root: "" for the root itself. A path outside the
// root (a cgroup namespace shows "/" while the mount, made outside it, shows the host's path; or
// "/.." for a process outside the namespace) maps to the mount's root: the deepest cgroup seen.
std::string relativeToMount(const std::string& root, const std::string& path) {
    if (path.find("/..") != std::string::npos) return "";
    if (root == "/") return path == "/" ? "" : path;
    if (path == root) return "";
    if (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
        path[root.size()] == '/')
        return path.substr(root.size());
    return "";
}

} // namespace

bool cgroupValueUnlimited(uint64_t value) {
    return value >= kUnlimitedFrom;
}

Result<MemoryCgroupLocation> locateMemoryCgroup(const CgroupPaths& paths) {
    const std::string mountinfoPath = paths.procRoot + "/self/mountinfo";
    Result<std::string> mountinfo = readText(mountinfoPath);
    if (!mountinfo) return mountinfo.status();
    std::vector<Mount> v1, v2;
    {
        std::istringstream in(*mountinfo);
        std::string line;
        while (std::getline(in, line)) {
            // "36 25 0:31 ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS"
            std::istringstream fields(line);
            std::vector<std::string> f;
            for (std::string w; fields >> w;)
                f.push_back(w);
            size_t dash = 0;
            while (dash < f.size() && f[dash] != "-")
                ++dash;
            if (dash < 5 || dash + 2 >= f.size()) {
                if (line.find("cgroup") != std::string::npos)
                    return Status(ErrorCode::Malformed,
                                  mountinfoPath + ": cannot parse '" + line + "'");
                continue;
            }
            const std::string& fstype = f[dash + 1];
            Mount m{unescapeMountPath(f[3]), unescapeMountPath(f[4])};
            if (fstype == "cgroup2") {
                v2.push_back(m);
            } else if (fstype == "cgroup" && dash + 3 < f.size()) {
                for (const std::string& opt : splitOn(f[dash + 3], ','))
                    if (opt == "memory") v1.push_back(m);
            }
        }
    }
    MemoryCgroupLocation out;
    if (v1.empty() && v2.empty()) return out; // no cgroup mounted: nothing limits us
    const int version = v1.empty() ? 2 : 1;
    const std::vector<Mount>& mounts = version == 1 ? v1 : v2;
    if (version == 2) {
        // A v2 hierarchy without the memory controller enabled has no memory limits.
        const std::string controllers =
            paths.fsRoot + mounts.front().mountPoint + "/cgroup.controllers";
        Result<std::string> text = readText(controllers);
        if (!text) return text.status();
        bool memory = false;
        std::istringstream in(*text);
        for (std::string w; in >> w;)
            memory = memory || w == "memory";
        if (!memory) return out;
    }

    // "ID:CONTROLLERS:PATH": v1 lists "memory" among the controllers, v2 is "0::PATH".
    const std::string cgroupPath = paths.procRoot + "/self/cgroup";
    Result<std::string> cgroups = readText(cgroupPath);
    if (!cgroups) return cgroups.status();
    std::optional<std::string> path;
    {
        std::istringstream in(*cgroups);
        std::string line;
        while (std::getline(in, line) && !path) {
            const size_t a = line.find(':');
            const size_t b = a == std::string::npos ? a : line.find(':', a + 1);
            if (b == std::string::npos) continue;
            const std::string controllers = line.substr(a + 1, b - a - 1);
            bool match = false;
            if (version == 2) {
                match = line.compare(0, a, "0") == 0 && controllers.empty();
            } else {
                for (const std::string& c : splitOn(controllers, ','))
                    match = match || c == "memory";
            }
            if (match) path = line.substr(b + 1);
        }
    }
    if (!path)
        return Status(ErrorCode::Malformed,
                      cgroupPath + (version == 2 ? ": no cgroup v2 line ('0::PATH')"
                                                 : ": no line for the memory controller"));

    // Bind mounts of the same hierarchy: the one whose root holds the process's cgroup.
    const Mount* mount = &mounts.front();
    for (const Mount& m : mounts)
        if (m.root == "/" || *path == m.root || path->rfind(m.root + "/", 0) == 0) {
            mount = &m;
            break;
        }
    out.version = version;
    out.mountDir = paths.fsRoot + mount->mountPoint;
    out.relPath = relativeToMount(mount->root, *path);
    return out;
}

Result<CgroupMemory> cgroupMemory(const CgroupPaths& paths) {
    Result<MemoryCgroupLocation> where = locateMemoryCgroup(paths);
    if (!where) return where.status();
    CgroupMemory out;
    out.version = where->version;
    if (out.version == 0) return out;
    const std::string& base = where->mountDir;
    std::string rel = where->relPath;
    while (true) {
        const std::string dir = base + rel;
        Result<Level> level = out.version == 2 ? readLevelV2(dir) : readLevelV1(dir);
        if (!level) return level.status();
        if (level->limit) {
            const uint64_t room = *level->limit > level->used ? *level->limit - level->used : 0;
            if (!out.limited || room < out.roomBytes) {
                out.limited = true;
                out.limitBytes = *level->limit;
                out.usedBytes = level->used;
                out.roomBytes = room;
                out.cgroupDir = dir;
            }
        }
        if (rel.empty()) break;
        rel = rel.substr(0, rel.rfind('/'));
    }
    return out;
}

} // namespace coli
