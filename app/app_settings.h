#pragma once
// The user's settings, persisted with QSettings (organisation "Colibri", application
// "Colibri Desktop": ~/.config/Colibri/Colibri Desktop.conf, or under $XDG_CONFIG_HOME), and the
// models the Models view lists (the default one and the folders loaded before). Each setter
// writes through at once, so a killed app keeps what was set.
//
// When settings apply: theme and sampling at once (the next answer); threads and direct I/O at
// the next model load (`reloadNeeded` says a change waits for it); the RAM budget and prefetch
// at every load (loadSettings()) and at once to the loaded model (connectSettings applies them
// through the TierMonitor, between two tokens); the VRAM budget at every load and at once
// (between two answers), and a VRAM budget the Tiers view put in force is saved here.
//
// Thread-safety: GUI thread only (QObject affinity), except forgetUsageOn, which runs on its own
// thread (see there).
#include "app_options.h"
#include "command_queue.h"
#include "system_theme.h"

#include "runtime/sampling_defaults.h"

#include <QObject>
#include <QSize>
#include <QString>
#include <QStringList>
#include <QVariantList>

#include <functional>
#include <thread>

namespace coli::storage {
class Storage;
}

namespace coli::app {

class AppSettings : public QObject {
    Q_OBJECT
    // "system" (follow the desktop), "light" or "dark"; `dark` is the scheme in effect.
    Q_PROPERTY(QString theme READ theme WRITE setTheme NOTIFY themeChanged)
    Q_PROPERTY(bool dark READ dark NOTIFY themeChanged)
    Q_PROPERTY(QString systemThemeSource READ systemThemeSource NOTIFY themeChanged)
    // Forward-pass threads, 0 = all cores but one (defaultEngineThreads()); next load.
    Q_PROPERTY(int threads READ threads WRITE setThreads NOTIFY threadsChanged)
    Q_PROPERTY(int defaultThreads READ defaultThreads CONSTANT)
    // RAM for streamed experts in MiB, 0 = automatic (from MemAvailable at load).
    Q_PROPERTY(int ramBudgetMiB READ ramBudgetMiB WRITE setRamBudgetMiB NOTIFY ramBudgetChanged)
    // How expert files are read (docs/tiers.md "Buffered or O_DIRECT"), next load: "auto" (the
    // engine's rule: O_DIRECT for each file that passes its check), "direct" (O_DIRECT always;
    // a file system without it fails the load), "buffered" (the page cache). A setting saved by
    // an older version as engine/directIo = true reads as "direct".
    Q_PROPERTY(QString readMode READ readMode WRITE setReadMode NOTIFY readModeChanged)
    Q_PROPERTY(bool prefetch READ prefetch WRITE setPrefetch NOTIFY prefetchChanged)
    // A mirror of model files on a second disk (`coli mirror stage`; docs/mirror.md), applied at
    // the next model load; "" = none.
    Q_PROPERTY(
        QString mirrorFolder READ mirrorFolder WRITE setMirrorFolder NOTIFY mirrorFolderChanged)
    // The GPU that computes experts (the VRAM tier, docs/gpu.md), next load: "none" (the
    // default), "auto" (a discrete, else an integrated GPU) or a Vulkan device's name (matched
    // as a case-insensitive substring, as `coli generate --gpu NAME`). gpuDevices lists the
    // machine's devices, [{name, description}] (gpu::describeDevice), read once on first use;
    // gpuDevicesProblem says why the list is empty ("" when Vulkan answered).
    Q_PROPERTY(QString gpuDevice READ gpuDevice WRITE setGpuDevice NOTIFY gpuDeviceChanged)
    Q_PROPERTY(QVariantList gpuDevices READ gpuDevices CONSTANT)
    Q_PROPERTY(QString gpuDevicesProblem READ gpuDevicesProblem CONSTANT)
    // VRAM for experts in MiB (QSettings engine/vramBudgetMiB; fractions kept: an expert can be
    // far smaller than a MiB), 0 = the engine's default (docs/gpu.md "Budget"). Applied after
    // every load with a GPU tier and at once to the loaded model (between two answers); the
    // Tiers view's VRAM budget is saved here once the engine applied it.
    Q_PROPERTY(
        double vramBudgetMiB READ vramBudgetMiB WRITE setVramBudgetMiB NOTIFY vramBudgetChanged)
    // Default sampling: when customSampling is false the model's generation_config.json applies.
    Q_PROPERTY(
        bool customSampling READ customSampling WRITE setCustomSampling NOTIFY samplingChanged)
    Q_PROPERTY(double temperature READ temperature WRITE setTemperature NOTIFY samplingChanged)
    Q_PROPERTY(int topK READ topK WRITE setTopK NOTIFY samplingChanged)
    Q_PROPERTY(double topP READ topP WRITE setTopP NOTIFY samplingChanged)
    Q_PROPERTY(double minP READ minP WRITE setMinP NOTIFY samplingChanged)
    Q_PROPERTY(
        double repeatPenalty READ repeatPenalty WRITE setRepeatPenalty NOTIFY samplingChanged)
    Q_PROPERTY(int maxNewTokens READ maxNewTokens WRITE setMaxNewTokens NOTIFY samplingChanged)
    // The usage database (learned heat and pins); "" = the default location.
    Q_PROPERTY(
        QString usageDatabase READ usageDatabase WRITE setUsageDatabase NOTIFY usageDatabaseChanged)
    Q_PROPERTY(
        QString effectiveUsageDatabase READ effectiveUsageDatabase NOTIFY usageDatabaseChanged)
    // A setting that only a reload applies (threads, direct I/O) changed since the last load.
    Q_PROPERTY(bool reloadNeeded READ reloadNeeded NOTIFY reloadNeededChanged)
    // The Models view's rows: {name, path, sizeText, isDefault, exists}, the default first.
    Q_PROPERTY(QVariantList models READ models NOTIFY modelsChanged)
    Q_PROPERTY(QString defaultModelDir READ defaultModelDir CONSTANT)
public:
    explicit AppSettings(QString defaultModelDir, QObject* parent = nullptr);
    ~AppSettings() override; // waits for a running forgetUsage

