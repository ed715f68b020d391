#include "hub/file_download.h"

#include "core/strings.h"

#include "convert/sha256.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <thread>

namespace coli::hub {

namespace {

namespace fsys = std::filesystem;

// A repo path may not climb out of the download folder.
bool safeRelativePath(const std::string& p) {
    if (p.empty() || p[0] == '/' || p.find('\\') != std::string::npos ||
        p.find('\0') != std::string::npos)
        return false;
    size_t start = 0;
    for (;;) {
        const size_t slash = p.find('/', start);
        const std::string seg =
            p.substr(start, slash == std::string::npos ? p.npos : slash - start);
        if (seg.empty() || seg == "." || seg == "..") return false;
        if (slash == std::string::npos) return true;
        start = slash + 1;
    }
}

// Percent-encodes everything but RFC 3986's unreserved characters and '/'.
std::string encodePath(const std::string& p) {
    static const char* kHex = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : p) {
        if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
            out += char(c);
        } else {
            out += '%';
            out += kHex[c >> 4];
            out += kHex[c & 15];
        }
    }
    return out;
}

bool isLowerHex(const std::string& s, size_t n) {
    return s.size() == n && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// Size of `path`, or -1 when it does not exist.
int64_t sizeOf(const std::string& path) {
    std::error_code ec;
    const auto n = fsys::file_size(path, ec);
    return ec ? -1 : int64_t(n);
}

struct ContentRange {
    bool ok = false;
    uint64_t first = 0, last = 0, total = 0;
};

// "bytes FIRST-LAST/TOTAL" (RFC 9110 14.4); a '*' total is not usable here.
ContentRange parseContentRange(const std::string& v) {
    ContentRange r;
    unsigned long long a = 0, b = 0, t = 0;
    char tail = 0;
    if (std::sscanf(v.c_str(), "bytes %llu-%llu/%llu%c", &a, &b, &t, &tail) != 3) return r;
    if (a > b || b >= t) return r;
    r.ok = true;
    r.first = a;
    r.last = b;
    r.total = t;
    return r;
}

std::string fmtSeconds(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, s < 10 ? "%.1f s" : "%.0f s", s);
    return buf;
}

// What the server said about an error: its X-Error-Message, else the start of the body.
std::string serverSays(const HttpResponse& r, const std::string& body) {
    std::string m = r.header("x-error-message");
    if (m.empty()) m = body.substr(0, 200);
    std::replace(m.begin(), m.end(), '\n', ' ');
    return m.empty() ? std::string() : ": " + m;
}

// Network failures that a retry cannot fix (the peer's certificate is not trusted).
bool isPermanent(const Status& s) {
    return s.code() == ErrorCode::Network && isCertificateFailure(s);
}

// One request's outcome, as the retry loop needs it.
struct Attempt {
    uint64_t written = 0;    // bytes appended to the .part
    bool restart = false;    // discard the .part before the next attempt
    double retryAfter = -1;  // the server's Retry-After, seconds (-1: none)
    std::string retryReason; // non-empty: retry after a backoff
    Status fatal;            // non-OK: stop with this
};

class Downloader {
public:
    Downloader(HttpClient& client, const std::string& repo, const std::string& commit,
               const RepoFile& file, const std::string& dir, PartState& state,
               const RetryPolicy& policy, const FileProgressFn& progress,
               const std::atomic<bool>* cancel, convert::FileSystem& fs)
        : m_client(client), m_repo(repo), m_commit(commit), m_file(file), m_state(state),
          m_policy(policy), m_progress(progress), m_cancel(cancel), m_fs(fs) {
        m_dest = dir + "/" + file.path;
        m_part = m_dest + ".part";
        m_name = repo + "/" + file.path;
        m_progressState.path = file.path;
        m_progressState.bytesTotal = file.size;
    }

    Result<FileDownloadResult> run();

private:
    Status checkHashInputs() const;
    Result<bool> hashMatches(const std::string& path, std::string* got) const;
    Attempt fetch(uint64_t have);
    Status verifyAndInstall();
    void discardPart();
    bool cancelled() const { return m_cancel != nullptr && m_cancel->load(); }
    void report(const char* phase, uint64_t done);
    bool sleepFor(double seconds); // false when cancelled meanwhile

    HttpClient& m_client;
    std::string m_repo, m_commit;
    const RepoFile& m_file;
    PartState& m_state;
    const RetryPolicy& m_policy;
    const FileProgressFn& m_progress;
    const std::atomic<bool>* m_cancel;
    convert::FileSystem& m_fs;
    std::string m_dest, m_part, m_name;
    FileDownloadResult m_out;
    FileProgress m_progressState;
};

