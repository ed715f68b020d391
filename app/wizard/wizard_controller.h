#pragma once
// The model wizard's state (docs/app.md "The model wizard"): the pages in order
//   search (a repo on the Hub, or a folder on this computer) -> place (where it goes, free space,
//   what fits) -> download -> convert (or run as published) -> check (plan and doctor) ->
//   mirror (optional) -> open (load it; it joins the Models list),
// which page may be left and why not, and the long work of each page on the wizard's worker
// thread (WizardWorker): inspecting a folder, free space, the converter in-process with progress
// and cancel. Results come back to the GUI thread as values; the converter's progress is
// published latest-wins and sampled at 10 Hz while it runs (threading contract, rule 4).
//
// A repo on the Hub (HF_ENDPOINT, token from HubToken) is searched (HubApi::search), planned
// (planRepoDownload: files, config.json judged, free space) and downloaded (downloadRepo, with
// the download record, pause, resume and cancel) on the worker thread (wizard_hub.cpp); the
// downloaded folder then goes on like a folder on this computer. The check page runs the doctor
// then the placement plan (engine/placement/model_plan.h: the model loaded on the worker thread
// with streamed experts, at the app's RAM budget), wizard_check.cpp; the mirror page plans and
// stages a mirror on another disk (engine/mirror), wizard_mirror.cpp, and a staged mirror becomes
// the app's mirror folder for the load.
//
// Thread-safety: GUI thread only (QObject affinity). The destructor cancels and joins the worker.
#include "wizard/wizard_worker.h"

#include "convert/file_layer.h"
#include "convert/plan.h"
#include "telemetry.h"

#include <QObject>
#include <QString>
#include <QStringList>
#include <QTimer>
#include <QVariantMap>

#include <memory>
#include <optional>

namespace coli::app {

class AppSettings;
class EngineController;
class HubToken;

class WizardController : public QObject {
    Q_OBJECT
    Q_PROPERTY(int page READ page NOTIFY stateChanged)
    Q_PROPERTY(QString pageName READ pageName NOTIFY stateChanged)
    Q_PROPERTY(QStringList pageNames READ pageNames CONSTANT)
    Q_PROPERTY(bool canBack READ canBack NOTIFY stateChanged)
    Q_PROPERTY(bool canNext READ canNext NOTIFY stateChanged)
    // Why Next is disabled, in words ("" when it is enabled).
    Q_PROPERTY(QString nextHint READ nextHint NOTIFY stateChanged)
    // A job of the current page runs (inspecting, free space, converting): Back waits for it.
    Q_PROPERTY(bool busy READ busy NOTIFY stateChanged)
    // The Hub token (HubToken), made when the Hub is chosen as the source: reading the keychain
    // at start could make the desktop ask to unlock it before the user wants anything from it.
    Q_PROPERTY(QObject* token READ tokenObject NOTIFY stateChanged)

    // ---- search: "hub" (a repo on the Hub) or "local" (a folder on this computer) ----
    Q_PROPERTY(QString sourceKind READ sourceKind WRITE setSourceKind NOTIFY stateChanged)
    Q_PROPERTY(QString repoId READ repoId WRITE setRepoId NOTIFY stateChanged)
    Q_PROPERTY(bool hubAvailable READ hubAvailable CONSTANT)
    // What the last search or repo look-up said ("" while nothing is wrong): errors in words.
    Q_PROPERTY(QString hubStatus READ hubStatus NOTIFY stateChanged)
    // The text of the last search (the search field shows it).
    Q_PROPERTY(QString searchText READ searchText NOTIFY stateChanged)
    // The last search's results, most downloaded first: [{repo, architecture, parameters,
    // downloads, supported (bool), support (words), note, gated}].
    Q_PROPERTY(QVariantList searchResults READ searchResults NOTIFY stateChanged)
    // The chosen repo's download plan: checked, repo, commit, fileCount, totalBytes, totalText,
    // presentText, error. Empty until a repo is chosen.
    Q_PROPERTY(QVariantMap repoPlan READ repoPlan NOTIFY stateChanged)
    // The folder the repo downloads into: targetParent/owner--name ("" for a local source).
    Q_PROPERTY(QString downloadDir READ downloadDir NOTIFY stateChanged)
    Q_PROPERTY(QString localDir READ localDir NOTIFY stateChanged)
    // The card: name, architecture, parameters, experts, sizeText, supported, note, isContainer,
    // formats, containerText. Empty until a source is inspected.
    Q_PROPERTY(QVariantMap source READ source NOTIFY stateChanged)
    Q_PROPERTY(QString sourceError READ sourceError NOTIFY stateChanged)

