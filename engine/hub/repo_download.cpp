#include "hub/repo_download.h"

#include "hub/download_receipt.h"
#include "storage/database.h"
#include "storage/downloads.h"

#include <chrono>
#include <deque>
#include <filesystem>
#include <map>
#include <optional>

namespace coli::hub {

namespace {

namespace fsys = std::filesystem;
using Clock = std::chrono::steady_clock;

int64_t unixMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// Rate over a sliding window of (time, bytes received) samples.
class RateMeter {
public:
    void add(Clock::time_point t, uint64_t bytes) {
        m_samples.push_back({t, bytes});
        while (m_samples.size() > 2 && t - m_samples.front().first > std::chrono::seconds(5))
            m_samples.pop_front();
    }
    double bytesPerSecond() const {
        if (m_samples.size() < 2) return 0;
        const double dt =
            std::chrono::duration<double>(m_samples.back().first - m_samples.front().first).count();
        if (dt < 0.2) return 0;
        return double(m_samples.back().second - m_samples.front().second) / dt;
    }

private:
    std::deque<std::pair<Clock::time_point, uint64_t>> m_samples;
};

std::string absoluteDir(const std::string& dir) {
    std::error_code ec;
    fsys::path p = fsys::weakly_canonical(fsys::absolute(dir), ec);
    if (ec) p = fsys::absolute(dir).lexically_normal();
    std::string s = p.string();
    while (s.size() > 1 && s.back() == '/')
        s.pop_back();
    return s;
}

// The record's view of a file, keyed by path; only trusted when the hashes still agree.
struct Previous {
    std::string etag;
    storage::DownloadFileState state = storage::DownloadFileState::Pending;
};

} // namespace

Result<RepoDownloadResult> downloadRepo(HubApi& api, const RepoDownloadOptions& o) {
    convert::FileSystem& fs = o.fs ? *o.fs : convert::posixFileSystem();
    RepoPlanRequest req = o.request;
    req.dir = absoluteDir(req.dir);
    const std::string endpoint = api.http().endpoint().base;
    RepoProgress progress;
    progress.repo = req.repo;
    progress.phase = "planning";
    if (o.progress) o.progress(progress);

    // A paused or interrupted download of the same repo into the same folder resumes at its
    // commit, so its .parts and ETags stay valid even if the branch moved meanwhile.
    std::optional<storage::DownloadStore> store;
    std::map<std::string, Previous> previous;
    if (o.record) {
        store.emplace(*o.record);
        auto old = store->findByDir(req.dir);
        if (!old.isOk()) return old.status();
        if (old.value() && old.value()->repo == req.repo && old.value()->revision == req.revision &&
            old.value()->endpoint == endpoint && old.value()->includes == req.includes &&
            old.value()->state != storage::DownloadState::Done &&
            old.value()->state != storage::DownloadState::Cancelled && req.commit.empty()) {
            req.commit = old.value()->commit;
            for (const auto& f : old.value()->files)
                previous[f.path + "\n" + f.blobId + "\n" + f.lfsSha256] = {f.etag, f.state};
        }
    }
    api.setCancel(o.stop);
    auto planned = planRepoDownload(api, req, fs);
    api.setCancel(nullptr);
    if (!planned.isOk()) return planned.status();
    RepoDownloadResult result;
    result.plan = std::move(planned.value());
    const RepoPlan& plan = result.plan;
    const std::string& commit = plan.info.commit;

    std::error_code ec;
    fsys::create_directories(req.dir, ec);
    if (ec) return Status(ErrorCode::Io, req.dir + ": cannot create the folder: " + ec.message());

    std::vector<PartState> parts(plan.files.size());
    if (store) {
        storage::DownloadRecord rec;
        rec.repo = req.repo;
        rec.revision = req.revision;
        rec.commit = commit;
        rec.endpoint = endpoint;
        rec.dir = req.dir;
        rec.includes = req.includes;
        for (size_t i = 0; i < plan.files.size(); ++i) {
            const RepoFile& f = plan.files[i];
            storage::DownloadFileRecord fr;
            fr.path = f.path;
            fr.size = f.size;
            fr.blobId = f.blobId;
            fr.lfsSha256 = f.lfsSha256;
            auto it = previous.find(f.path + "\n" + f.blobId + "\n" + f.lfsSha256);
            if (it != previous.end()) {
                fr.etag = it->second.etag;
                fr.state = it->second.state == storage::DownloadFileState::Done
                               ? storage::DownloadFileState::Done
                               : storage::DownloadFileState::Pending;
                parts[i].etag = fr.etag;
            }
            rec.files.push_back(std::move(fr));
        }
        auto id = store->create(rec);
        if (!id.isOk()) return id.status();
        result.recordId = id.value();
    }
    // Records how it ended; the outcome's own status wins over a failure to record it (a full
    // disk also stops the database's writes).
    const auto finish = [&](storage::DownloadState state, const Status& why) -> Status {
        if (store) (void)store->setState(result.recordId, state, why.isOk() ? "" : why.message());
        return why;
    };

    progress.fileCount = plan.files.size();
    progress.bytesTotal = plan.totalBytes;
    uint64_t installedBytes = 0; // files finished in this run or before it
    RateMeter rate;
    const auto start = Clock::now();
    rate.add(start, 0);
    for (size_t i = 0; i < plan.files.size(); ++i) {
        const RepoFile& f = plan.files[i];
        progress.fileIndex = i;
        std::string persistedEtag = parts[i].etag;
        auto lastSave = Clock::now();
        const uint64_t transferredBefore = result.bytesTransferred;
        const FileProgressFn onFile = [&](const FileProgress& fp) {
            // The ETag is saved as soon as the .part starts, so a kill keeps it resumable.
            const auto now = Clock::now();
            if (store &&
                (parts[i].etag != persistedEtag || now - lastSave > std::chrono::seconds(1))) {
                if (store
                        ->updateFile(result.recordId, f.path, parts[i].etag, fp.bytesDone,
                                     storage::DownloadFileState::Pending)
                        .isOk())
                    persistedEtag = parts[i].etag;
                lastSave = now;
            }
            if (!o.progress) return;
            progress.file = fp;
            // "done" is the whole repo's; a finished file shows in progress.file.phase.
            const std::string fphase = fp.phase ? fp.phase : "";
            progress.phase =
                fphase == "waiting" || fphase == "verifying" ? fp.phase : "downloading";
            progress.bytesDone = installedBytes + std::min(fp.bytesDone, f.size);
            progress.bytesTransferred = transferredBefore + fp.bytesTransferred;
            rate.add(now, progress.bytesTransferred);
            progress.bytesPerSecond = rate.bytesPerSecond();
            progress.etaSeconds = progress.bytesPerSecond > 0
                                      ? double(progress.bytesTotal -
                                               std::min(progress.bytesTotal, progress.bytesDone)) /
                                            progress.bytesPerSecond
                                      : -1;
            o.progress(progress);
        };
        auto r = downloadFile(api.http(), req.repo, commit, f, req.dir, parts[i], o.retry, onFile,
                              o.stop, fs);
        if (!r.isOk()) {
            const Status& s = r.status();
            if (store)
                (void)store->updateFile(result.recordId, f.path, parts[i].etag, 0,
                                        s.code() == ErrorCode::Malformed
                                            ? storage::DownloadFileState::Failed
                                            : storage::DownloadFileState::Pending);
            switch (s.code()) {
            case ErrorCode::NoSpace: // downloadFile's message says the .part is kept
                return finish(storage::DownloadState::Paused, s);
            case ErrorCode::Cancelled:
                if (o.discard && o.discard->load()) {
                    for (const auto& g : plan.files)
                        fsys::remove(fsys::path(req.dir) / (g.path + ".part"), ec);
                    return finish(storage::DownloadState::Cancelled,
                                  Status(ErrorCode::Cancelled, req.repo + ": download cancelled"));
                }
                return finish(storage::DownloadState::Paused,
                              Status(ErrorCode::Cancelled,
                                     req.repo + ": download paused; the partial files are kept"));
            default:
                return finish(storage::DownloadState::Failed, s);
            }
        }
        result.bytesTransferred += r.value().bytesTransferred;
        result.retries += r.value().retries;
        result.restarted = result.restarted || r.value().restarted;
        if (r.value().alreadyInstalled)
            ++result.filesPresent;
        else
            ++result.filesFetched;
        installedBytes += f.size;
        if (store) {
            auto s = store->updateFile(result.recordId, f.path, parts[i].etag, f.size,
                                       storage::DownloadFileState::Done);
            if (!s.isOk()) return s;
        }
    }
    DownloadReceipt receipt;
    receipt.endpoint = endpoint;
    receipt.repo = req.repo;
    receipt.revision = req.revision;
    receipt.commit = commit;
    receipt.completedMs = unixMs();
    receipt.files = plan.files;
    if (Status s = writeDownloadReceipt(req.dir, receipt); !s.isOk())
        return finish(s.code() == ErrorCode::NoSpace ? storage::DownloadState::Paused
                                                     : storage::DownloadState::Failed,
                      s);
    COLI_RETURN_IF_ERROR(finish(storage::DownloadState::Done, {}));
    progress.phase = "done";
    progress.bytesDone = plan.totalBytes;
    progress.bytesTransferred = result.bytesTransferred;
    progress.etaSeconds = 0;
    if (o.progress) o.progress(progress);
    return result;
}

} // namespace coli::hub