void Downloader::report(const char* phase, uint64_t done) {
    m_state.bytesDone = done;
    if (!m_progress) return;
    m_progressState.phase = phase;
    m_progressState.bytesDone = done;
    m_progressState.bytesTransferred = m_out.bytesTransferred;
    m_progressState.retries = m_out.retries;
    m_progress(m_progressState);
}

bool Downloader::sleepFor(double seconds) {
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::microseconds(int64_t(std::max(0.0, seconds) * 1e6));
    while (std::chrono::steady_clock::now() < until) {
        if (cancelled()) return false;
        std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
            std::chrono::milliseconds(50), until - std::chrono::steady_clock::now()));
    }
    return !cancelled();
}

void Downloader::discardPart() {
    std::error_code ec;
    fsys::remove(m_part, ec);
    m_state.etag.clear();
    m_state.bytesDone = 0;
}

Status Downloader::checkHashInputs() const {
    if (m_file.isLfs() ? !isLowerHex(asciiLower(m_file.lfsSha256), 64)
                       : !isLowerHex(asciiLower(m_file.blobId), 40))
        return {ErrorCode::InvalidArgument, m_name + ": the file tree gives no usable " +
                                                (m_file.isLfs() ? "LFS SHA-256" : "git blob id") +
                                                " to check it against"};
    return {};
}

Result<bool> Downloader::hashMatches(const std::string& path, std::string* got) const {
    auto h = m_file.isLfs() ? convert::sha256File(path) : gitBlobSha1(path);
    if (!h) return h.status();
    *got = h.value();
    return h.value() == asciiLower(m_file.isLfs() ? m_file.lfsSha256 : m_file.blobId);
}