    // ---- place ----
    Q_PROPERTY(QString targetParent READ targetParent NOTIFY stateChanged)
    Q_PROPERTY(QString targetDir READ targetDir NOTIFY stateChanged)
    // checked, fits, writesNothing, freeText, downloadText, containerText, marginText,
    // neededText, error, note (the destination exists already, ...).
    Q_PROPERTY(QVariantMap space READ space NOTIFY stateChanged)

    // A download an earlier run left unfinished (the newest active or paused record of the app's
    // database), looked up on the worker thread at start: repo, dir, state, message; empty when
    // there is none.
    Q_PROPERTY(QVariantMap unfinishedDownload READ unfinishedDownload NOTIFY stateChanged)
    // ---- download (a Hub source) ----
    // idle | running | paused | done | failed | cancelled
    Q_PROPERTY(QString downloadState READ downloadState NOTIFY stateChanged)
    Q_PROPERTY(double downloadProgress READ downloadProgress NOTIFY progressChanged) // 0..1, total
    Q_PROPERTY(double fileProgress READ fileProgress NOTIFY progressChanged) // the current file
    // "config.json (1 of 6)"; "12.0 MiB of 24.5 MiB, 3.1 MiB/s, 0:04 left"
    Q_PROPERTY(QString downloadFile READ downloadFile NOTIFY progressChanged)
    Q_PROPERTY(QString downloadStatus READ downloadStatus NOTIFY progressChanged)
    Q_PROPERTY(QString downloadError READ downloadError NOTIFY stateChanged)

    // ---- convert ----
    Q_PROPERTY(bool convertWanted READ convertWanted WRITE setConvertWanted NOTIFY stateChanged)
    // As `coli convert` offers them: experts int4-g64 | int4-g32 | int8; dense and embeddings
    // int8 | bf16.
    Q_PROPERTY(QString expertFormat READ expertFormat WRITE setExpertFormat NOTIFY stateChanged)
    Q_PROPERTY(QString denseFormat READ denseFormat WRITE setDenseFormat NOTIFY stateChanged)
    Q_PROPERTY(QString embedFormat READ embedFormat WRITE setEmbedFormat NOTIFY stateChanged)
    // idle | running | done | failed | cancelled
    Q_PROPERTY(QString convertState READ convertState NOTIFY stateChanged)
    Q_PROPERTY(double convertProgress READ convertProgress NOTIFY progressChanged)
    Q_PROPERTY(QString convertStatus READ convertStatus NOTIFY progressChanged)
    Q_PROPERTY(QString convertError READ convertError NOTIFY stateChanged)

    // ---- check (engine/doctor: `coli doctor`), mirror ----
    Q_PROPERTY(bool checksAvailable READ checksAvailable CONSTANT)
    // idle | running | done | failed | cancelled; started on entering the page
    Q_PROPERTY(QString checkState READ checkState NOTIFY stateChanged)
    Q_PROPERTY(QString checkStatus READ checkStatus NOTIFY progressChanged)
    // ready, kind, architecture, weightFiles, filesChecked, chatTemplate, bandwidthText, errors,
    // warnings, findings: [{severity, file, problem, action}], error (the doctor could not run)
    Q_PROPERTY(QVariantMap checkReport READ checkReport NOTIFY stateChanged)
    // The placement plan at the app's RAM budget, after a ready check: idle | running | done |
    // failed | cancelled; planStatus says the step ("Running a short prompt…").
    Q_PROPERTY(QString planState READ planState NOTIFY stateChanged)
    Q_PROPERTY(QString planStatus READ planStatus NOTIFY progressChanged)
    // budgetText, denseText, expertsText, fitText, hitRateText, hitSource, memoryPerTokenText,
    // diskPerTokenText, memoryRateText, diskRateText, speedText, tokensPerSecond (number), error
    Q_PROPERTY(QVariantMap planReport READ planReport NOTIFY stateChanged)
    Q_PROPERTY(bool mirrorAvailable READ mirrorAvailable CONSTANT)
    // ---- mirror (optional) ----
    Q_PROPERTY(QString mirrorDir READ mirrorDir NOTIFY stateChanged)
    // The mirror plan for mirrorDir (`coli mirror plan`): checked, error, sameDisk, freeText,
    // reserveText, roomText, rankingText, fileCount, mirrorText, copyText, coveredText, staged
    // (every chosen file is already there), files: [{path, sizeText, experts, choice}].
    Q_PROPERTY(QVariantMap mirrorPlan READ mirrorPlan NOTIFY stateChanged)
    // idle | running | done | failed | cancelled
    Q_PROPERTY(QString mirrorState READ mirrorState NOTIFY stateChanged)
    Q_PROPERTY(double mirrorProgress READ mirrorProgress NOTIFY progressChanged) // 0..1
    Q_PROPERTY(QString mirrorStatus READ mirrorStatus NOTIFY progressChanged)
    Q_PROPERTY(QString mirrorError READ mirrorError NOTIFY stateChanged)

