#include "mirror/mirror_verify.h"

#include "convert/file_digest.h"
#include "core/regular_file.h"

#include <chrono>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace coli::mirror {

namespace fs = std::filesystem;

namespace {

// The folder as the receipt records it (stage: weakly_canonical of the absolute path).
std::string canonical(const std::string& dir) {
    std::error_code ec;
    const fs::path p = fs::weakly_canonical(fs::absolute(dir), ec);
    return ec ? fs::absolute(dir).lexically_normal().string() : p.string();
}

} // namespace

Result<VerifyReport> verifyMirror(const std::string& modelDir, const std::string& mirrorDir,
                                  const VerifyProgressFn& progress,
                                  const std::atomic<bool>* cancel) {
    const auto start = std::chrono::steady_clock::now();
    auto receipt = readMirrorReceipt(mirrorDir);
    if (!receipt) return receipt.status();
    VerifyReport rep;
    rep.receipt = receipt.value();
    const MirrorReceipt& r = rep.receipt;
    if (canonical(r.primary) != canonical(modelDir))
        rep.findings.push_back({kMirrorReceiptName, "the receipt mirrors " + r.primary + ", not " +
                                                        canonical(modelDir)});
    uint64_t total = 0;
    for (const MirrorFile& f : r.files)
        total += f.size;
    VerifyProgress p;
    p.fileCount = int(r.files.size());
    p.bytesTotal = total;
    const auto tell = [&] {
        if (!progress) return;
        p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        progress(p);
    };
    for (size_t i = 0; i < r.files.size(); ++i) {
        const MirrorFile& f = r.files[i];
        p.fileIndex = int(i);
        p.path = f.path;
        const uint64_t fileStart = p.bytesDone;
        tell();
        const auto bad = [&](const std::string& why) {
            rep.findings.push_back({f.path, why});
            p.bytesDone = fileStart + f.size;
        };
        const std::string copy = (fs::path(mirrorDir) / f.path).string();
        const std::string primary = (fs::path(modelDir) / f.path).string();
        struct stat s {};
        if (::stat(primary.c_str(), &s) != 0 || !S_ISREG(s.st_mode)) {
            bad("the primary " + primary + " is missing or not a regular file");
            continue;
        }
        if (uint64_t(s.st_size) != f.size) {
            bad("the primary " + primary + " has " + std::to_string(s.st_size) +
                " bytes, the receipt " + std::to_string(f.size) +
                ": the model changed since staging (stage the mirror again)");
            continue;
        }
        uint64_t size = 0;
        auto opened = openRegularFile(copy, &size);
        if (!opened) {
            bad(opened.status().message());
            continue;
        }
        ::close(opened.value());
        if (size != f.size) {
            bad("the copy has " + std::to_string(size) + " bytes, the receipt " +
                std::to_string(f.size) + " (truncated or altered)");
            continue;
        }
        auto d = convert::hashFile(
            copy, convert::DigestRequest{},
            [&](uint64_t n) {
                p.bytesDone += n;
                rep.bytesHashed += n;
                tell();
            },
            cancel);
        if (!d) {
            if (d.status().code() == ErrorCode::Cancelled) return d.status();
            bad(d.status().message());
            continue;
        }
        if (d.value().sha256 != f.sha256) {
            bad("SHA-256 differs from the receipt's: the copy was altered or the disk damaged "
                "it (stage the mirror again after removing " +
                copy + ")");
            continue;
        }
        ++rep.filesOk;
    }
    rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return rep;
}

} // namespace coli::mirror