Attempt Downloader::fetch(uint64_t have) {
    Attempt a;
    HttpRequest req;
    req.url = m_client.endpoint().base + "/" + m_repo + "/resolve/" + encodePath(m_commit) + "/" +
              encodePath(m_file.path);
    if (have > 0) {
        req.headers.emplace_back("Range", "bytes=" + std::to_string(have) + "-");
        // Without a recorded ETag the Range goes alone, as huggingface_hub sends it: the URL is
        // pinned to a commit (LFS objects are addressed by their SHA-256), and the hash check
        // catches anything else.
        if (!m_state.etag.empty()) req.headers.emplace_back("If-Range", m_state.etag);
    }
    req.connectTimeoutSeconds = m_policy.connectTimeoutSeconds;
    req.lowSpeedBytesPerSecond = m_policy.stallBytesPerSecond;
    req.lowSpeedSeconds = m_policy.stallSeconds;
    req.cancel = m_cancel;

    std::unique_ptr<convert::WritableFile> out;
    bool decided = false;
    bool badRange = false;
    std::string badRangeWhy;
    std::string errorBody;
    uint64_t lastReport = 0;
    const auto sink = [&](const HttpResponse& head, const char* data, size_t n) -> bool {
        const bool ok2xx = head.status == 200 || head.status == 206;
        if (!ok2xx) { // an error's body: kept (briefly) for the message
            if (errorBody.size() < 4096) errorBody.append(data, std::min<size_t>(n, 4096));
            return true;
        }
        m_out.bytesTransferred += n;
        if (!decided) {
            decided = true;
            const std::string enc = asciiLower(head.header("content-encoding"));
            if (!enc.empty() && enc != "identity") { // offsets would not be the file's
                m_client.setAbortReason(
                    Status(ErrorCode::Unsupported,
                           m_name + ": the server sent the file with Content-Encoding: " + enc +
                               " although identity encoding was asked"));
                return false;
            }
            Result<std::unique_ptr<convert::WritableFile>> f =
                std::unique_ptr<convert::WritableFile>();
            if (head.status == 206) {
                const ContentRange cr = parseContentRange(head.header("content-range"));
                if (!cr.ok || cr.first != have || cr.total != m_file.size) {
                    badRange = true;
                    badRangeWhy = "the server's Content-Range (" + head.header("content-range") +
                                  ") does not continue the partial file at " +
                                  std::to_string(have) + " of " + std::to_string(m_file.size) +
                                  " bytes: restarting it";
                    return false;
                }
                f = m_fs.openAppend(m_part);
            } else {
                // A 200 is the whole file: a server that ignores Range, or an If-Range whose
                // ETag no longer matches. Restart the .part with these bytes.
                if (have > 0) m_out.restarted = true;
                const std::string len = head.header("content-length");
                if (!len.empty() && std::strtoull(len.c_str(), nullptr, 10) != m_file.size) {
                    m_client.setAbortReason(
                        Status(ErrorCode::Malformed, m_name + ": the server sends " + len +
                                                         " bytes, the Hub's file tree says " +
                                                         std::to_string(m_file.size)));
                    return false;
                }
                have = 0;
                f = m_fs.create(m_part);
            }
            if (!f) {
                m_client.setAbortReason(f.status());
                return false;
            }
            out = std::move(f.value());
            const std::string etag = head.header("etag");
            if (!etag.empty()) m_state.etag = etag;
            report("downloading", have); // the caller may persist the ETag now
        }
        if (have + a.written + n > m_file.size) {
            m_client.setAbortReason(
                Status(ErrorCode::Malformed, m_name + ": the server sends more than the " +
                                                 std::to_string(m_file.size) +
                                                 " bytes the Hub's file tree lists"));
            return false;
        }
        if (Status s = out->write(data, n); !s.isOk()) {
            m_client.setAbortReason(s);
            return false;
        }
        a.written += n;
        if (a.written - lastReport >= (256u << 10) || have + a.written == m_file.size) {
            lastReport = a.written;
            report("downloading", have + a.written);
        }
        return true;
    };
    Result<HttpResponse> r = m_client.get(req, sink);
    if (out) {
        if (Status s = out->close(); !s.isOk() && r.isOk()) a.fatal = s;
        if (!a.fatal.isOk()) return a;
    }
    if (badRange) {
        a.restart = true;
        a.retryReason = badRangeWhy;
        return a;
    }
    if (!r) {
        const Status& s = r.status();
        if (s.code() == ErrorCode::Network && !isPermanent(s)) {
            a.retryReason = s.message();
            return a;
        }
        if (s.code() == ErrorCode::NoSpace)
            a.fatal = Status(ErrorCode::NoSpace,
                             s.message() + "; the partial file " + m_part +
                                 " is kept: free some space and download again to resume");
        else if (s.code() == ErrorCode::Cancelled)
            a.fatal =
                Status(ErrorCode::Cancelled,
                       m_name + ": download cancelled; the partial file " + m_part + " is kept");
        else if (s.code() == ErrorCode::Malformed) {
            discardPart();
            a.fatal = Status(ErrorCode::Malformed, s.message() + "; nothing was installed");
        } else {
            a.fatal = s;
        }
        return a;
    }
    const HttpResponse& resp = r.value();
    const long st = resp.status;
    if (st == 200 || st == 206) {
        if (have + a.written < m_file.size)
            a.retryReason = "the server ended the response after " +
                            std::to_string(have + a.written) + " of " +
                            std::to_string(m_file.size) + " bytes (incomplete)";
        return a;
    }
    const std::string says = serverSays(resp, errorBody);
    if (st == 401 || st == 403) {
        const std::string& src = m_client.endpoint().tokenSource;
        a.fatal = Status(
            ErrorCode::Unauthorized,
            m_name + ": HTTP " + std::to_string(st) + says +
                (m_client.endpoint().token.empty()
                     ? "; this repo is gated or private: accept its terms on the Hub and set "
                       "HF_TOKEN to an access token (or log in with `hf auth login`)"
                     : "; the token from " + (src.empty() ? std::string("the caller") : src) +
                           " was refused: check that it has access to this repo (set HF_TOKEN "
                           "to another token)"));
        return a;
    }
    if (st == 404) {
        a.fatal = Status(ErrorCode::NotFound, m_name + " at " + m_commit + ": HTTP 404" + says);
        return a;
    }
    if (st == 416) { // the .part is not a prefix the server can continue
        a.restart = true;
        a.retryReason = "HTTP 416 (range not satisfiable) at " + std::to_string(have) +
                        " bytes: restarting the file";
        return a;
    }
    if (st == 408 || st == 429 || st >= 500) {
        const auto now =
            std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
                .count();
        a.retryAfter = parseRetryAfter(resp.header("retry-after"), now);
        a.retryReason = "HTTP " + std::to_string(st) + says +
                        (a.retryAfter >= 0 ? " (Retry-After: " + fmtSeconds(a.retryAfter) + ")"
                                           : std::string());
        return a;
    }
    a.fatal = Status(ErrorCode::Network, m_name + ": HTTP " + std::to_string(st) + says);
    return a;
}

