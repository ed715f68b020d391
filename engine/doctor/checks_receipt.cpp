// The download receipt's sizes: cheap, and the plainest sign of an incomplete download.
#include "core/regular_file.h"
#include "doctor/doctor_context.h"

#include <cerrno>
#include <sys/stat.h>
#include <unistd.h>

namespace coli::doctor::detail {

void checkReceiptSizes(Context& c) {
    for (const hub::RepoFile& f : c.receipt->files) {
        const Severity sev = engineReads(f.path) ? Severity::Error : Severity::Warning;
        struct stat st {};
        if (::lstat(c.path(f.path).c_str(), &st) != 0 && errno == ENOENT) {
            c.add(sev, f.path,
                  "listed by " + std::string(hub::kDownloadReceiptName) + " (" + grouped(f.size) +
                      " bytes) but missing",
                  c.replaceAction(f.path));
            continue;
        }
        uint64_t size = 0;
        auto fd = openRegularFile(c.path(f.path), &size);
        if (!fd) {
            c.add(sev, f.path, c.bare(fd.status().message(), f.path), c.replaceAction(f.path));
            continue;
        }
        ::close(fd.value());
        if (size == f.size) continue;
        c.add(sev, f.path,
              grouped(size) + " bytes, the download receipt expects " + grouped(f.size) +
                  (size < f.size ? ": the file is incomplete"
                                 : ": the file is not the one downloaded"),
              c.replaceAction(f.path));
    }
}

} // namespace coli::doctor::detail
