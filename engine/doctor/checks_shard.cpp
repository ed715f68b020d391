// One safetensors shard, as both model kinds store their weights.
#include "core/regular_file.h"
#include "doctor/doctor_context.h"
#include "io/file_io.h"
#include "io/safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>
#include <vector>

namespace coli::doctor::detail {
namespace {

// The size the file must have: 8 + header length + the end of the last tensor, when the header
// parses and its tensors lie back to back from offset 0 (as every writer we know lays them out;
// otherwise SafetensorsFile::open judges the file and says why). nullopt when it cannot tell.
std::optional<uint64_t> sizeFromHeader(int fd, uint64_t fileSize, const std::string& path) {
    constexpr uint64_t kMaxHeader = uint64_t(100) << 20; // as io/safetensors.h
    if (fileSize < 8) return std::nullopt;
    unsigned char len[8];
    if (!io_detail::preadAll(fd, 0, 8, len, path).isOk()) return std::nullopt;
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i)
        n = (n << 8) | len[i];
    if (n > kMaxHeader || 8 + n > fileSize) return std::nullopt;
    std::string text(n, '\0');
    if (!io_detail::preadAll(fd, 8, n, text.data(), path).isOk()) return std::nullopt;
    const nlohmann::json h = nlohmann::json::parse(text, nullptr, false);
    if (h.is_discarded() || !h.is_object()) return std::nullopt;
    std::vector<std::pair<uint64_t, uint64_t>> spans;
    for (auto it = h.begin(); it != h.end(); ++it) {
        if (it.key() == "__metadata__") continue;
        const auto& e = it.value();
        if (!e.is_object() || !e.contains("data_offsets")) return std::nullopt;
        const auto& o = e["data_offsets"];
        if (!o.is_array() || o.size() != 2 || !o[0].is_number_unsigned() ||
            !o[1].is_number_unsigned())
            return std::nullopt;
        spans.emplace_back(o[0].get<uint64_t>(), o[1].get<uint64_t>());
    }
    std::sort(spans.begin(), spans.end());
    uint64_t end = 0;
    for (const auto& [b, e] : spans) {
        if (b != end || e < b) return std::nullopt;
        end = e;
    }
    if (end > UINT64_MAX - 8 - n) return std::nullopt;
    return 8 + n + end;
}

} // namespace

std::unique_ptr<SafetensorsFile> checkShard(Context& c, const std::string& file,
                                            const std::string& listedBy,
                                            std::optional<uint64_t> expectedSize,
                                            const std::string& expectedBy) {
    if (c.isBroken(file)) return nullptr;
    c.step("checking", file);
    const std::string p = c.path(file);
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 && errno == ENOENT) {
        c.add(Severity::Error, file, "listed by " + listedBy + " but missing",
              c.replaceAction(file));
        return nullptr;
    }
    uint64_t size = 0;
    auto fd = openRegularFile(p, &size);
    if (!fd) {
        c.add(Severity::Error, file, c.bare(fd.status().message(), file), c.replaceAction(file));
        return nullptr;
    }
    const std::optional<uint64_t> needed = sizeFromHeader(fd.value(), size, p);
    ::close(fd.value());
    if (expectedSize && size != *expectedSize) {
        c.add(Severity::Error, file,
              grouped(size) + " bytes, " + expectedBy + " expects " + grouped(*expectedSize) +
                  (size < *expectedSize ? ": the file is incomplete"
                                        : ": the file is not the one " + expectedBy + " describes"),
              c.replaceAction(file));
        return nullptr;
    }
    if (needed && size < *needed) {
        c.add(Severity::Error, file,
              grouped(size) + " bytes, its safetensors header's tensors need " + grouped(*needed) +
                  ": the file is incomplete",
              c.replaceAction(file));
        return nullptr;
    }
    auto st_file = SafetensorsFile::open(p);
    if (!st_file) {
        c.add(Severity::Error, file,
              "the safetensors header is invalid: " + c.bare(st_file.status().message(), file),
              c.replaceAction(file));
        return nullptr;
    }
    if (needed && size > *needed) {
        c.add(Severity::Warning, file,
              grouped(size - *needed) + " bytes after the last tensor's data (the file has " +
                  grouped(size) + " bytes, its header's tensors end at " + grouped(*needed) +
                  "): the reference safetensors reader refuses such a file, and the engine "
                  "ignores the extra bytes",
              "check it with coli doctor --deep, or " + c.replaceAction(file));
    }
    ++c.report.filesChecked;
    return std::move(st_file.value());
}

} // namespace coli::doctor::detail