    // ---- open ----
    Q_PROPERTY(QString modelDir READ modelDir NOTIFY stateChanged) // the folder Open loads
    // "" (not asked), loading, ready, error (the engine's load of modelDir)
    Q_PROPERTY(QString openState READ openState NOTIFY stateChanged)

public:
    // `engine` and `settings` must outlive this object; either may be null in tests of the flow.
    WizardController(EngineController* engine, AppSettings* settings, QObject* parent = nullptr);
    ~WizardController() override;

    int page() const { return m_page; }
    QString pageName() const { return pageNames().value(m_page); }
    static QStringList pageNames();
    bool canBack() const;
    bool canNext() const { return nextHint().isEmpty() && m_page + 1 < pageNames().size(); }
    QString nextHint() const;
    bool busy() const { return m_jobs > 0; }
    QObject* tokenObject() const;

    QString sourceKind() const { return m_sourceKind; }
    void setSourceKind(const QString& kind);
    QString repoId() const { return m_repoId; }
    void setRepoId(const QString& id);
    static bool hubAvailable() { return true; }
    QString searchText() const { return m_searchText; }
    QVariantMap unfinishedDownload() const { return m_unfinished; }
    QVariantList searchResults() const { return m_searchResults; }
    QVariantMap repoPlan() const { return m_repoPlan; }
    QString downloadDir() const;
    QString downloadState() const { return m_downloadState; }
    double downloadProgress() const { return m_download.fraction; }
    double fileProgress() const { return m_download.fileFraction; }
    QString downloadFile() const { return m_download.file; }
    QString downloadStatus() const { return m_download.text; }
    QString downloadError() const { return m_downloadError; }
    QString hubStatus() const { return m_hubStatus; }
    QString localDir() const { return m_localDir; }
    QVariantMap source() const { return m_source; }
    QString sourceError() const { return m_sourceError; }

    QString targetParent() const { return m_targetParent; }
    QString targetDir() const;
    QVariantMap space() const { return m_space; }

    bool convertWanted() const;
    void setConvertWanted(bool on);
    QString expertFormat() const { return m_expertFormat; }
    void setExpertFormat(const QString& f);
    QString denseFormat() const { return m_denseFormat; }
    void setDenseFormat(const QString& f);
    QString embedFormat() const { return m_embedFormat; }
    void setEmbedFormat(const QString& f);
    QString convertState() const { return m_convertState; }
    double convertProgress() const { return m_convertProgress; }
    QString convertStatus() const { return m_convertStatus; }
    QString convertError() const { return m_convertError; }

    static bool checksAvailable() { return true; }
    QString checkState() const { return m_checkState; }
    QString checkStatus() const { return m_checkStatus; }
    QVariantMap checkReport() const { return m_checkReport; }
    QString planState() const { return m_planState; }
    QString planStatus() const { return m_planStatus; }
    QVariantMap planReport() const { return m_planReport; }
    static bool mirrorAvailable() { return true; }
    QString mirrorDir() const { return m_mirrorDir; }
    QVariantMap mirrorPlan() const { return m_mirrorPlan; }
    QString mirrorState() const { return m_mirrorState; }
    double mirrorProgress() const { return m_mirrorProgress; }
    QString mirrorStatus() const { return m_mirrorStatus; }
    QString mirrorError() const { return m_mirrorError; }