    QString theme() const;
    void setTheme(const QString& t);
    // The main window's size when it was last closed, in logical pixels ("window/size"); an
    // invalid QSize when none was saved. Not a QML property: app_window.cpp restores it before
    // the window shows and saves it after each resize. An invalid size forgets the saved one.
    QSize windowSize() const;
    void setWindowSize(QSize size);
    bool dark() const;
    QString systemThemeSource() const { return m_system.source(); }
    int threads() const;
    void setThreads(int n);
    int defaultThreads() const;
    int ramBudgetMiB() const;
    void setRamBudgetMiB(int mib);
    QString readMode() const;
    void setReadMode(const QString& mode); // other values than the three above are ignored
    bool prefetch() const;
    void setPrefetch(bool on);
    QString mirrorFolder() const;
    void setMirrorFolder(const QString& dir);
    // True when `dir` holds a mirror receipt (colibri-mirror.json): staging finished there.
    Q_INVOKABLE bool isMirrorFolder(const QString& dir) const;
    QString gpuDevice() const;
    void setGpuDevice(const QString& spec); // trimmed; an empty text is ignored
    QVariantList gpuDevices() const;
    QString gpuDevicesProblem() const;
    double vramBudgetMiB() const;
    void setVramBudgetMiB(double mib); // clamped to [0, 2^30 MiB]; not a number is ignored
    bool customSampling() const;
    void setCustomSampling(bool on);
    double temperature() const;
    void setTemperature(double v);
    int topK() const;
    void setTopK(int v);
    double topP() const;
    void setTopP(double v);
    double minP() const;
    void setMinP(double v);
    double repeatPenalty() const;
    void setRepeatPenalty(double v);
    int maxNewTokens() const;
    void setMaxNewTokens(int v);
    QString usageDatabase() const;
    void setUsageDatabase(const QString& path);
    QString effectiveUsageDatabase() const;
    bool reloadNeeded() const { return m_reloadNeeded; }
    QVariantList models() const;
    QString defaultModelDir() const { return m_defaultModelDir; }

