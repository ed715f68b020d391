// coli download REPO [--revision R] [--include GLOB]... [--dir DIR] [--reserve SIZE]
// [--retries N]: a model repo from the Hugging Face Hub into a folder, resumably (engine/hub/
// repo_download.h; docs/cli.md "coli download", docs/hub.md "coli download").
#include "commands.h"
#include "exit_codes.h"
#include "options.h"
#include "signals.h"

#include "hub/download_receipt.h"
#include "hub/repo_download.h"
#include "runtime/expert_budget.h" // formatBytes
#include "storage/database.h"
#include "storage/location.h"

#include <fmt/core.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <sys/ioctl.h>
#include <unistd.h>

namespace coli::cli {
namespace {

struct DownloadCliOptions {
    std::string repo;
    std::string revision = "main";
    std::vector<std::string> includes;
    std::string dir;
    std::optional<uint64_t> reserve; // --reserve: free space to keep
    int retries = 6;
};

std::string clock(double seconds) {
    if (seconds < 0) return "--:--";
    const auto s = int64_t(seconds + 0.5);
    if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
    return fmt::format("{}:{:02}", s / 60, s % 60);
}

int terminalWidth() {
    winsize w{};
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col >= 40) return w.ws_col;
    return 80;
}

// The progress display: one redrawn bar on a terminal (at most 5 per second), else a plain line
// per finished file and one every 10 s.
class ProgressView {
public:
    ProgressView() : m_tty(isatty(STDERR_FILENO)), m_last(std::chrono::steady_clock::now()) {}
    void operator()(const hub::RepoProgress& p) {
        const auto now = std::chrono::steady_clock::now();
        const std::string phase = p.phase;
        if (m_tty) {
            if (now - m_last < std::chrono::milliseconds(200) && phase != "done") return;
            m_last = now;
            draw(p);
            return;
        }
        if (phase == "planning" || phase == "done") return;
        const bool fileDone = std::string(p.file.phase) == "done";
        if (fileDone ? m_reported == p.fileIndex : now - m_last < std::chrono::seconds(10)) return;
        if (fileDone) m_reported = p.fileIndex;
        m_last = now;
        fmt::print(stderr, "{} / {} ({:.0f}%), {}/s, ETA {}: {} ({}/{}) {}\n",
                   formatBytes(p.bytesDone), formatBytes(p.bytesTotal), percent(p),
                   formatBytes(uint64_t(p.bytesPerSecond)), clock(p.etaSeconds), p.file.path,
                   p.fileIndex + 1, p.fileCount, fileDone ? "done" : p.file.phase);
        std::fflush(stderr);
    }
    void clear() {
        if (m_tty && m_shown) fmt::print(stderr, "\r{:<{}}\r", "", terminalWidth() - 1);
        std::fflush(stderr);
    }

private:
    static double percent(const hub::RepoProgress& p) {
        return p.bytesTotal ? 100.0 * double(p.bytesDone) / double(p.bytesTotal) : 0.0;
    }
    void draw(const hub::RepoProgress& p) {
        if (std::string(p.phase) == "planning") return;
        const int width = terminalWidth() - 1;
        std::string tail = fmt::format(" {:3.0f}% {} / {}  {}/s  ETA {}  {} ({}/{})", percent(p),
                                       formatBytes(p.bytesDone), formatBytes(p.bytesTotal),
                                       formatBytes(uint64_t(p.bytesPerSecond)), clock(p.etaSeconds),
                                       p.file.path, p.fileIndex + 1, p.fileCount);
        const int bar = width >= 100 ? 24 : 12; // fixed: the numbers do not jump about
        const int filled = int(bar * (p.bytesTotal ? double(p.bytesDone) / p.bytesTotal : 0));
        std::string line = "[" + std::string(size_t(filled), '#') +
                           std::string(size_t(bar - filled), '.') + "]" + tail;
        if (int(line.size()) > width) line.resize(size_t(width));
        fmt::print(stderr, "\r{:<{}}", line, width);
        std::fflush(stderr);
        m_shown = true;
    }
    bool m_tty;
    bool m_shown = false;
    std::chrono::steady_clock::time_point m_last;
    size_t m_reported = SIZE_MAX; // the last file whose "done" line was printed
};

int exitCodeFor(ErrorCode c) {
    switch (c) {
    case ErrorCode::NoSpace:
    case ErrorCode::Io:
        return kExitNoSpace;
    case ErrorCode::Unsupported:
        return kExitModel;
    case ErrorCode::InvalidArgument:
        return kExitUsage;
    case ErrorCode::Cancelled:
        return kExitInterrupted;
    default:
        return kExitNetwork; // Network, Unauthorized, NotFound, Malformed (hash)
    }
}

int runDownload(const DownloadCliOptions& o) {
    auto endpoint = hub::endpointFromEnvironment();
    if (!endpoint) {
        printError(endpoint.status().message());
        return kExitUsage;
    }
    if (o.repo.find('/') == std::string::npos || o.repo.front() == '/' || o.repo.back() == '/') {
        printError(fmt::format("'{}' is not a repo id: expected owner/name", o.repo));
        return kExitUsage;
    }
    std::string dir = o.dir;
    if (dir.empty()) {
        auto models = storage::defaultModelsDir();
        if (!models) {
            printError(models.status().message() + " (give --dir)");
            return kExitUsage;
        }
        dir = models.value() + "/" + storage::modelFolderName(o.repo);
    }
    // The record lets a killed run resume; without a database the download still works, but a
    // restart cannot trust ETags it did not keep.
    std::unique_ptr<storage::Storage> db;
    if (auto path = storage::defaultDatabasePath(); path) {
        auto st = storage::Storage::open(path.value());
        if (st)
            db = std::move(st.value());
        else
            printWarning("no download record (resuming after a kill is less exact): " +
                         st.status().message());
    }
    hub::RetryPolicy retry;
    retry.maxRetries = o.retries;
    hub::HubApi api(endpoint.value(), hub::ApiRetry{o.retries, 1, 30});
    hub::RepoDownloadOptions opt;
    opt.request.repo = o.repo;
    opt.request.revision = o.revision;
    opt.request.includes = o.includes;
    opt.request.dir = dir;
    opt.request.marginBytes = o.reserve ? int64_t(*o.reserve) : -1;
    opt.retry = retry;
    opt.record = db.get();
    installSigintHandler();
    opt.stop = &interruptFlag();
    ProgressView view;
    opt.progress = [&view](const hub::RepoProgress& p) { view(p); };
    const auto start = std::chrono::steady_clock::now();
    auto r = hub::downloadRepo(api, opt);
    view.clear();
    if (!r) {
        const Status& s = r.status();
        std::fflush(stdout);
        if (s.code() == ErrorCode::Cancelled) {
            fmt::print(stderr,
                       "coli: interrupted; the partial files are kept in {}: run the same "
                       "command again to resume\n",
                       dir);
            return kExitInterrupted;
        }
        printError(fmt::format("cannot download {}: {}", o.repo, s.message()));
        return exitCodeFor(s.code());
    }
    const hub::RepoDownloadResult& res = r.value();
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fmt::print("downloaded: {} ({}, commit {}) -> {}\n", o.repo, o.revision,
               res.plan.info.commit.substr(0, 12), dir);
    fmt::print("files:      {} ({} fetched, {} already there), {}\n", res.plan.files.size(),
               res.filesFetched, res.filesPresent, formatBytes(res.plan.totalBytes));
    fmt::print("received:   {} in {:.1f} s ({}/s){}\n", formatBytes(res.bytesTransferred), secs,
               formatBytes(uint64_t(secs > 0 ? double(res.bytesTransferred) / secs : 0)),
               res.retries ? fmt::format(", {} retries", res.retries) : std::string());
    fmt::print("checked:    every file against the Hub's SHA-256 / git blob id; receipt {}\n",
               hub::kDownloadReceiptName);
    return kExitOk;
}

} // namespace

