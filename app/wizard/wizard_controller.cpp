#include "wizard/wizard_controller.h"

#include "wizard/wizard_source.h"
#include "wizard/wizard_space.h"
#include "wizard/wizard_text.h"

#include "app_settings.h"
#include "convert/converter.h"
#include "engine_controller.h"
#include "hub_token.h"
#include "storage/location.h"

#include <QDir>
#include <QFileInfo>

#include <chrono>

namespace coli::app {

using wizard::bytes;
using wizard::countText;
using wizard::qs;

namespace {
bool oneOf(const QString& v, std::initializer_list<const char*> allowed) {
    for (const char* a : allowed)
        if (v == QLatin1String(a)) return true;
    return false;
}
// A destination the converter would refuse: it exists and holds files, but not the state file
// of an interrupted conversion (which it resumes).
QString destinationProblem(const QString& dir) {
    const QDir d(dir);
    if (!d.exists()) return {};
    if (d.isEmpty(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden)) return {};
    if (QFileInfo::exists(d.filePath(QString::fromLatin1(convert::kStateName)))) return {};
    return QObject::tr("%1 already holds files: choose another place, or remove it first.")
        .arg(dir);
}
} // namespace

WizardController::WizardController(EngineController* engine, AppSettings* settings, QObject* parent)
    : QObject(parent), m_engine(engine), m_settings(settings),
      m_worker(std::make_unique<wizard::WizardWorker>()) {
    m_progressTimer.setInterval(100);
    connect(&m_progressTimer, &QTimer::timeout, this, &WizardController::sampleProgress);
    if (m_engine) {
        connect(m_engine, &EngineController::loadStateChanged, this,
                &WizardController::stateChanged);
        connect(m_engine, &EngineController::modelChanged, this, &WizardController::stateChanged);
    }
    findUnfinished();
}

WizardController::~WizardController() {
    // A download also stops while it waits between retries (no progress call to see the flag).
    if (m_downloadStop) m_downloadStop->store(true); // paused: the record keeps it
    m_worker->shutdown(); // cancels a conversion (it stops between tensors) and joins
}

QStringList WizardController::pageNames() {
    return {QStringLiteral("search"),  QStringLiteral("place"), QStringLiteral("download"),
            QStringLiteral("convert"), QStringLiteral("check"), QStringLiteral("mirror"),
            QStringLiteral("open")};
}

QObject* WizardController::tokenObject() const {
    return m_token;
}

bool WizardController::canBack() const {
    return m_page > 0 && !busy();
}

QString WizardController::nextHint() const {
    const QString name = pageName();
    const bool local = m_sourceKind == QStringLiteral("local");
    if (name == QStringLiteral("search")) {
        if (!local) {
            if (busy()) return tr("Asking the Hub…");
            if (m_repoPlan.isEmpty() && m_sourceError.isEmpty())
                return tr("Search the Hub and choose a repo.");
        } else {
            if (busy()) return tr("Reading the folder…");
            if (m_localDir.isEmpty()) return tr("Choose a model folder on this computer.");
        }
        if (!m_sourceError.isEmpty()) return m_sourceError;
        if (!m_sourceSupported)
            return tr("This app cannot run this model: %1")
                .arg(m_source.value(QStringLiteral("note")).toString());
        return {};
    }
    if (name == QStringLiteral("place")) {
        if (busy()) return tr("Checking the free space…");
        if (!m_space.value(QStringLiteral("checked")).toBool())
            return tr("Choose where to put the model.");
        const QString err = m_space.value(QStringLiteral("error")).toString();
        if (!err.isEmpty()) return err;
        if (!m_fits)
            return tr("Not enough free space there: %1 needed, %2 free.")
                .arg(m_space.value(QStringLiteral("neededText")).toString(),
                     m_space.value(QStringLiteral("freeText")).toString());
        return {};
    }
    if (name == QStringLiteral("download")) {
        if (local) return {};
        if (m_downloadState == QStringLiteral("running")) return tr("Downloading…");
        if (m_downloadState != QStringLiteral("done")) return tr("Download the model first.");
        if (busy()) return tr("Reading the downloaded folder…");
        return {};
    }
    if (name == QStringLiteral("check")) {
        if (m_checkState == QStringLiteral("running")) return tr("Checking the model…");
        if (m_checkState != QStringLiteral("done"))
            return m_checkReport.value(QStringLiteral("error")).toString().isEmpty()
                       ? tr("Check the model first.")
                       : m_checkReport.value(QStringLiteral("error")).toString();
        if (!m_checkReport.value(QStringLiteral("ready")).toBool())
            return tr("The model is not ready: fix the errors listed, then check again.");
        return {};
    }
    if (name == QStringLiteral("mirror")) {
        if (m_mirrorState == QStringLiteral("running"))
            return tr("Staging the mirror… (Cancel keeps what is copied)");
        if (busy()) return tr("Planning the mirror…");
        return {};
    }
    if (name == QStringLiteral("convert")) {
        if (m_convertState == QStringLiteral("running")) return tr("Converting…");
        if (convertWanted() && m_convertState != QStringLiteral("done"))
            return tr("Convert the model, or choose to run it as published.");
        return {};
    }
    return {};
}

void WizardController::setPage(int p) {
    if (p < 0 || p >= pageNames().size() || p == m_page) return;
    if (pageName() == QStringLiteral("check") && m_planState == QStringLiteral("running"))
        cancelPlan(); // it holds the model in RAM and the worker: the next pages need neither
    m_page = p;
    emit stateChanged();
    // The check runs on arriving, and again when the model to open has changed since.
    if (pageName() == QStringLiteral("check") && m_checkState != QStringLiteral("running") &&
        (m_checkState != QStringLiteral("done") || m_checkedDir != modelDir()))
        startCheck();
}

void WizardController::next() {
    if (canNext()) setPage(m_page + 1);
}

void WizardController::back() {
    if (canBack()) setPage(m_page - 1);
}

void WizardController::restart() {
    m_worker->cancelAll();
    if (m_downloadStop) m_downloadStop->store(true); // paused: the record keeps it for later
    ++m_spaceGeneration;
    ++m_hubGeneration;
    m_page = 0;
    m_searchText.clear();
    m_downloadDirOverride.clear();
    m_toDownloadPage = false;
    m_searchResults.clear();
    m_repoPlan.clear();
    m_repoBytes = 0;
    m_downloadState = QStringLiteral("idle");
    m_downloadError.clear();
    m_download = {};
    m_localDir.clear();
    m_source.clear();
    m_sourceError.clear();
    m_sourceSupported = m_sourceIsContainer = false;
    m_containerBytes = 0;
    m_targetParent.clear();
    m_space.clear();
    m_fits = false;
    m_convertWanted = true;
    m_convertState = QStringLiteral("idle");
    m_convertProgress = 0;
    m_convertStatus.clear();
    m_convertError.clear();
    m_convertedDir.clear();
    m_openAsked = false;
    m_hubStatus.clear();
    m_checkState = QStringLiteral("idle");
    m_checkStatus.clear();
    m_checkReport.clear();
    m_checkedDir.clear();
    m_planState = QStringLiteral("idle");
    m_planStatus.clear();
    m_planReport.clear();
    m_plannedDir.clear();
    ++m_mirrorGeneration;
    m_mirrorDir.clear();
    m_mirrorPlan.clear();
    m_mirrorState = QStringLiteral("idle");
    m_mirrorProgress = 0;
    m_mirrorStatus.clear();
    m_mirrorError.clear();
    m_unfinished.clear();
    findUnfinished(); // a download paused just now is offered again
    emit stateChanged();
    emit progressChanged();
}

void WizardController::setSourceKind(const QString& kind) {
    if (!oneOf(kind, {"hub", "local"}) || kind == m_sourceKind) return;
    m_sourceKind = kind;
    if (kind == QStringLiteral("hub") && !m_token)
        m_token = new HubToken(HubToken::defaultService(), this);
    emit stateChanged();
}

void WizardController::setRepoId(const QString& id) {
    if (id == m_repoId) return;
    m_repoId = id.trimmed();
    emit stateChanged();
}

void WizardController::post(wizard::WizardWorker::Job job) {
    ++m_jobs;
    emit stateChanged();
    m_worker->post([this, job = std::move(job)](const std::atomic<bool>& cancel) {
        job(cancel);
        // Queued after the job's own result, so busy() turns false once that is applied.
        QMetaObject::invokeMethod(
            this, [this] { jobDone(); }, Qt::QueuedConnection);
    });
}

void WizardController::jobDone() {
    --m_jobs;
    emit stateChanged();
}

convert::PlanOptions WizardController::planOptions() const {
    convert::PlanOptions p;
    using convert::StoredFormat;
    p.experts = m_expertFormat == QStringLiteral("int4-g32") ? StoredFormat::Q4_G32
                : m_expertFormat == QStringLiteral("int8")   ? StoredFormat::Q8_G64
                                                             : StoredFormat::Q4_G64;
    p.dense = m_denseFormat == QStringLiteral("bf16") ? StoredFormat::BF16 : StoredFormat::Q8_G64;
    p.embed = m_embedFormat == QStringLiteral("bf16") ? StoredFormat::BF16 : StoredFormat::Q8_G64;
    return p;
}

void WizardController::chooseLocalFolder(const QString& dirIn) {
    const QString dir = QDir::cleanPath(dirIn);
    m_worker->cancelAll(); // an older inspection or conversion is of no use now
    m_sourceKind = QStringLiteral("local");
    ++m_hubGeneration; // a repo look-up still on its way is of no use now
    m_repoPlan.clear();
    m_repoBytes = 0;
    if (m_downloadStop) m_downloadStop->store(true);
    m_downloadState = QStringLiteral("idle");
    m_downloadError.clear();
    m_download = {};
    m_localDir = dir;
    m_source.clear();
    m_sourceError.clear();
    m_sourceSupported = m_sourceIsContainer = false;
    m_containerBytes = 0;
    m_convertState = QStringLiteral("idle");
    m_convertError.clear();
    m_convertedDir.clear();
    m_openAsked = false;
    m_space.clear();
    m_fits = false;
    m_targetParent = QFileInfo(dir).absolutePath(); // next to it, until the user chooses
    emit stateChanged();
    inspectFolder(dir);
}

void WizardController::inspectFolder(const QString& dir) {
    const std::string d = dir.toStdString();
    const convert::PlanOptions plan = planOptions();
    post([this, d, plan, dir](const std::atomic<bool>&) {
        auto r = std::make_shared<Result<wizard::LocalModel>>(wizard::inspectLocalModel(d, plan));
        QMetaObject::invokeMethod(
            this,
            [this, r, dir] {
                if (dir != m_localDir) return; // another folder was chosen meanwhile
                if (!r->isOk()) {
                    m_sourceError = qs(r->status().message());
                } else {
                    const wizard::LocalModel& m = r->value();
                    m_sourceSupported = m.supported;
                    m_sourceIsContainer = m.isContainer;
                    m_containerBytes = m.containerBytes;
                    QVariantMap s;
                    s[QStringLiteral("name")] = m_sourceKind == QStringLiteral("hub")
                                                    ? m_repoId
                                                    : QFileInfo(dir).fileName();
                    s[QStringLiteral("path")] = dir;
                    s[QStringLiteral("architecture")] = qs(m.architecture);
                    s[QStringLiteral("parameters")] =
                        m.parameters > 0 ? countText(m.parameters) : QString();
                    s[QStringLiteral("experts")] =
                        m.experts > 0 ? tr("%1 experts per layer, %2 per token, %3 layers")
                                            .arg(m.experts)
                                            .arg(m.expertsPerToken)
                                            .arg(m.layers)
                                      : QString();
                    s[QStringLiteral("sizeText")] = bytes(m.folderBytes);
                    s[QStringLiteral("supported")] = m.supported;
                    s[QStringLiteral("note")] = qs(m.note);
                    s[QStringLiteral("isContainer")] = m.isContainer;
                    s[QStringLiteral("formats")] = qs(m.formats);
                    s[QStringLiteral("containerText")] =
                        m.containerBytes > 0 ? bytes(m.containerBytes) : QString();
                    m_source = s;
                }
                emit stateChanged();
                emit sourceInspected();
                refreshSpace();
            },
            Qt::QueuedConnection);
    });
}

QString WizardController::targetDir() const {
    if (m_targetParent.isEmpty()) return {};
    const QString name = m_sourceKind == QStringLiteral("local")
                             ? QFileInfo(m_localDir).fileName()
                             : m_repoId.section(QLatin1Char('/'), -1);
    if (name.isEmpty()) return {};
    return QDir(m_targetParent).filePath(name + QStringLiteral("-colibri"));
}

void WizardController::chooseTargetParent(const QString& dir) {
    m_targetParent = QDir::cleanPath(dir);
    m_downloadDirOverride.clear(); // a place chosen: the repo goes there
    if (m_convertState != QStringLiteral("running")) {
        m_convertState = QStringLiteral("idle");
        m_convertError.clear();
        m_convertedDir.clear();
    }
    emit stateChanged();
    refreshSpace();
}

bool WizardController::convertWanted() const {
    return m_convertWanted && !m_sourceIsContainer;
}

void WizardController::setConvertWanted(bool on) {
    if (on == m_convertWanted) return;
    m_convertWanted = on;
    emit stateChanged();
    refreshSpace();
}

void WizardController::setExpertFormat(const QString& f) {
    if (!oneOf(f, {"int4-g64", "int4-g32", "int8"}) || f == m_expertFormat) return;
    m_expertFormat = f;
    emit stateChanged();
    refreshSpace();
}

void WizardController::setDenseFormat(const QString& f) {
    if (!oneOf(f, {"int8", "bf16"}) || f == m_denseFormat) return;
    m_denseFormat = f;
    emit stateChanged();
    refreshSpace();
}

void WizardController::setEmbedFormat(const QString& f) {
    if (!oneOf(f, {"int8", "bf16"}) || f == m_embedFormat) return;
    m_embedFormat = f;
    emit stateChanged();
    refreshSpace();
}

void WizardController::refreshSpace() {
    const uint64_t generation = ++m_spaceGeneration;
    m_space.clear();
    m_fits = false;
    if (m_sourceKind == QStringLiteral("hub") && m_localDir.isEmpty() && m_sourceSupported &&
        !m_targetParent.isEmpty()) {
        refreshHubSpace(generation); // not downloaded yet: the repo's bytes count too
        return;
    }
    if (m_localDir.isEmpty() || !m_sourceSupported) {
        emit stateChanged();
        return;
    }
    if (!convertWanted()) {
        // Run as published from its own folder: nothing is written.
        m_space[QStringLiteral("checked")] = true;
        m_space[QStringLiteral("writesNothing")] = true;
        m_fits = true;
        emit stateChanged();
        emit spaceChecked();
        return;
    }
    const QString target = targetDir();
    const std::string src = m_localDir.toStdString(), dst = target.toStdString();
    const convert::PlanOptions plan = planOptions();
    convert::FileSystem* fs = m_fs ? m_fs : &convert::posixFileSystem();
    post([this, src, dst, plan, fs, generation, target](const std::atomic<bool>&) {
        auto container =
            std::make_shared<Result<uint64_t>>(wizard::plannedContainerBytes(src, plan));
        auto free = std::make_shared<Result<uint64_t>>(wizard::freeBytesFor(dst, *fs));
        auto disk = std::make_shared<Result<uint64_t>>(wizard::diskBytesFor(dst));
        const QString problem = destinationProblem(target);
        QMetaObject::invokeMethod(
            this,
            [this, container, free, disk, generation, problem] {
                if (generation != m_spaceGeneration) return; // a newer request is on its way
                QVariantMap s;
                s[QStringLiteral("checked")] = true;
                if (!container->isOk())
                    s[QStringLiteral("error")] = qs(container->status().message());
                else if (!free->isOk())
                    s[QStringLiteral("error")] = qs(free->status().message());
                else if (!disk->isOk())
                    s[QStringLiteral("error")] = qs(disk->status().message());
                else if (!problem.isEmpty())
                    s[QStringLiteral("error")] = problem;
                if (container->isOk()) m_containerBytes = container->value();
                const wizard::SpaceNeed need =
                    wizard::spaceNeeded(0, m_containerBytes, marginFor(*disk));
                // A folder already here has nothing to download: no row for it.
                s[QStringLiteral("downloadText")] =
                    need.download ? bytes(need.download) : QString();
                s[QStringLiteral("containerText")] = bytes(need.container);
                s[QStringLiteral("marginText")] = bytes(need.margin);
                s[QStringLiteral("neededText")] = bytes(need.total);
                s[QStringLiteral("neededBytes")] = double(need.total);
                if (free->isOk()) {
                    s[QStringLiteral("freeText")] = bytes(free->value());
                    s[QStringLiteral("freeBytes")] = double(free->value());
                }
                m_fits = free->isOk() && free->value() >= need.total;
                s[QStringLiteral("fits")] = m_fits;
                m_space = s;
                emit stateChanged();
                emit spaceChecked();
            },
            Qt::QueuedConnection);
    });
}

uint64_t WizardController::marginFor(const Result<uint64_t>& diskBytes) const {
    if (m_spaceMargin) return *m_spaceMargin;
    return wizard::spaceMargin(diskBytes.isOk() ? diskBytes.value() : 0);
}

void WizardController::startConvert() {
    if (m_convertState == QStringLiteral("running") || !convertWanted() || !m_sourceSupported ||
        m_localDir.isEmpty() || targetDir().isEmpty())
        return;
    m_convertState = QStringLiteral("running");
    m_convertError.clear();
    m_convertedDir.clear();
    m_convertProgress = 0;
    m_convertStatus = tr("Starting…");
    m_convertSlot.publish({});
    emit stateChanged();
    emit progressChanged();
    convert::ConvertOptions opt;
    opt.plan = planOptions();
    opt.converter = "colibri wizard";
    const std::string src = m_localDir.toStdString();
    const QString target = targetDir();
    const std::string dst = target.toStdString();
    convert::FileSystem* fs = m_fs ? m_fs : &convert::posixFileSystem();
    ++m_jobs;
    m_convertCancel = m_worker->post([this, src, dst, opt, fs,
                                      target](const std::atomic<bool>& cancel) {
        auto progress = [this](const convert::ConvertProgress& p) {
            ConvertSnap s;
            s.any = true;
            const bool byItems = p.itemsTotal > 0 && std::string(p.phase) != "hashing";
            s.fraction = byItems            ? double(p.itemsDone) / double(p.itemsTotal)
                         : p.bytesTotal > 0 ? double(p.bytesDone) / double(p.bytesTotal)
                                            : 0.0;
            const QString phase = QString::fromLatin1(p.phase);
            s.text = byItems
                         ? tr("%1: %2 of %3 tensors, %4 of %5")
                               .arg(phase)
                               .arg(p.itemsDone)
                               .arg(p.itemsTotal)
                               .arg(bytes(p.bytesDone), bytes(p.bytesTotal))
                         : tr("%1: %2 of %3").arg(phase, bytes(p.bytesDone), bytes(p.bytesTotal));
            m_convertSlot.publish(s);
        };
        convert::FailureSide side = convert::FailureSide::None;
        auto r = std::make_shared<Result<convert::ConvertReport>>(
            convert::convertCheckpoint(src, dst, opt, *fs, progress, &cancel, &side));
        QMetaObject::invokeMethod(
            this,
            [this, r, target] {
                --m_jobs;
                m_progressTimer.stop();
                if (m_convertState != QStringLiteral("running")) {
                    // Start over or another folder meanwhile: this answer belongs to nothing now.
                    emit stateChanged();
                    return;
                }
                sampleProgress();
                if (r->isOk()) {
                    m_convertState = QStringLiteral("done");
                    m_convertedDir = target;
                    m_convertProgress = 1.0;
                    const convert::ConvertReport& rep = r->value();
                    const size_t shards = rep.shardsWritten + rep.shardsReused;
                    m_convertStatus =
                        tr("Converted: %1, %2 (from %3) in %4 s")
                            .arg(shards == 1 ? tr("1 shard") : tr("%1 shards").arg(shards))
                            .arg(bytes(rep.outputBytes), bytes(rep.sourceBytes))
                            .arg(rep.seconds, 0, 'f', 1);
                } else if (r->status().code() == ErrorCode::Cancelled) {
                    m_convertState = QStringLiteral("cancelled");
                    m_convertStatus = tr("Cancelled. The finished shards are kept: Convert goes on "
                                         "from them.");
                } else {
                    m_convertState = QStringLiteral("failed");
                    m_convertError =
                        r->status().code() == ErrorCode::NoSpace
                            ? tr("The disk is full: %1. The finished shards are kept: free some "
                                 "space and Convert goes on from them.")
                                  .arg(qs(r->status().message()))
                            : qs(r->status().message());
                }
                emit stateChanged();
                emit progressChanged();
                emit convertFinished(m_convertState);
            },
            Qt::QueuedConnection);
    });
    m_progressTimer.start();
}

void WizardController::cancelConvert() {
    if (m_convertCancel) m_convertCancel->store(true);
}

void WizardController::sampleProgress() {
    if (m_downloadState == QStringLiteral("running")) {
        const DownloadSnap d = m_downloadSlot.sample();
        if (d.any && (d.fraction != m_download.fraction || d.text != m_download.text ||
                      d.file != m_download.file)) {
            m_download = d;
            emit progressChanged();
        }
    }
    if (m_checkState == QStringLiteral("running")) {
        const QString line = m_checkSlot.sample();
        if (!line.isEmpty() && line != m_checkStatus) {
            m_checkStatus = line;
            emit progressChanged();
        }
    }
    if (m_planState == QStringLiteral("running")) {
        const QString line = m_planSlot.sample();
        if (!line.isEmpty() && line != m_planStatus) {
            m_planStatus = line;
            emit progressChanged();
        }
    }
    if (m_mirrorState == QStringLiteral("running")) {
        const MirrorSnap m = m_mirrorSlot.sample();
        if (m.any && (m.fraction != m_mirrorProgress || m.text != m_mirrorStatus)) {
            m_mirrorProgress = m.fraction;
            m_mirrorStatus = m.text;
            emit progressChanged();
        }
    }
    if (m_convertState != QStringLiteral("running")) return;
    const ConvertSnap s = m_convertSlot.sample();
    if (!s.any) return;
    if (s.fraction == m_convertProgress && s.text == m_convertStatus) return;
    m_convertProgress = s.fraction;
    m_convertStatus = s.text;
    emit progressChanged();
}

std::string WizardController::databasePath() const {
    if (m_settings) return m_settings->effectiveUsageDatabase().toStdString();
    const Result<std::string> p = storage::defaultDatabasePath();
    return p.isOk() ? p.value() : std::string();
}

QString WizardController::modelDir() const {
    if (m_localDir.isEmpty() || !m_sourceSupported) return {};
    if (!convertWanted()) return m_localDir;
    return m_convertState == QStringLiteral("done") ? m_convertedDir : targetDir();
}

QString WizardController::openState() const {
    if (!m_openAsked || !m_engine || m_engine->modelDir() != QDir::cleanPath(modelDir())) return {};
    const QString s = m_engine->loadState();
    return s == QStringLiteral("empty") ? QString() : s;
}

void WizardController::openModel() {
    const QString dir = modelDir();
    if (dir.isEmpty() || !m_engine) return;
    if (convertWanted() && m_convertState != QStringLiteral("done")) return;
    if (m_settings) m_settings->modelChosen(dir); // joins the Models list once it has loaded
    m_openAsked = true;
    m_engine->loadModel(dir);
    emit stateChanged();
}

} // namespace coli::app