    // What the settings give the engine: the load options (threads: the setting, else
    // `fallbackThreads`) and the sampling overrides (none unless customSampling).
    LoadSettings loadSettings(int fallbackThreads) const;
    SamplingOverrides samplingOverrides() const;

    // ---- the model folders ----
    // The folder to open at start when the command line names none: the last folder chosen in
    // the window that loaded, if it still exists; else the default. *notice gets a sentence
    // when the remembered folder is gone or failed to load last time (it is not tried again).
    QString startupModelDir(QString* notice) const;
    // The user chose `dir` in the window (Models view): remembered once it has loaded.
    Q_INVOKABLE void modelChosen(const QString& dir);
    // A load ended: "ready" adds the folder to the recent list (and remembers it as the start
    // folder when it was chosen in the window); "error" forgets it as the start folder, so a
    // folder that failed is not reopened at the next start.
    void modelLoadEnded(const QString& dir, bool ok);
    // Removes a folder from the recent list (not from the disk).
    Q_INVOKABLE void forgetModel(const QString& dir);
    // True when `dir` holds a config.json (what a model folder has first).
    Q_INVOKABLE bool isModelFolder(const QString& dir) const;
    Q_INVOKABLE QString homeFolder() const;
    // A local path from what a file dialog gives (file:// URL or path).
    Q_INVOKABLE QString localPath(const QVariant& urlOrPath) const;

    // ---- forget learned usage ----
    // Deletes the heat and pins of the model in `modelDir` from the usage database, never on the
    // GUI thread: through the runner when one is set (the app's storage thread,
    // SessionManager::forgetUsage), else on a thread of its own with its own connection; emits
    // usageForgotten(message) on the GUI thread when done, with what happened in words.
    Q_INVOKABLE void forgetUsage(const QString& modelDir);
    // `run(modelDir, done)` must call done(message) on the GUI thread.
    using ForgetRunner = std::function<void(const QString&, std::function<void(const QString&)>)>;
    void setForgetRunner(ForgetRunner run) { m_forgetRunner = std::move(run); }
    // The work itself (any thread; opens and closes its own connection). Returns the message.
    static QString forgetUsageOn(const QString& databasePath, const QString& modelDir);
    // The same on an open database (the thread that opened it).
    static QString forgetUsageIn(storage::Storage& db, const QString& modelDir);

    static QString keyLastDir() { return QStringLiteral("model/lastDir"); }
    static QString keyRecent() { return QStringLiteral("model/recent"); }
    static QString keyFailed() { return QStringLiteral("model/failedDir"); }
    static constexpr int kMaxRecent = 10;

signals:
    void themeChanged();
    void threadsChanged();
    void ramBudgetChanged();
    void readModeChanged();
    void prefetchChanged();
    void mirrorFolderChanged();
    void gpuDeviceChanged();
    void vramBudgetChanged();
    void samplingChanged();
    void usageDatabaseChanged();
    void reloadNeededChanged();
    void modelsChanged();
    void usageForgotten(const QString& message);

private:
    QVariant value(const QString& key, const QVariant& fallback) const;
    void store(const QString& key, const QVariant& v);
    void setReloadNeeded(bool on);
    void readGpuDevices() const;

    QString m_defaultModelDir;
    QString m_pendingChoice; // chosen in the window, not loaded yet
    bool m_reloadNeeded = false;
    SystemTheme m_system;
    std::thread m_forgetThread;
    ForgetRunner m_forgetRunner;
    // Filled on first use: creating a Vulkan instance costs tens of milliseconds, which a start
    // that never opens the Settings view should not pay.
    mutable bool m_gpuDevicesRead = false;
    mutable QVariantList m_gpuDevices;
    mutable QString m_gpuDevicesProblem;
};

// What the first answers use: the command line's flags where given, else the settings (whose
// sampling is "the model's defaults" unless customSampling). The seed is the command line's.
GenerateParams mergedParams(const AppOptions& opt, const AppSettings& settings);
SamplingOverrides mergedSampling(const AppOptions& opt, const AppSettings& settings);

} // namespace coli::app
