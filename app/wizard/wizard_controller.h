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
// What the wizard cannot do yet says so instead of pretending: searching the Hub and downloading
// (engine/hub is in the build, `coli search` and `coli download` use it, the wizard does not yet),
// plan and doctor, and mirror staging are reported as not available (hubAvailable,
// checksAvailable, mirrorAvailable are false) and give no results. A folder already on this
// computer (e.g. one `coli download` filled) goes through every page.
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
    Q_PROPERTY(QString hubStatus READ hubStatus NOTIFY stateChanged)
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
    Q_PROPERTY(bool mirrorAvailable READ mirrorAvailable CONSTANT)

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
    static bool hubAvailable() { return false; }
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
    static bool mirrorAvailable() { return false; }

    QString modelDir() const;
    QString openState() const;

    Q_INVOKABLE void next();
    Q_INVOKABLE void back();
    // Back to the first page with nothing chosen (a running conversion is cancelled).
    Q_INVOKABLE void restart();
    // Searching the Hub: says it is not available in this build (no results are made up).
    Q_INVOKABLE void search(const QString& text);
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
    // Loads modelDir through the engine (as the Models view does: it joins the list once loaded).
    Q_INVOKABLE void openModel();

    // The file system the converter writes through (tests: a gate or a full disk); must outlive
    // the conversions that use it. Default: the real one.
    void setFileSystem(convert::FileSystem* fs) { m_fs = fs; }
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

private:
    struct ConvertSnap {
        double fraction = 0;
        QString text;
        bool any = false;
    };
    void refreshSpace();
    void sampleProgress();
    void setPage(int p);
    void post(wizard::WizardWorker::Job job);
    void jobDone();

    EngineController* m_engine = nullptr;
    AppSettings* m_settings = nullptr;
    HubToken* m_token = nullptr;
    convert::FileSystem* m_fs = nullptr;

    int m_page = 0;
    int m_jobs = 0;
    QString m_sourceKind = QStringLiteral("local");
    QString m_repoId, m_hubStatus;
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

    bool m_openAsked = false;

    // Last member: its thread starts after everything above exists and is joined before it goes.
    std::unique_ptr<wizard::WizardWorker> m_worker;
};

} // namespace coli::app
