#include "runtime/session_kv_dir.h"

#include <algorithm>
#include <filesystem>
#include <sys/statvfs.h>
#include <tuple>

namespace coli {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t kMaxCap = uint64_t(20) << 30;

// The session id of "session-<id>.kv", or -1.
int64_t idOf(const fs::path& p) {
    const std::string n = p.filename().string();
    constexpr std::string_view kPrefix = "session-", kSuffix = ".kv";
    if (n.size() <= kPrefix.size() + kSuffix.size() || !n.starts_with(kPrefix) ||
        !n.ends_with(kSuffix))
        return -1;
    const std::string digits = n.substr(kPrefix.size(), n.size() - kPrefix.size() - kSuffix.size());
    if (digits.empty() || digits.size() > 18 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return -1;
    return std::stoll(digits);
}

} // namespace

std::string sessionKvDir(const std::string& databasePath) {
    // Per database, so two databases in one folder never share a session id's file.
    const fs::path db(databasePath);
    return (db.parent_path() / (db.stem().string() + ".kv")).string();
}

std::string sessionKvPath(const std::string& dir, int64_t sessionId) {
    return (fs::path(dir) / ("session-" + std::to_string(sessionId) + ".kv")).string();
}

uint64_t sessionKvBytes(const std::string& dir, int64_t sessionId) {
    std::error_code ec;
    const auto n = fs::file_size(sessionKvPath(dir, sessionId), ec);
    return ec ? 0 : uint64_t(n);
}

Status removeSessionKv(const std::string& dir, int64_t sessionId) {
    const std::string p = sessionKvPath(dir, sessionId);
    for (const std::string& f : {p, p + ".old"}) {
        std::error_code ec;
        fs::remove(f, ec);
        if (ec) return {ErrorCode::Io, f + ": cannot delete: " + ec.message()};
    }
    return {};
}

uint64_t defaultSessionKvCap(const std::string& dir) {
    fs::path p = dir;
    std::error_code ec;
    while (!p.empty() && !fs::exists(p, ec))
        p = p.parent_path();
    struct statvfs v {};
    if (p.empty() || ::statvfs(p.c_str(), &v) != 0) return kMaxCap;
    return std::min(kMaxCap, uint64_t(v.f_blocks) * uint64_t(v.f_frsize) / 10);
}

Result<std::vector<int64_t>> enforceSessionKvCap(const std::string& dir, uint64_t capBytes,
                                                 int64_t keep) {
    std::error_code ec;
    if (!fs::exists(dir, ec)) return std::vector<int64_t>{};
    struct Entry {
        fs::file_time_type written;
        int64_t id;
        uint64_t bytes;
    };
    std::vector<Entry> files;
    uint64_t total = 0;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const int64_t id = idOf(it->path());
        if (id < 0) continue;
        std::error_code e2;
        const uint64_t bytes = it->file_size(e2);
        const auto written = it->last_write_time(e2);
        if (e2) continue; // deleted meanwhile
        total += bytes;
        files.push_back({written, id, bytes});
    }
    if (ec) return Status(ErrorCode::Io, dir + ": cannot list the KV files: " + ec.message());
    std::sort(files.begin(), files.end(), [](const Entry& a, const Entry& b) {
        return std::tie(a.written, a.id) < std::tie(b.written, b.id);
    });
    std::vector<int64_t> evicted;
    for (const Entry& e : files) {
        if (total <= capBytes) break;
        if (e.id == keep) continue;
        COLI_RETURN_IF_ERROR(removeSessionKv(dir, e.id));
        total -= e.bytes;
        evicted.push_back(e.id);
    }
    return evicted;
}

} // namespace coli
