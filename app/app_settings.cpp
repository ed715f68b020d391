#include "app_settings.h"

#include "app_options.h"
#include "gpu/devices.h"
#include "mirror/mirror_receipt.h"

#include "storage/database.h"
#include "storage/location.h"
#include "storage/model_identity.h"

#include <QCoreApplication>
#include <QDir>
#include <QDirIterator>
#include <QFileInfo>
#include <QLocale>
#include <QPointer>
#include <QSettings>
#include <QUrl>

#include <algorithm>
#include <cmath>
#include <optional>
#include <thread>

namespace coli::app {

namespace {

constexpr double kMaxVramBudgetMiB = 1024.0 * 1024.0 * 1024.0; // 1 PiB: more than any device

// The read mode as the setting stores it; nullopt for any other text.
std::optional<aio::DirectIo> parseReadMode(const QString& mode) {
    if (mode == QLatin1String("auto")) return aio::DirectIo::Auto;
    if (mode == QLatin1String("direct")) return aio::DirectIo::On;
    if (mode == QLatin1String("buffered")) return aio::DirectIo::Off;
    return std::nullopt;
}
QSettings open() {
    return QSettings(QStringLiteral("Colibri"), QStringLiteral("Colibri Desktop"));
}

// Bytes of the regular files under `dir` (a model folder: a few files, one level or two).
qint64 folderBytes(const QString& dir) {
    qint64 total = 0;
    QDirIterator it(dir, QDir::Files | QDir::NoDotAndDotDot, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        it.next();
        total += it.fileInfo().size();
    }
    return total;
}

QVariantMap modelRow(const QString& dir, bool isDefault) {
    const QFileInfo fi(dir);
    QVariantMap m;
    m[QStringLiteral("name")] = QDir(dir).dirName();
    m[QStringLiteral("path")] = QDir::toNativeSeparators(dir);
    m[QStringLiteral("isDefault")] = isDefault;
    m[QStringLiteral("exists")] = fi.isDir();
    m[QStringLiteral("sizeText")] =
        fi.isDir()
            ? QLocale::system().formattedDataSize(folderBytes(dir), 1, QLocale::DataSizeIecFormat)
            : QObject::tr("folder not found");
    return m;
}
} // namespace

AppSettings::AppSettings(QString defaultModelDir, QObject* parent)
    : QObject(parent), m_defaultModelDir(QDir::cleanPath(std::move(defaultModelDir))) {
    connect(&m_system, &SystemTheme::changed, this, [this] {
        if (theme() == QStringLiteral("system")) emit themeChanged();
    });
}

AppSettings::~AppSettings() {
    if (m_forgetThread.joinable()) m_forgetThread.join();
}

QVariant AppSettings::value(const QString& key, const QVariant& fallback) const {
    return open().value(key, fallback);
}

void AppSettings::store(const QString& key, const QVariant& v) {
    QSettings s = open();
    s.setValue(key, v);
}

void AppSettings::setReloadNeeded(bool on) {
    if (on == m_reloadNeeded) return;
    m_reloadNeeded = on;
    emit reloadNeededChanged();
}

// ---- appearance ----
QSize AppSettings::windowSize() const {
    return value(QStringLiteral("window/size"), QVariant()).toSize();
}

void AppSettings::setWindowSize(QSize size) {
    if (size.isValid()) return store(QStringLiteral("window/size"), size);
    open().remove(QStringLiteral("window/size"));
}

QString AppSettings::theme() const {
    const QString t =
        value(QStringLiteral("appearance/theme"), QStringLiteral("system")).toString();
    return t == QStringLiteral("light") || t == QStringLiteral("dark") ? t
                                                                       : QStringLiteral("system");
}
void AppSettings::setTheme(const QString& t) {
    if (t == theme()) return;
    store(QStringLiteral("appearance/theme"), t);
    emit themeChanged();
}
bool AppSettings::dark() const {
    const QString t = theme();
    return t == QStringLiteral("system") ? m_system.dark() : t == QStringLiteral("dark");
}

// ---- engine ----
int AppSettings::threads() const {
    return std::clamp(value(QStringLiteral("engine/threads"), 0).toInt(), 0, 4096);
}
void AppSettings::setThreads(int n) {
    n = std::clamp(n, 0, 4096);
    if (n == threads()) return;
    store(QStringLiteral("engine/threads"), n);
    emit threadsChanged();
    setReloadNeeded(true);
}
int AppSettings::defaultThreads() const {
    return defaultEngineThreads();
}
int AppSettings::ramBudgetMiB() const {
    return std::max(0, value(QStringLiteral("engine/ramBudgetMiB"), 0).toInt());
}
void AppSettings::setRamBudgetMiB(int mib) {
    mib = std::max(0, mib);
    if (mib == ramBudgetMiB()) return;
    store(QStringLiteral("engine/ramBudgetMiB"), mib);
    emit ramBudgetChanged();
}
double AppSettings::vramBudgetMiB() const {
    const double mib = value(QStringLiteral("engine/vramBudgetMiB"), 0.0).toDouble();
    return std::isfinite(mib) ? std::clamp(mib, 0.0, kMaxVramBudgetMiB) : 0.0;
}
void AppSettings::setVramBudgetMiB(double mib) {
    if (std::isnan(mib)) return;
    mib = std::clamp(mib, 0.0, kMaxVramBudgetMiB);
    if (mib == vramBudgetMiB()) return;
    store(QStringLiteral("engine/vramBudgetMiB"), mib);
    emit vramBudgetChanged();
}
QString AppSettings::readMode() const {
    const QString mode = value(QStringLiteral("engine/readMode"), QString()).toString();
    if (parseReadMode(mode)) return mode;
    // Before the three-way choice: a switch, on meaning O_DIRECT always.
    return value(QStringLiteral("engine/directIo"), false).toBool() ? QStringLiteral("direct")
                                                                    : QStringLiteral("auto");
}
void AppSettings::setReadMode(const QString& mode) {
    if (!parseReadMode(mode) || mode == readMode()) return;
    store(QStringLiteral("engine/readMode"), mode);
    emit readModeChanged();
    setReloadNeeded(true);
}
QString AppSettings::mirrorFolder() const {
    return value(QStringLiteral("engine/mirrorFolder"), QString()).toString();
}
void AppSettings::setMirrorFolder(const QString& dir) {
    if (dir == mirrorFolder()) return;
    store(QStringLiteral("engine/mirrorFolder"), dir);
    emit mirrorFolderChanged();
    setReloadNeeded(true);
}
bool AppSettings::isMirrorFolder(const QString& dir) const {
    return !dir.isEmpty() &&
           QFileInfo(QDir(dir).filePath(QString::fromLatin1(mirror::kMirrorReceiptName))).isFile();
}
QString AppSettings::gpuDevice() const {
    const QString spec = value(QStringLiteral("engine/gpu"), QString()).toString().trimmed();
    return spec.isEmpty() ? QStringLiteral("none") : spec;
}
void AppSettings::setGpuDevice(const QString& spec) {
    const QString s = spec.trimmed();
    if (s.isEmpty() || s == gpuDevice()) return;
    store(QStringLiteral("engine/gpu"), s);
    emit gpuDeviceChanged();
    setReloadNeeded(true);
}
void AppSettings::readGpuDevices() const {
    if (m_gpuDevicesRead) return;
    m_gpuDevicesRead = true;
    Result<std::vector<gpu::DeviceInfo>> devices = gpu::listDevices();
    if (!devices) {
        m_gpuDevicesProblem = QString::fromStdString(devices.status().message());
        return;
    }
    for (const gpu::DeviceInfo& d : *devices)
        m_gpuDevices.append(QVariantMap{
            {QStringLiteral("name"), QString::fromStdString(d.name)},
            {QStringLiteral("description"), QString::fromStdString(gpu::describeDevice(d))}});
    if (m_gpuDevices.isEmpty()) m_gpuDevicesProblem = tr("Vulkan lists no device.");
}
QVariantList AppSettings::gpuDevices() const {
    readGpuDevices();
    return m_gpuDevices;
}
QString AppSettings::gpuDevicesProblem() const {
    readGpuDevices();
    return m_gpuDevicesProblem;
}
bool AppSettings::prefetch() const {
    return value(QStringLiteral("engine/prefetch"), true).toBool();
}
void AppSettings::setPrefetch(bool on) {
    if (on == prefetch()) return;
    store(QStringLiteral("engine/prefetch"), on);
    emit prefetchChanged();
}

// ---- sampling (the same ranges as the command line's flags: SamplerParams::validate) ----
#define COLI_SAMPLING_SETTING(Type, getter, setter, key, fallback, lo, hi)                         \
    Type AppSettings::getter() const {                                                             \
        return std::clamp<Type>(value(QStringLiteral(key), fallback).value<Type>(), lo, hi);       \
    }                                                                                              \
    void AppSettings::setter(Type v) {                                                             \
        v = std::clamp<Type>(v, lo, hi);                                                           \
        if (v == getter()) return;                                                                 \
        store(QStringLiteral(key), v);                                                             \
        emit samplingChanged();                                                                    \
    }
COLI_SAMPLING_SETTING(double, temperature, setTemperature, "sampling/temperature", 0.8, 0.0, 100.0)
COLI_SAMPLING_SETTING(int, topK, setTopK, "sampling/topK", 40, 0, 1000000)
COLI_SAMPLING_SETTING(double, topP, setTopP, "sampling/topP", 0.95, 0.0, 1.0)
COLI_SAMPLING_SETTING(double, minP, setMinP, "sampling/minP", 0.05, 0.0, 1.0)
COLI_SAMPLING_SETTING(double, repeatPenalty, setRepeatPenalty, "sampling/repeatPenalty", 1.0, 0.01,
                      100.0)
COLI_SAMPLING_SETTING(int, maxNewTokens, setMaxNewTokens, "sampling/maxNewTokens", 512, 1,
                      100000000)
#undef COLI_SAMPLING_SETTING

bool AppSettings::customSampling() const {
    return value(QStringLiteral("sampling/custom"), false).toBool();
}
void AppSettings::setCustomSampling(bool on) {
    if (on == customSampling()) return;
    store(QStringLiteral("sampling/custom"), on);
    emit samplingChanged();
}

SamplingOverrides AppSettings::samplingOverrides() const {
    SamplingOverrides s;
    if (!customSampling()) return s;
    s.temperature = float(temperature());
    s.topK = topK();
    s.topP = float(topP());
    s.minP = float(minP());
    s.repeatPenalty = float(repeatPenalty());
    return s;
}

LoadSettings AppSettings::loadSettings(int fallbackThreads) const {
    LoadSettings l;
    l.threads = threads() > 0 ? threads() : fallbackThreads;
    l.ramBudgetBytes = uint64_t(ramBudgetMiB()) << 20;
    l.readMode = parseReadMode(readMode()).value_or(aio::DirectIo::Auto);
    l.prefetch = prefetch();
    l.mirrorDir = mirrorFolder().toStdString();
    l.gpu = gpuDevice().toStdString();
    l.vramBudgetBytes = uint64_t(std::llround(vramBudgetMiB() * 1048576.0));
    return l;
}

// ---- usage database ----
QString AppSettings::usageDatabase() const {
    return value(QStringLiteral("usage/database"), QString()).toString();
}
void AppSettings::setUsageDatabase(const QString& path) {
    const QString p = localPath(path);
    if (p == usageDatabase()) return;
    store(QStringLiteral("usage/database"), p);
    emit usageDatabaseChanged();
}
QString AppSettings::effectiveUsageDatabase() const {
    if (!usageDatabase().isEmpty()) return usageDatabase();
    const Result<std::string> p = storage::defaultDatabasePath();
    return p.isOk() ? QString::fromStdString(p.value()) : QString();
}

void AppSettings::forgetUsage(const QString& modelDir) {
    if (m_forgetRunner) {
        QPointer<AppSettings> self(this);
        m_forgetRunner(modelDir, [self](const QString& msg) {
            if (self) emit self->usageForgotten(msg);
        });
        return;
    }
    // Without the app's storage thread (tests): a thread of its own with its own connection (a
    // Storage is used only by the thread that opened it).
    const QString db = effectiveUsageDatabase();
    if (m_forgetThread.joinable()) m_forgetThread.join(); // the previous one is done or nearly
    QPointer<AppSettings> self(this);
    m_forgetThread = std::thread([self, db, modelDir] {
        const QString msg = forgetUsageOn(db, modelDir);
        QMetaObject::invokeMethod(
            QCoreApplication::instance(),
            [self, msg] {
                if (self) emit self->usageForgotten(msg);
            },
            Qt::QueuedConnection);
    });
}

QString AppSettings::forgetUsageOn(const QString& databasePath, const QString& modelDir) {
    if (databasePath.isEmpty())
        return tr("No usage database location: set one in Settings (HOME is not set).");
    if (!QFileInfo::exists(databasePath))
        return tr("Nothing to forget: no usage has been learned yet (%1 does not exist).")
            .arg(databasePath);
    auto db = storage::Storage::open(databasePath.toStdString());
    if (!db.isOk())
        return tr("Could not open the usage database: %1")
            .arg(QString::fromStdString(db.status().message()));
    return forgetUsageIn(*db.value(), modelDir);
}

QString AppSettings::forgetUsageIn(storage::Storage& storage, const QString& modelDir) {
    storage::Storage* db = &storage;
    auto identity = storage::modelIdentity(modelDir.toStdString(), db);
    if (!identity.isOk())
        return tr("Could not identify the model: %1")
            .arg(QString::fromStdString(identity.status().message()));
    auto id = db->findModel(identity.value());
    if (!id.isOk())
        return tr("Usage database: %1").arg(QString::fromStdString(id.status().message()));
    if (!id.value())
        return tr("Nothing to forget: no usage was learned for %1.").arg(QDir(modelDir).dirName());
    auto n = db->resetUsage(*id.value());
    if (!n.isOk())
        return tr("Usage database: %1").arg(QString::fromStdString(n.status().message()));
    return tr("Forgot the learned usage of %1 (%2 records deleted).")
        .arg(QDir(modelDir).dirName())
        .arg(n.value());
}

// ---- model folders ----
QString AppSettings::startupModelDir(QString* notice) const {
    const QString failed = value(keyFailed(), QString()).toString();
    if (!failed.isEmpty() && notice)
        *notice = tr("The model folder opened last time, %1, could not be loaded: opened the "
                     "default model instead. Choose another one in Models (Ctrl+O).")
                      .arg(QDir::toNativeSeparators(failed));
    QString gone;
    const QString dir =
        chooseModelDir({}, value(keyLastDir(), QString()).toString(), m_defaultModelDir, &gone);
    if (!gone.isEmpty() && notice) *notice = gone;
    return dir;
}

void AppSettings::modelChosen(const QString& dir) {
    m_pendingChoice = QDir::cleanPath(localPath(dir));
}

void AppSettings::modelLoadEnded(const QString& dir, bool ok) {
    const QString clean = QDir::cleanPath(dir);
    QSettings s = open();
    s.remove(keyFailed()); // said once, at the start after the failure
    if (ok) {
        if (clean != m_defaultModelDir) {
            QStringList recent = s.value(keyRecent()).toStringList();
            recent.removeAll(clean);
            recent.prepend(clean);
            while (recent.size() > kMaxRecent)
                recent.removeLast();
            s.setValue(keyRecent(), recent);
        }
        if (clean == m_pendingChoice) s.setValue(keyLastDir(), clean);
    } else if (s.value(keyLastDir()).toString() == clean) {
        // Not reopened at the next start (it would fail again): the default opens, with a notice.
        s.remove(keyLastDir());
        s.setValue(keyFailed(), clean);
    }
    if (clean == m_pendingChoice) m_pendingChoice.clear();
    s.sync();
    setReloadNeeded(false);
    emit modelsChanged();
}

void AppSettings::forgetModel(const QString& dir) {
    const QString clean = QDir::cleanPath(localPath(dir));
    QSettings s = open();
    QStringList recent = s.value(keyRecent()).toStringList();
    recent.removeAll(clean);
    s.setValue(keyRecent(), recent);
    if (s.value(keyLastDir()).toString() == clean) s.remove(keyLastDir());
    emit modelsChanged();
}

QVariantList AppSettings::models() const {
    QVariantList rows;
    if (!m_defaultModelDir.isEmpty()) rows << modelRow(m_defaultModelDir, true);
    for (const QString& d : value(keyRecent(), QStringList()).toStringList())
        if (QDir::cleanPath(d) != m_defaultModelDir) rows << modelRow(d, false);
    return rows;
}

bool AppSettings::isModelFolder(const QString& dir) const {
    return QFileInfo(QDir(localPath(dir)).filePath(QStringLiteral("config.json"))).isFile();
}

QString AppSettings::homeFolder() const {
    return QDir::homePath();
}

QString AppSettings::localPath(const QVariant& urlOrPath) const {
    const QUrl url = urlOrPath.toUrl();
    if (url.isLocalFile()) return url.toLocalFile();
    return urlOrPath.toString();
}

GenerateParams mergedParams(const AppOptions& opt, const AppSettings& settings) {
    GenerateParams p = opt.params;
    if (!opt.maxTokensGiven) p.maxNewTokens = settings.maxNewTokens();
    return p;
}

SamplingOverrides mergedSampling(const AppOptions& opt, const AppSettings& settings) {
    // The command line's values win; its seed (or none) always.
    SamplingOverrides s = overlaySampling(settings.samplingOverrides(), opt.sampling);
    s.seed = opt.sampling.seed;
    return s;
}

} // namespace coli::app