Status Downloader::verifyAndInstall() {
    report("verifying", m_file.size);
    std::string got;
    auto match = hashMatches(m_part, &got);
    if (!match) return match.status();
    if (!match.value()) {
        discardPart();
        return {ErrorCode::Malformed,
                m_name + ": hash mismatch: the Hub lists " +
                    (m_file.isLfs() ? "SHA-256 " + asciiLower(m_file.lfsSha256)
                                    : "git blob " + asciiLower(m_file.blobId)) +
                    ", the downloaded bytes have " + got +
                    "; the partial file was removed and nothing was installed"};
    }
    // The bytes must be on disk before the rename makes them the file.
    auto f = m_fs.openAppend(m_part);
    if (!f) return f.status();
    COLI_RETURN_IF_ERROR(f.value()->sync());
    COLI_RETURN_IF_ERROR(f.value()->close());
    COLI_RETURN_IF_ERROR(m_fs.rename(m_part, m_dest)); // fsyncs the folder
    m_state.etag.clear();
    report("done", m_file.size);
    return {};
}

Result<FileDownloadResult> Downloader::run() {
    if (!safeRelativePath(m_file.path))
        return Status(ErrorCode::InvalidArgument,
                      m_repo + ": refusing the file path '" + m_file.path +
                          "' (absolute, empty, or with . or .. segments)");
    COLI_RETURN_IF_ERROR(checkHashInputs());
    COLI_RETURN_IF_ERROR(checkUrlPolicy(m_client.endpoint().base));
    std::error_code ec;
    fsys::create_directories(fsys::path(m_dest).parent_path(), ec);
    if (ec)
        return Status(ErrorCode::Io, fsys::path(m_dest).parent_path().string() +
                                         ": cannot create the folder: " + ec.message());

    // Already there (an earlier run installed it): nothing to fetch.
    if (sizeOf(m_dest) == int64_t(m_file.size)) {
        report("verifying", m_file.size);
        std::string got;
        auto match = hashMatches(m_dest, &got);
        if (!match) return match.status();
        if (match.value()) {
            discardPart();
            m_out.alreadyInstalled = true;
            report("done", m_file.size);
            return m_out;
        }
    }

    int failuresInARow = 0;
    for (;;) {
        if (cancelled())
            return Status(ErrorCode::Cancelled,
                          m_name + ": download cancelled; the partial file " + m_part + " is kept");
        int64_t have = sizeOf(m_part);
        if (have > int64_t(m_file.size)) { // longer than the file: not a prefix of it
            discardPart();
            m_out.restarted = true;
            have = -1;
        }
        if (have == int64_t(m_file.size) || (m_file.size == 0 && have < 0)) {
            if (have < 0) { // an empty file: nothing to fetch
                auto f = m_fs.create(m_part);
                if (!f) return f.status();
                COLI_RETURN_IF_ERROR(f.value()->close());
            }
            COLI_RETURN_IF_ERROR(verifyAndInstall());
            return m_out;
        }
        report("downloading", uint64_t(std::max<int64_t>(0, have)));
        Attempt a = fetch(uint64_t(std::max<int64_t>(0, have)));
        if (!a.fatal.isOk()) return a.fatal;
        if (a.restart) {
            discardPart();
            m_out.restarted = true;
        }
        if (a.retryReason.empty()) continue;   // complete: verified on the next turn
        if (a.written > 0) failuresInARow = 0; // progress: the count starts again
        if (++failuresInARow > m_policy.maxRetries)
            return Status(ErrorCode::Network, m_name + ": giving up after " +
                                                  std::to_string(m_policy.maxRetries) +
                                                  " retries without progress: " + a.retryReason);
        ++m_out.retries;
        double wait = m_policy.initialBackoffSeconds * std::pow(2.0, failuresInARow - 1);
        if (a.retryAfter >= 0) wait = a.retryAfter;
        wait = std::min(wait, m_policy.maxBackoffSeconds);
        m_progressState.note =
            a.retryReason + "; retry " + std::to_string(m_out.retries) + " in " + fmtSeconds(wait);
        report("waiting", uint64_t(std::max<int64_t>(0, sizeOf(m_part))));
        if (!sleepFor(wait))
            return Status(ErrorCode::Cancelled,
                          m_name + ": download cancelled; the partial file " + m_part + " is kept");
    }
}

} // namespace

Result<FileDownloadResult> downloadFile(HttpClient& client, const std::string& repo,
                                        const std::string& commit, const RepoFile& file,
                                        const std::string& dir, PartState& state,
                                        const RetryPolicy& policy, const FileProgressFn& progress,
                                        const std::atomic<bool>* cancel, convert::FileSystem& fs) {
    Downloader d(client, repo, commit, file, dir, state, policy, progress, cancel, fs);
    return d.run();
}

} // namespace coli::hub
