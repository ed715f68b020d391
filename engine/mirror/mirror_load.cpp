#include "mirror/mirror_load.h"

#include "core/regular_file.h"
#include "diskbench/disk_bandwidth.h"
#include "mirror/mirror_receipt.h"

#include <fmt/core.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <unistd.h>
#include <vector>

namespace coli::mirror {

namespace {

// Closes a descriptor at scope exit.
struct Fd {
    int fd = -1;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

Status readAt(int fd, const std::string& path, uint64_t offset, uint64_t n, uint8_t* out) {
    while (n > 0) {
        const ssize_t got = ::pread(fd, out, n, off_t(offset));
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return Status(ErrorCode::Io, path + ": read failed: " + std::strerror(errno));
        if (got == 0) return Status(ErrorCode::Io, path + ": ends early");
        out += got;
        offset += uint64_t(got);
        n -= uint64_t(got);
    }
    return {};
}

// Bytes to compare (see kHeaderCompareBytes), from the primary's first 8 bytes.
Result<uint64_t> compareLength(int fd, const std::string& path, uint64_t size) {
    uint64_t n = std::min(size, kHeaderCompareBytes);
    if (path.ends_with(".safetensors") && size >= 8) {
        uint8_t b[8];
        COLI_RETURN_IF_ERROR(readAt(fd, path, 0, 8, b));
        uint64_t header = 0;
        for (int i = 7; i >= 0; --i)
            header = (header << 8) | b[i];
        // A header longer than the file is the primary's problem (its load reports it); compare
        // what exists.
        if (header <= size - 8) n = std::max(n, 8 + header);
    }
    return n;
}

std::string canonicalPath(const std::string& path) {
    std::error_code ec;
    const std::filesystem::path p = std::filesystem::weakly_canonical(path, ec);
    return ec ? path : p.string();
}

// The disk's read bandwidth over `paths`, bytes/s.
Result<double> measure(const std::vector<std::string>& paths, uint64_t bytes) {
    Result<std::vector<diskbench::ReadFile>> files = diskbench::statFiles(paths);
    if (!files) return files.status();
    diskbench::BandwidthOptions o;
    o.totalBytes = bytes;
    o.requestBytes = 1ull << 20;
    Result<diskbench::DiskBandwidth> bw = diskbench::measureReadBandwidth(*files, o);
    if (!bw) return bw.status();
    return bw->bytesPerSecond;
}

} // namespace

std::string checkDiskWeights(double primary, double mirror) {
    if (!std::isfinite(primary) || !std::isfinite(mirror) || primary < 0 || mirror < 0)
        return fmt::format("the weights must be numbers >= 0 (got {}, {})", primary, mirror);
    if (primary + mirror <= 0) return "the weights must not both be 0";
    return {};
}

Status checkMirrorFile(const std::string& primaryPath, const std::string& mirrorPath,
                       uint64_t expectedSize) {
    uint64_t psize = 0, msize = 0;
    Result<int> pfd = openRegularFile(primaryPath, &psize);
    if (!pfd) return pfd.status();
    Fd p{*pfd};
    Result<int> mfd = openRegularFile(mirrorPath, &msize);
    if (!mfd) return mfd.status();
    Fd m{*mfd};
    if (psize != expectedSize)
        return Status(ErrorCode::Malformed,
                      fmt::format("{}: size {} bytes, the receipt's {} (the model changed since "
                                  "staging)",
                                  primaryPath, psize, expectedSize));
    if (msize != psize)
        return Status(ErrorCode::Malformed,
                      fmt::format("{}: size {} bytes, the primary's {}", mirrorPath, msize, psize));
    Result<uint64_t> n = compareLength(p.fd, primaryPath, psize);
    if (!n) return n.status();
    constexpr uint64_t kChunk = 1 << 20;
    std::vector<uint8_t> a(std::min(*n, kChunk)), b(a.size());
    for (uint64_t at = 0; at < *n; at += kChunk) {
        const uint64_t len = std::min(kChunk, *n - at);
        COLI_RETURN_IF_ERROR(readAt(p.fd, primaryPath, at, len, a.data()));
        COLI_RETURN_IF_ERROR(readAt(m.fd, mirrorPath, at, len, b.data()));
        if (std::memcmp(a.data(), b.data(), len) != 0)
            return Status(
                ErrorCode::Malformed,
                fmt::format("{}: its first {} bytes differ from the primary's", mirrorPath, *n));
    }
    return {};
}

PreparedMirror prepareMirror(const std::string& modelDir, const MirrorLoadOptions& o) {
    PreparedMirror out;
    out.setup.dir = o.dir;
    const std::string tag = "mirror " + o.dir + ": ";
    Result<MirrorReceipt> receipt = readMirrorReceipt(o.dir);
    if (!receipt) {
        out.warnings.push_back(tag + receipt.status().message() + "; not used");
        return out;
    }
    std::vector<std::string> primaries, mirrors;
    for (const MirrorFile& f : receipt->files) {
        const std::string primary = modelDir + "/" + f.path;
        const std::string copy = o.dir + "/" + f.path;
        if (Status s = checkMirrorFile(primary, copy, f.size); !s.isOk()) {
            out.warnings.push_back(tag + s.message() + "; the primary serves " + f.path);
            continue;
        }
        out.setup.files[canonicalPath(primary)] = copy;
        primaries.push_back(primary);
        mirrors.push_back(copy);
    }
    if (out.setup.files.empty()) {
        if (!receipt->files.empty()) out.warnings.push_back(tag + "no usable file; not used");
        return out;
    }
    double wp = 1, wm = 1;
    if (o.weights) {
        std::tie(wp, wm) = *o.weights;
    } else {
        Result<double> p = measure(primaries, o.measureBytes);
        Result<double> m = p ? measure(mirrors, o.measureBytes) : Result<double>(p.status());
        if (p && m && *p > 0 && *m > 0) {
            wp = *p;
            wm = *m;
            out.setup.measured = true;
        } else {
            out.warnings.push_back(tag + "cannot measure the disks (" +
                                   (p ? m.status().message() : p.status().message()) +
                                   "); the reads are split evenly");
        }
    }
    out.setup.primaryWeight = wp;
    out.setup.mirrorWeight = wm;
    out.setup.share = wm / (wp + wm);
    return out;
}

} // namespace coli::mirror
