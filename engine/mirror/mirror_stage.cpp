#include "mirror/mirror_stage.h"

#include "convert/file_digest.h"
#include "convert/sha256.h"
#include "core/regular_file.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace coli::mirror {

namespace fs = std::filesystem;

namespace {

constexpr size_t kPiece = size_t(4) << 20;

class Stager {
public:
    Stager(const MirrorPlan& plan, const StageOptions& o)
        : m_plan(plan), m_opt(o), m_fs(o.fs ? *o.fs : convert::posixFileSystem()),
          m_start(Clock::now()) {}

    Result<StageReport> run() {
        const std::vector<std::string> paths = m_plan.stagePaths();
        if (paths.empty())
            return Status(ErrorCode::InvalidArgument,
                          "nothing to stage into " + m_plan.mirrorDir +
                              ": no file of the model fits there (see `coli mirror plan`)");
        COLI_RETURN_IF_ERROR(removeStaleTemporaries());
        for (const std::string& p : paths) {
            std::error_code ec;
            m_total += 2 * uint64_t(fs::file_size(primary(p), ec));
        }
        m_count = int(paths.size());
        for (m_index = 0; m_index < m_count; ++m_index)
            COLI_RETURN_IF_ERROR(stageOne(paths[size_t(m_index)]));

        MirrorReceipt r;
        std::error_code ec;
        const fs::path abs = fs::weakly_canonical(fs::absolute(m_plan.modelDir), ec);
        r.primary = ec ? fs::absolute(m_plan.modelDir).lexically_normal().string() : abs.string();
        r.createdMs = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
        r.files = m_report.files;
        if (r.files.empty())
            return Status(ErrorCode::InvalidArgument,
                          "nothing staged into " + m_plan.mirrorDir +
                              ": every planned file is in conflict with a file already there");
        // Last: a mirror folder with a receipt is complete.
        COLI_RETURN_IF_ERROR(onMirror(writeMirrorReceipt(m_plan.mirrorDir, r)));
        m_report.receiptPath = (fs::path(m_plan.mirrorDir) / kMirrorReceiptName).string();
        m_report.seconds = seconds();
        return std::move(m_report);
    }

    bool mirrorSide() const { return m_mirrorSide; }

private:
    using Clock = std::chrono::steady_clock;

    // Marks a failure as the mirror's (see StageOptions::mirrorSide).
    Status onMirror(Status st) {
        if (!st) m_mirrorSide = true;
        return st;
    }

    std::string primary(const std::string& p) const {
        return (fs::path(m_plan.modelDir) / p).string();
    }
    std::string mirror(const std::string& p) const {
        return (fs::path(m_plan.mirrorDir) / p).string();
    }
    double seconds() const { return std::chrono::duration<double>(Clock::now() - m_start).count(); }
    bool cancelled() const { return m_opt.cancel && m_opt.cancel->load(std::memory_order_relaxed); }

    void report(const char* phase, const std::string& path, uint64_t fileDone, uint64_t size) {
        if (!m_opt.progress) return;
        StageProgress p;
        p.phase = phase;
        p.path = path;
        p.fileIndex = m_index;
        p.fileCount = m_count;
        p.fileDone = fileDone;
        p.fileBytes = size;
        p.workDone = m_done;
        p.workTotal = m_total;
        p.seconds = seconds();
        m_opt.progress(p);
    }

    Status removeStaleTemporaries() {
        for (const std::string& p : m_plan.staleTemporaries) {
            const std::string t = mirror(p) + kPartialSuffix;
            struct stat s {};
            if (::lstat(t.c_str(), &s) != 0 || !S_ISREG(s.st_mode)) continue; // only our files
            if (::unlink(t.c_str()) != 0 && errno != ENOENT)
                return onMirror(Status(ErrorCode::Io, t +
                                                          ": cannot remove this stale temporary "
                                                          "copy: " +
                                                          std::strerror(errno)));
            m_report.removedTemporaries.push_back(p);
        }
        return {};
    }

    // The hash of a file with progress, counting into the stage's work.
    Result<convert::FileDigests> hash(const char* phase, const std::string& rel,
                                      const std::string& file, uint64_t size, bool dropCache) {
        uint64_t fileDone = 0;
        report(phase, rel, 0, size);
        convert::DigestRequest what;
        what.dropCache = dropCache;
        return convert::hashFile(
            file, what,
            [&](uint64_t n) {
                fileDone += n;
                m_done += n;
                report(phase, rel, fileDone, size);
            },
            m_opt.cancel);
    }

    Status stageOne(const std::string& rel) {
        const std::string src = primary(rel), dst = mirror(rel);
        uint64_t size = 0;
        auto in = openRegularFile(src, &size);
        if (!in) return in.status();
        ::close(in.value());
        struct stat s {};
        if (::lstat(dst.c_str(), &s) == 0) {
            if (S_ISREG(s.st_mode) && uint64_t(s.st_size) == size) return checkKept(rel, size);
            m_report.conflicts.push_back(rel + ": " + fileTypeName(unsigned(s.st_mode)) +
                                         " of another size is in the mirror under this name");
            m_done += 2 * size;
            return {};
        }
        return copy(rel, size);
    }

