// The wizard's Hub pages (docs/app.md "The model wizard"): search, the chosen repo's plan and the
// download, each on the wizard's worker thread through engine/hub (as `coli search` and `coli
// download` call it). Part of WizardController (wizard_controller.h).
#include "wizard/wizard_controller.h"

#include "wizard/wizard_space.h"
#include "wizard/wizard_text.h"

#include "hub/hub_api.h"
#include "hub/hub_endpoint.h"
#include "hub/repo_download.h"
#include "hub/repo_plan.h"
#include "hub_token.h"
#include "storage/database.h"
#include "storage/downloads.h"
#include "storage/location.h"

#include <QDir>
#include <QFileInfo>
#include <QRegularExpression>

namespace coli::app {

using wizard::bytes;
using wizard::countText;
using wizard::qs;

namespace {
QString clockText(double seconds) {
    if (seconds < 0) return QStringLiteral("--:--");
    const auto s = qint64(seconds + 0.5);
    if (s >= 3600)
        return QStringLiteral("%1:%2:%3")
            .arg(s / 3600)
            .arg(s / 60 % 60, 2, 10, QLatin1Char('0'))
            .arg(s % 60, 2, 10, QLatin1Char('0'));
    return QStringLiteral("%1:%2").arg(s / 60).arg(s % 60, 2, 10, QLatin1Char('0'));
}
bool looksLikeRepoId(const QString& t) {
    static const QRegularExpression re(QStringLiteral("^[A-Za-z0-9][\\w.-]*/[\\w.-]+$"));
    return re.match(t).hasMatch();
}
} // namespace

// The endpoint and token as `coli download` has them; a token from the keychain or typed in the
// wizard is added when the environment gives none (HubToken's precedence).
static Result<hub::HubEndpoint> wizardEndpoint(const HubToken* token) {
    auto ep = hub::endpointFromEnvironment();
    if (ep.isOk() && ep.value().token.empty() && token && token->hasToken()) {
        ep.value().token = token->token();
        ep.value().tokenSource = "keychain";
    }
    return ep;
}

QString WizardController::downloadDir() const {
    if (m_sourceKind == QStringLiteral("hub") && !m_downloadDirOverride.isEmpty())
        return m_downloadDirOverride;
    if (m_sourceKind != QStringLiteral("hub") || m_repoId.isEmpty() || m_targetParent.isEmpty())
        return {};
    return QDir(m_targetParent).filePath(qs(storage::modelFolderName(m_repoId.toStdString())));
}

void WizardController::search(const QString& textIn) {
    const QString text = textIn.trimmed();
    if (text.isEmpty()) return;
    if (m_sourceKind != QStringLiteral("hub")) setSourceKind(QStringLiteral("hub"));
    m_searchText = text;
    m_hubStatus.clear();
    m_searchResults.clear();
    const uint64_t generation = ++m_searchGeneration;
    auto ep = wizardEndpoint(m_token);
    if (!ep.isOk()) {
        m_hubStatus = qs(ep.status().message());
        emit stateChanged();
        emit searchFinished();
        return;
    }
    emit stateChanged();
    post([this, ep = ep.value(), t = text.toStdString(),
          generation](const std::atomic<bool>& cancel) {
        hub::HubApi api(ep);
        api.setCancel(&cancel);
        auto r = std::make_shared<Result<std::vector<hub::ModelSummary>>>(api.search(t, 20));
        QMetaObject::invokeMethod(
            this,
            [this, r, generation] {
                if (generation != m_searchGeneration) return; // a newer search was asked
                if (!r->isOk()) {
                    m_hubStatus = qs(r->status().message());
                } else {
                    QVariantList rows;
                    for (const hub::ModelSummary& m : r->value())
                        rows << QVariantMap{
                            {QStringLiteral("repo"), qs(m.id)},
                            {QStringLiteral("architecture"),
                             qs(m.architectures.empty() ? m.modelType : m.architectures.front())},
                            {QStringLiteral("parameters"),
                             m.parameters > 0 ? countText(m.parameters) : QString()},
                            {QStringLiteral("downloads"), double(m.downloads)},
                            {QStringLiteral("supported"), m.support == hub::Support::Supported},
                            {QStringLiteral("support"), qs(hub::supportName(m.support))},
                            {QStringLiteral("note"), qs(m.supportNote)},
                            {QStringLiteral("gated"), m.gated}};
                    m_searchResults = rows;
                    if (rows.isEmpty())
                        m_hubStatus = tr("No model on the Hub matches this search.");
                }
                emit stateChanged();
                emit searchFinished();
            },
            Qt::QueuedConnection);
    });
    if (looksLikeRepoId(text)) chooseRepo(text);
}

void WizardController::chooseRepo(const QString& repoIn) {
    const QString repo = repoIn.trimmed();
    if (repo.isEmpty()) return;
    if (m_downloadState == QStringLiteral("running")) return; // pause or cancel it first
    if (m_sourceKind != QStringLiteral("hub")) setSourceKind(QStringLiteral("hub"));
    const uint64_t generation = ++m_hubGeneration;
    ++m_spaceGeneration;
    if (repo != m_overrideRepo) { // another repo than the unfinished download's
        m_downloadDirOverride.clear();
        m_toDownloadPage = false;
    }
    m_repoId = repo;
    m_repoPlan.clear();
    m_repoBytes = 0;
    m_localDir.clear();
    m_source.clear();
    m_sourceError.clear();
    m_sourceSupported = m_sourceIsContainer = false;
    m_containerBytes = 0;
    m_space.clear();
    m_fits = false;
    m_convertState = QStringLiteral("idle");
    m_convertError.clear();
    m_convertedDir.clear();
    m_openAsked = false;
    m_downloadState = QStringLiteral("idle");
    m_downloadError.clear();
    m_download = {};
    if (m_targetParent.isEmpty()) {
        auto models = storage::defaultModelsDir();
        m_targetParent = models.isOk() ? qs(models.value()) : QDir::homePath();
    }
    auto ep = wizardEndpoint(m_token);
    if (!ep.isOk()) {
        m_sourceError = qs(ep.status().message());
        emit stateChanged();
        emit sourceInspected();
        return;
    }
    emit stateChanged();
    hub::RepoPlanRequest req;
    req.repo = repo.toStdString();
    req.dir = downloadDir().toStdString();
    req.marginBytes = 0; // the place page checks the space with the margin, for its folder
    post([this, ep = ep.value(), req, generation](const std::atomic<bool>& cancel) {
        hub::HubApi api(ep);
        api.setCancel(&cancel);
        auto info = std::make_shared<Result<hub::ModelInfo>>(api.modelInfo(req.repo));
        auto plan = std::make_shared<Result<hub::RepoPlan>>(
            info->isOk() ? hub::planRepoDownload(api, req) : Result<hub::RepoPlan>(info->status()));
        QMetaObject::invokeMethod(
            this,
            [this, info, plan, generation] {
                if (generation != m_hubGeneration) return; // another repo was chosen meanwhile
                if (!info->isOk()) {
                    m_sourceError = qs(info->status().message());
                    emit stateChanged();
                    emit sourceInspected();
                    return;
                }
                const hub::ModelSummary& m = info->value().summary;
                // Not fitting on the disk is the place page's matter, not the model's.
                const bool noSpace = !plan->isOk() && plan->status().code() == ErrorCode::NoSpace;
                m_sourceSupported = plan->isOk() || noSpace;
                m_repoBytes = plan->isOk() ? plan->value().totalBytes - plan->value().presentBytes
                                           : info->value().totalBytes();
                QVariantMap s;
                s[QStringLiteral("name")] = m_repoId;
                s[QStringLiteral("architecture")] =
                    qs(m.architectures.empty() ? m.modelType : m.architectures.front());
                s[QStringLiteral("parameters")] =
                    m.parameters > 0 ? countText(m.parameters) : QString();
                s[QStringLiteral("sizeText")] =
                    bytes(plan->isOk() ? plan->value().totalBytes : info->value().totalBytes());
                s[QStringLiteral("supported")] = m_sourceSupported;
                s[QStringLiteral("note")] =
                    m_sourceSupported ? QString() : qs(plan->status().message());
                s[QStringLiteral("isContainer")] = false;
                m_source = s;
                QVariantMap p;
                p[QStringLiteral("checked")] = true;
                p[QStringLiteral("repo")] = m_repoId;
                p[QStringLiteral("commit")] = qs(info->value().commit);
                if (plan->isOk()) {
                    const hub::RepoPlan& rp = plan->value();
                    p[QStringLiteral("fileCount")] = int(rp.files.size());
                    p[QStringLiteral("totalBytes")] = double(rp.totalBytes);
                    p[QStringLiteral("totalText")] = bytes(rp.totalBytes);
                    p[QStringLiteral("presentText")] =
                        rp.presentBytes ? bytes(rp.presentBytes) : QString();
                } else {
                    p[QStringLiteral("error")] = qs(plan->status().message());
                }
                m_repoPlan = p;
                if (m_toDownloadPage && m_sourceSupported) {
                    m_toDownloadPage = false;
                    m_page = int(pageNames().indexOf(QStringLiteral("download")));
                }
                emit stateChanged();
                emit sourceInspected();
                refreshSpace();
            },
            Qt::QueuedConnection);
    });
}

void WizardController::findUnfinished() {
    const std::string path = databasePath();
    // Only an existing database: opening one would create it.
    if (path.empty() || !QFileInfo::exists(qs(path))) return;
    // Not a job of a page (busy() stays false): only a banner depends on it.
    m_worker->post([this, p = path](const std::atomic<bool>&) {
        auto db = storage::Storage::open(p);
        if (!db.isOk()) return;
        storage::DownloadStore store(*db.value());
        auto list = store.list(true);
        if (!list.isOk() || list.value().empty()) return;
        const storage::DownloadRecord& r = list.value().front(); // the newest
        QVariantMap m{{QStringLiteral("repo"), qs(r.repo)},
                      {QStringLiteral("dir"), qs(r.dir)},
                      {QStringLiteral("state"), qs(storage::downloadStateName(r.state))},
                      {QStringLiteral("message"), qs(r.message)}};
        QMetaObject::invokeMethod(
            this,
            [this, m] {
                m_unfinished = m;
                emit stateChanged();
            },
            Qt::QueuedConnection);
    });
}

void WizardController::resumeUnfinished() {
    if (m_unfinished.isEmpty() || m_downloadState == QStringLiteral("running")) return;
    const QString dir = m_unfinished.value(QStringLiteral("dir")).toString();
    const QString repo = m_unfinished.value(QStringLiteral("repo")).toString();
    m_unfinished.clear();
    m_page = 0;
    m_targetParent = QFileInfo(dir).absolutePath();
    m_downloadDirOverride = dir;
    m_overrideRepo = repo;
    m_toDownloadPage = true;
    chooseRepo(repo);
}

void WizardController::refreshHubSpace(uint64_t generation) {
    // Before the download the container's size is not known: the repo's bytes stand for it (an
    // upper bound when converting bf16 weights to int8 or int4).
    const uint64_t container = convertWanted() ? m_repoBytes : 0;
    const std::string dst = downloadDir().toStdString();
    convert::FileSystem* fs = m_fs ? m_fs : &convert::posixFileSystem();
    post([this, dst, fs, generation, container](const std::atomic<bool>&) {
        auto free = std::make_shared<Result<uint64_t>>(wizard::freeBytesFor(dst, *fs));
        auto disk = std::make_shared<Result<uint64_t>>(wizard::diskBytesFor(dst));
        QMetaObject::invokeMethod(
            this,
            [this, free, disk, generation, container] {
                if (generation != m_spaceGeneration) return;
                QVariantMap s;
                s[QStringLiteral("checked")] = true;
                if (!free->isOk())
                    s[QStringLiteral("error")] = qs(free->status().message());
                else if (!disk->isOk())
                    s[QStringLiteral("error")] = qs(disk->status().message());
                const wizard::SpaceNeed need =
                    wizard::spaceNeeded(m_repoBytes, container, marginFor(*disk));
                s[QStringLiteral("downloadText")] = bytes(need.download);
                s[QStringLiteral("containerText")] =
                    need.container ? bytes(need.container) : QString();
                s[QStringLiteral("marginText")] = bytes(need.margin);
                s[QStringLiteral("neededText")] = bytes(need.total);
                s[QStringLiteral("neededBytes")] = double(need.total);
                if (free->isOk()) {
                    s[QStringLiteral("freeText")] = bytes(free->value());
                    s[QStringLiteral("freeBytes")] = double(free->value());
                }
                m_fits = free->isOk() && disk->isOk() && free->value() >= need.total;
                s[QStringLiteral("fits")] = m_fits;
                m_space = s;
                emit stateChanged();
                emit spaceChecked();
            },
            Qt::QueuedConnection);
    });
}

void WizardController::startDownload() {
    if (m_downloadState == QStringLiteral("running") || m_sourceKind != QStringLiteral("hub") ||
        !m_sourceSupported || m_repoId.isEmpty() || downloadDir().isEmpty())
        return;
    auto ep = wizardEndpoint(m_token);
    if (!ep.isOk()) {
        m_downloadState = QStringLiteral("failed");
        m_downloadError = qs(ep.status().message());
        emit stateChanged();
        return;
    }
    m_downloadState = QStringLiteral("running");
    m_downloadError.clear();
    m_download.text = tr("Starting…");
    m_downloadSlot.publish({});
    emit stateChanged();
    emit progressChanged();
    m_downloadStop = std::make_shared<std::atomic<bool>>(false);
    m_downloadDiscard = std::make_shared<std::atomic<bool>>(false);
    hub::RepoDownloadOptions opt;
    opt.request.repo = m_repoId.toStdString();
    opt.request.dir = downloadDir().toStdString();
    opt.request.containerBytes = convertWanted() ? m_repoBytes : 0;
    opt.request.marginBytes = m_spaceMargin ? int64_t(*m_spaceMargin) : -1; // the place page's
    opt.fs = m_fs;
    ++m_jobs;
    m_worker->post([this, ep = ep.value(), opt, stop = m_downloadStop, dbPath = databasePath(),
                    discard = m_downloadDiscard](const std::atomic<bool>& cancel) mutable {
        hub::HubApi api(ep);
        api.setCancel(stop.get());
        // The record lets a paused or killed download resume at its commit with its ETags; it is
        // opened here because a Storage is used on the thread that opened it.
        std::unique_ptr<storage::Storage> db;
        if (!dbPath.empty())
            if (auto st = storage::Storage::open(dbPath); st.isOk()) db = std::move(st.value());
        opt.record = db.get();
        opt.stop = stop.get();
        opt.discard = discard.get();
        opt.progress = [this, &cancel, stop](const hub::RepoProgress& p) {
            if (cancel.load()) stop->store(true); // Start over or shutdown: pause it
            DownloadSnap s;
            s.any = true;
            s.fraction = p.bytesTotal ? double(p.bytesDone) / double(p.bytesTotal) : 0.0;
            s.fileFraction =
                p.file.bytesTotal ? double(p.file.bytesDone) / double(p.file.bytesTotal) : 0.0;
            s.file = tr("%1 (%2 of %3)").arg(qs(p.file.path)).arg(p.fileIndex + 1).arg(p.fileCount);
            s.doneText = tr("%1 of %2").arg(bytes(p.bytesDone), bytes(p.bytesTotal));
            s.text = p.bytesPerSecond > 0
                         ? tr("%1 of %2, %3/s, %4 left")
                               .arg(bytes(p.bytesDone), bytes(p.bytesTotal),
                                    bytes(uint64_t(p.bytesPerSecond)), clockText(p.etaSeconds))
                         : s.doneText;
            m_downloadSlot.publish(s);
        };
        auto r = std::make_shared<Result<hub::RepoDownloadResult>>(hub::downloadRepo(api, opt));
        const bool discarded = discard->load();
        QMetaObject::invokeMethod(
            this,
            [this, r, discarded, stop] {
                --m_jobs;
                m_progressTimer.stop();
                if (stop != m_downloadStop || m_downloadState != QStringLiteral("running")) {
                    emit stateChanged(); // another source or Start over meanwhile
                    return;
                }
                sampleProgress();
                if (r->isOk()) {
                    const hub::RepoDownloadResult& d = r->value();
                    m_downloadState = QStringLiteral("done");
                    m_download.fraction = m_download.fileFraction = 1.0;
                    m_download.text = tr("Downloaded: %1 files, %2 (%3 fetched now)")
                                          .arg(d.plan.files.size())
                                          .arg(bytes(d.plan.totalBytes), bytes(d.bytesTransferred));
                    m_localDir = downloadDir(); // the rest goes on as for a folder here
                    inspectFolder(m_localDir);
                } else if (r->status().code() == ErrorCode::Cancelled) {
                    m_downloadState =
                        discarded ? QStringLiteral("cancelled") : QStringLiteral("paused");
                    m_download.text = discarded ? tr("Cancelled: the partial files are deleted.")
                                      : m_download.doneText.isEmpty()
                                          ? tr("Paused: Resume fetches only the rest.")
                                          : tr("Paused at %1: Resume fetches only the rest.")
                                                .arg(m_download.doneText);
                } else {
                    m_downloadState = QStringLiteral("failed");
                    m_downloadError = qs(r->status().message());
                }
                emit stateChanged();
                emit progressChanged();
                emit downloadFinished(m_downloadState);
            },
            Qt::QueuedConnection);
    });
    m_progressTimer.start();
}

void WizardController::pauseDownload() {
    if (m_downloadStop) m_downloadStop->store(true);
}

void WizardController::cancelDownload() {
    if (m_downloadState == QStringLiteral("running")) {
        if (m_downloadDiscard) m_downloadDiscard->store(true);
        if (m_downloadStop) m_downloadStop->store(true);
        return;
    }
    // Paused or failed: the .parts are deleted by a run that stops at once.
    if (m_downloadState == QStringLiteral("paused") ||
        m_downloadState == QStringLiteral("failed")) {
        startDownload();
        cancelDownload();
    }
}

} // namespace coli::app