    QString modelDir() const;
    QString openState() const;

    Q_INVOKABLE void next();
    Q_INVOKABLE void back();
    // Back to the first page with nothing chosen (a running conversion is cancelled).
    Q_INVOKABLE void restart();
    // Searches the Hub for `text` on the worker thread (searchResults, searchFinished); text of
    // the form owner/name is also chosen as the repo.
    Q_INVOKABLE void search(const QString& text);
    // A repo as the source: its info and download plan on the worker thread (source, repoPlan,
    // sourceInspected); an unsupported architecture is refused by name.
    Q_INVOKABLE void chooseRepo(const QString& repo);
    // Downloads the chosen repo into downloadDir on the worker thread (also resumes a paused
    // or failed one: only the missing bytes are fetched). Pause keeps the .part files and the
    // record; Cancel deletes the .parts (installed files stay).
    Q_INVOKABLE void startDownload();
    // Chooses the unfinished download's repo into its own folder and goes to the Download page
    // once the repo is planned (Resume there fetches only the rest).
    Q_INVOKABLE void resumeUnfinished();
    Q_INVOKABLE void pauseDownload();
    Q_INVOKABLE void cancelDownload();
    // A folder on this computer as the source: inspected on the worker thread (source, space).
    Q_INVOKABLE void chooseLocalFolder(const QString& dir);
    // Where the container goes (its parent folder); free space is asked on the worker thread.
    Q_INVOKABLE void chooseTargetParent(const QString& dir);
    Q_INVOKABLE void startConvert();
    Q_INVOKABLE void cancelConvert();
    // The doctor on modelDir (files, headers, tokenizer, chat template, the disk's read
    // bandwidth) on the worker thread; also started on entering the check page.
    Q_INVOKABLE void startCheck();
    Q_INVOKABLE void cancelCheck();
    // The placement plan of modelDir (loads it on the worker thread with streamed experts at the
    // Settings' RAM budget, else the default from free memory; may run a short prompt for the
    // hit rate); also started when a check finds the model ready. Leaving the page cancels it.
    Q_INVOKABLE void startPlan();
    Q_INVOKABLE void cancelPlan();
    // A folder on another disk for the mirror: planned on the worker thread (mirrorPlan).
    Q_INVOKABLE void chooseMirrorFolder(const QString& dir);
    // Stages the plan's files into mirrorDir (copy, fsync, hash, atomic rename, receipt last;
    // resumable); when it is done the folder becomes the Settings' mirror folder, used by Open.
    Q_INVOKABLE void startMirror();
    Q_INVOKABLE void cancelMirror();
    // Loads modelDir through the engine (as the Models view does: it joins the list once loaded).
    Q_INVOKABLE void openModel();

    // The file system the converter writes through (tests: a gate or a full disk); must outlive
    // the conversions that use it. Default: the real one.
    void setFileSystem(convert::FileSystem* fs) { m_fs = fs; }
    // The free space (bytes) the place and download pages keep instead of wizard::spaceMargin of
    // the disk's size, and the mirror page instead of the mirror plan's reserve (5 % of its file
    // system) (tests: 5 % of a big, full disk must not decide them). nullopt: the defaults.
    void setSpaceMargin(std::optional<uint64_t> bytes) { m_spaceMargin = bytes; }
    convert::PlanOptions planOptions() const;

signals:
    void stateChanged();
    void progressChanged();
    // A conversion ended: state is done, failed or cancelled.
    void convertFinished(const QString& state);
    // A check ended: state is done, failed or cancelled.
    void checkFinished(const QString& state);
    // A job that fills `source` or `space` answered.
    void sourceInspected();
    void spaceChecked();
    void searchFinished();
    // A download ended: state is done, paused, failed or cancelled.
    void downloadFinished(const QString& state);
    // A placement plan ended: done, failed or cancelled.
    void planFinished(const QString& state);
    // A mirror plan answered (mirrorPlan), a staging ended (done, failed or cancelled).
    void mirrorPlanned();
    void mirrorFinished(const QString& state);

private:
    struct ConvertSnap {
        double fraction = 0;
        QString text;
        bool any = false;
    };
    struct DownloadSnap {
        double fraction = 0, fileFraction = 0;
        QString file, text, doneText; // doneText: "12.0 MiB of 24.5 MiB"
        bool any = false;
    };
    void refreshSpace();
    void refreshHubSpace(uint64_t generation);
    // The margin the space checks keep on a disk of `diskBytes` (an error: the smallest margin).
    uint64_t marginFor(const Result<uint64_t>& diskBytes) const;
    void inspectFolder(const QString& dir);
    void findUnfinished();
    void sampleProgress();
    void setPage(int p);
    void post(wizard::WizardWorker::Job job);
    // The usage database the wizard's jobs read and record in: the Settings' choice, else the
    // default location ("" when there is no home folder).
    std::string databasePath() const;
    void jobDone();