Command addDownloadCommand(CLI::App& root) {
    auto o = std::make_shared<DownloadCliOptions>();
    CLI::App* cmd = root.add_subcommand(
        "download", "Download a model repo from the Hugging Face Hub, resumably and hash-checked");
    cmd->footer(std::string(kExitCodesHelp) +
                " download: 3 = the repo is not a model this app runs (architecture, GGUF only), "
                "5 = disk full (the partial files are kept: run again to resume), 6 = network, "
                "Hub or hash error, 130 = interrupted (run again to resume).");
    cmd->add_option("REPO", o->repo, "The repo id, owner/name")->type_name("")->required();
    cmd->add_option("--revision", o->revision, "Branch, tag or commit (default main)")
        ->type_name("R");
    cmd->add_option("--include", o->includes,
                    "Only files matching this glob (repeatable; as huggingface_hub's "
                    "allow_patterns); config.json is always fetched")
        ->type_name("GLOB");
    cmd->add_option("--dir", o->dir,
                    "Destination folder (default: the models folder, "
                    "~/.local/share/colibri/models/OWNER--NAME)")
        ->type_name("DIR")
        ->check(nonEmptyPath());
    cmd->add_option("--reserve", o->reserve,
                    "Free space to leave on the disk (default max(1 GiB, 5 % of the disk))")
        ->type_name("SIZE")
        ->transform(byteSize());
    cmd->add_option("--retries", o->retries,
                    "Retries in a row without progress per request (default 6)")
        ->type_name("N")
        ->check(integerIn(0, 100));
    return {cmd, [o] { return runDownload(*o); }};
}

} // namespace coli::cli
