// gitBlobSha1 (declared in file_download.h): the id git gives a file's bytes, which the Hub's tree
// lists as "oid" and which checks a non-LFS file. One read through convert::hashFile.
#include "convert/file_digest.h"
#include "hub/file_download.h"

namespace coli::hub {

Result<std::string> gitBlobSha1(const std::string& path) {
    convert::DigestRequest what;
    what.sha256 = false;
    what.gitBlobSha1 = true;
    auto d = convert::hashFile(path, what);
    if (!d) return d.status();
    return d->gitBlobSha1;
}

} // namespace coli::hub