    EngineController* m_engine = nullptr;
    AppSettings* m_settings = nullptr;
    HubToken* m_token = nullptr;
    convert::FileSystem* m_fs = nullptr;
    std::optional<uint64_t> m_spaceMargin; // setSpaceMargin

    int m_page = 0;
    int m_jobs = 0;
    QString m_sourceKind = QStringLiteral("local");
    QString m_repoId, m_hubStatus;
    QString m_searchText;
    QVariantMap m_unfinished;
    QString m_downloadDirOverride, m_overrideRepo; // an unfinished download's own folder, repo
    bool m_toDownloadPage = false; // resumeUnfinished: go there once the repo is planned
    QVariantList m_searchResults;
    QVariantMap m_repoPlan;
    quint64 m_repoBytes = 0;         // the chosen repo's files to download, in bytes
    uint64_t m_hubGeneration = 0;    // a newer repo replaces an older answer
    uint64_t m_searchGeneration = 0; // a newer search replaces an older answer
    QString m_downloadState = QStringLiteral("idle");
    QString m_downloadError;
    DownloadSnap m_download;
    wizard::WizardWorker::Cancel m_downloadStop, m_downloadDiscard;
    LatestWins<DownloadSnap> m_downloadSlot;
    QString m_localDir, m_sourceError;
    QVariantMap m_source;
    bool m_sourceSupported = false, m_sourceIsContainer = false;
    quint64 m_containerBytes = 0; // the container's planned size for the chosen formats

    QString m_targetParent;
    QVariantMap m_space;
    bool m_fits = false;
    uint64_t m_spaceGeneration = 0; // a newer request replaces an older answer

    bool m_convertWanted = true;
    QString m_expertFormat = QStringLiteral("int4-g64");
    QString m_denseFormat = QStringLiteral("int8");
    QString m_embedFormat = QStringLiteral("int8");
    QString m_convertState = QStringLiteral("idle");
    double m_convertProgress = 0;
    QString m_convertStatus, m_convertError, m_convertedDir;
    wizard::WizardWorker::Cancel m_convertCancel;
    LatestWins<ConvertSnap> m_convertSlot;
    QTimer m_progressTimer;

    QString m_checkState = QStringLiteral("idle");
    QString m_checkStatus, m_checkedDir;
    QVariantMap m_checkReport;
    wizard::WizardWorker::Cancel m_checkCancel;
    LatestWins<QString> m_checkSlot;

    QString m_planState = QStringLiteral("idle");
    QString m_planStatus, m_plannedDir;
    QVariantMap m_planReport;
    wizard::WizardWorker::Cancel m_planCancel;
    LatestWins<QString> m_planSlot;

    QString m_mirrorDir;
    QVariantMap m_mirrorPlan;
    uint64_t m_mirrorGeneration = 0; // a newer folder replaces an older answer
    QString m_mirrorState = QStringLiteral("idle");
    double m_mirrorProgress = 0;
    QString m_mirrorStatus, m_mirrorError;
    wizard::WizardWorker::Cancel m_mirrorCancel;
    struct MirrorSnap {
        double fraction = 0;
        QString text;
        bool any = false;
    };
    LatestWins<MirrorSnap> m_mirrorSlot;

    bool m_openAsked = false;

    // Last member: its thread starts after everything above exists and is joined before it goes.
    std::unique_ptr<wizard::WizardWorker> m_worker;
};

} // namespace coli::app