    // A file an earlier stage finished: kept when it still equals the primary.
    Status checkKept(const std::string& rel, uint64_t size) {
        auto copyHash = hash("checking", rel, mirror(rel), size, false);
        if (!copyHash)
            return copyHash.status().code() == ErrorCode::Cancelled ? copyHash.status()
                                                                    : onMirror(copyHash.status());
        auto primaryHash = hash("checking", rel, primary(rel), size, false);
        if (!primaryHash) return primaryHash.status();
        if (copyHash.value().sha256 != primaryHash.value().sha256) {
            m_report.conflicts.push_back(rel + ": the file in the mirror differs from the "
                                               "primary (SHA-256); it was left alone");
            return {};
        }
        m_report.files.push_back({rel, size, primaryHash.value().sha256});
        ++m_report.kept;
        return {};
    }

    Status copy(const std::string& rel, uint64_t size) {
        const std::string src = primary(rel), dst = mirror(rel), tmp = dst + kPartialSuffix;
        std::error_code ec;
        fs::create_directories(fs::path(dst).parent_path(), ec);
        if (ec)
            return onMirror(
                Status(ErrorCode::Io, fs::path(dst).parent_path().string() +
                                          ": cannot create the folder: " + ec.message()));
        uint64_t expected = 0;
        auto opened = openRegularFile(src, &expected);
        if (!opened) return opened.status();
        int fd = opened.value();
        struct stat before {};
        ::fstat(fd, &before);
        // Closes the primary once, whichever way the copy ends.
        const auto close = [&fd] {
            if (fd >= 0) ::close(fd);
            fd = -1;
        };

        auto out = m_fs.create(tmp);
        if (!out) {
            close();
            return onMirror(out.status());
        }
        const std::string kept = "the partial copy " + tmp + " is kept";
        const auto writeFailed = [&](const Status& st) {
            close();
            m_mirrorSide = true;
            if (st.code() == ErrorCode::NoSpace)
                return Status(ErrorCode::NoSpace,
                              "the mirror's disk is full: " + st.message() + " while staging " +
                                  rel + "; " + kept +
                                  "; free space on that disk (or lower --budget-gib) and run the "
                                  "same command again");
            return Status(st.code(), st.message() + " while staging " + rel + "; " + kept);
        };
        convert::Sha256 h;
        std::vector<unsigned char> buf(kPiece);
        uint64_t copied = 0;
        report("copying", rel, 0, size);
        for (;;) {
            if (cancelled()) {
                close();
                return Status(ErrorCode::Cancelled, "interrupted while staging " + rel + "; " +
                                                        kept + " (the next run restarts it)");
            }
            const ssize_t got = ::read(fd, buf.data(), buf.size());
            if (got < 0) {
                if (errno == EINTR) continue;
                const int err = errno;
                close();
                return Status(ErrorCode::Io, src + ": read failed: " + std::strerror(err));
            }
            if (got == 0) break;
            h.update(buf.data(), size_t(got));
            if (Status st = out.value()->write(buf.data(), size_t(got)); !st)
                return writeFailed(st);
            copied += uint64_t(got);
            m_done += uint64_t(got);
            report("copying", rel, copied, size);
        }
        struct stat after {};
        ::fstat(fd, &after);
        close();
        if (copied != expected || after.st_size != before.st_size ||
            after.st_mtim.tv_sec != before.st_mtim.tv_sec ||
            after.st_mtim.tv_nsec != before.st_mtim.tv_nsec)
            return Status(ErrorCode::Io, src + ": the file changed while it was copied to the "
                                               "mirror; run the same command again");
        if (Status st = out.value()->sync(); !st) return writeFailed(st);
        if (Status st = out.value()->close(); !st) return writeFailed(st);
        const std::string want = h.finishHex();

        auto back = hash("verifying", rel, tmp, size, true);
        if (!back)
            return back.status().code() == ErrorCode::Cancelled ? back.status()
                                                                : onMirror(back.status());
        if (back.value().sha256 != want || back.value().bytes != copied) {
            ::unlink(tmp.c_str());
            return onMirror(
                Status(ErrorCode::Io, tmp + ": the copy of " + rel +
                                          " reads back different from the primary (SHA-256); "
                                          "it was removed: check the mirror's disk"));
        }
        // Never over another file: one may have appeared since the plan.
        struct stat s {};
        if (::lstat(dst.c_str(), &s) == 0) {
            m_report.conflicts.push_back(rel +
                                         ": a file appeared under this name while it was "
                                         "staged; it was left alone (the copy is " +
                                         tmp + ")");
            return {};
        }
        COLI_RETURN_IF_ERROR(onMirror(m_fs.rename(tmp, dst)));
        m_report.files.push_back({rel, copied, want});
        ++m_report.copied;
        m_report.bytesCopied += copied;
        return {};
    }

    const MirrorPlan& m_plan;
    const StageOptions& m_opt;
    convert::FileSystem& m_fs;
    Clock::time_point m_start;
    StageReport m_report;
    uint64_t m_done = 0, m_total = 0;
    int m_index = 0, m_count = 0;
    bool m_mirrorSide = false;
};

} // namespace

Result<StageReport> stageMirror(const MirrorPlan& plan, const StageOptions& options) {
    Stager stager(plan, options);
    auto r = stager.run();
    if (options.mirrorSide) *options.mirrorSide = !r && stager.mirrorSide();
    return r;
}

} // namespace coli::mirror
