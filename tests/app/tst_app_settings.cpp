// AppSettings (QSettings under a temporary XDG_CONFIG_HOME): values persist across instances and
// are clamped, the theme follows the choice or the system (portal value, palette), the recent
// models list and the start folder, a folder that failed is not reopened at the next start,
// settings merged with the command line, and "forget learned usage" on a database of its own.
#include "app_options.h"
#include "app_settings.h"
#include "system_theme.h"

#include "storage/database.h"
#include "storage/model_identity.h"

#include <QCoreApplication>
#include <QDir>
#include <QLocale>
#include <QPalette>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

using namespace coli;
using namespace coli::app;

namespace {
const QString kModel = QStringLiteral(COLI_FIXTURE_DIR "/qwen3moe");

void clearSettings() {
    QSettings s(QStringLiteral("Colibri"), QStringLiteral("Colibri Desktop"));
    s.clear();
}
} // namespace

class TstAppSettings : public QObject {
    Q_OBJECT
private slots:
    void init() { clearSettings(); }
    void valuesPersistAndAreClamped();
    void themeChoiceAndSystemScheme();
    void portalValues();
    void reloadNeededForThreadsAndDirectIo();
    void olderDirectIoSwitchReadsAsDirect();
    void gpuDevicePersistsAndReachesTheLoad();
    void vramBudgetPersistsExactlyAndReachesTheLoad();
    void recentModelsAndStartFolder();
    void failedFolderIsNotReopened();
    void commandLineWinsOverSettings();
    void forgetUsageDeletesHeatAndPins();
};

// The GPU setting: "none" by default, any device text kept as given (trimmed), a reload needed,
// and the load options carry it (ExpertTierOptions::gpu).
void TstAppSettings::gpuDevicePersistsAndReachesTheLoad() {
    {
        AppSettings a(QStringLiteral("/default"));
        QCOMPARE(a.gpuDevice(), QStringLiteral("none"));
        QCOMPARE(a.loadSettings(1).gpu, std::string("none"));
        QSignalSpy changed(&a, &AppSettings::gpuDeviceChanged);
        a.setGpuDevice(QStringLiteral("  "));   // nothing: ignored
        a.setGpuDevice(QStringLiteral("none")); // unchanged: no signal
        QCOMPARE(changed.count(), 0);
        a.setGpuDevice(QStringLiteral(" llvmpipe "));
        QCOMPARE(changed.count(), 1);
        QVERIFY(a.reloadNeeded());
        // The list is what Vulkan answers here: devices with names, or a reason.
        for (const QVariant& d : a.gpuDevices())
            QVERIFY(!d.toMap().value("name").toString().isEmpty());
        QVERIFY(!a.gpuDevices().isEmpty() || !a.gpuDevicesProblem().isEmpty());
    }
    AppSettings b(QStringLiteral("/default"));
    QCOMPARE(b.gpuDevice(), QStringLiteral("llvmpipe"));
    QCOMPARE(b.loadSettings(1).gpu, std::string("llvmpipe"));
    b.setGpuDevice(QStringLiteral("auto"));
    QCOMPARE(AppSettings(QStringLiteral("/default")).loadSettings(1).gpu, std::string("auto"));
    b.setGpuDevice(QStringLiteral("none"));
}

// The VRAM budget (QSettings engine/vramBudgetMiB): 0 (the engine's default) at first, fractions
// of a MiB kept exactly (a budget of whole experts, as the engine reports it, comes back to the
// byte), clamped at 0, not a number ignored, no reload needed (it applies at once), and the load
// options carry it in bytes.
void TstAppSettings::vramBudgetPersistsExactlyAndReachesTheLoad() {
    const double elevenExperts = 11 * 62208 / 1048576.0; // 0.652587890625 MiB
    {
        AppSettings a(QStringLiteral("/default"));
        QCOMPARE(a.vramBudgetMiB(), 0.0);
        QCOMPARE(a.loadSettings(1).vramBudgetBytes, uint64_t(0));
        QSignalSpy changed(&a, &AppSettings::vramBudgetChanged);
        a.setVramBudgetMiB(-3); // clamped to 0: unchanged
        a.setVramBudgetMiB(qQNaN());
        QCOMPARE(changed.count(), 0);
        a.setVramBudgetMiB(elevenExperts);
        QCOMPARE(changed.count(), 1);
        QVERIFY(!a.reloadNeeded());
    }
    AppSettings b(QStringLiteral("/default"));
    QCOMPARE(b.vramBudgetMiB(), elevenExperts);
    QCOMPARE(b.loadSettings(1).vramBudgetBytes, uint64_t(11 * 62208));
    b.setVramBudgetMiB(0);
    QCOMPARE(AppSettings(QStringLiteral("/default")).loadSettings(1).vramBudgetBytes, uint64_t(0));
}

void TstAppSettings::valuesPersistAndAreClamped() {
    {
        AppSettings a(QStringLiteral("/default"));
        QCOMPARE(a.threads(), 0);
        QCOMPARE(a.ramBudgetMiB(), 0);
        QVERIFY(a.prefetch());
        QCOMPARE(a.readMode(), QStringLiteral("auto"));
        QVERIFY(!a.customSampling());
        QCOMPARE(a.maxNewTokens(), 512);
        a.setThreads(3);
        a.setRamBudgetMiB(768);
        a.setReadMode(QStringLiteral("buffered"));
        a.setReadMode(QStringLiteral("sometimes")); // not a mode: ignored
        a.setPrefetch(false);
        a.setCustomSampling(true);
        a.setTemperature(0.3);
        a.setTopK(7);
        a.setTopP(2.0); // clamped to 1
        a.setMinP(0.1);
        a.setRepeatPenalty(1.1);
        a.setMaxNewTokens(64);
        a.setUsageDatabase(QStringLiteral("/tmp/x/usage.db"));
        a.setTheme(QStringLiteral("dark"));
    }
    AppSettings b(QStringLiteral("/default"));
    QCOMPARE(b.threads(), 3);
    QCOMPARE(b.ramBudgetMiB(), 768);
    QCOMPARE(b.readMode(), QStringLiteral("buffered"));
    QVERIFY(!b.prefetch());
    QCOMPARE(b.topP(), 1.0);
    QCOMPARE(b.theme(), QStringLiteral("dark"));
    QCOMPARE(b.usageDatabase(), QStringLiteral("/tmp/x/usage.db"));
    QCOMPARE(b.effectiveUsageDatabase(), QStringLiteral("/tmp/x/usage.db"));
    const SamplingOverrides s = b.samplingOverrides();
    QCOMPARE(*s.temperature, 0.3f);
    QCOMPARE(*s.topK, 7);
    QCOMPARE(*s.minP, 0.1f);
    QCOMPARE(*s.repeatPenalty, 1.1f);
    const LoadSettings l = b.loadSettings(5);
    QCOMPARE(l.threads, 3);
    QCOMPARE(l.ramBudgetBytes, uint64_t(768) << 20);
    QVERIFY(l.readMode == coli::aio::DirectIo::Off);
    b.setReadMode(QStringLiteral("direct"));
    QVERIFY(b.loadSettings(5).readMode == coli::aio::DirectIo::On);
    b.setReadMode(QStringLiteral("auto"));
    QVERIFY(b.loadSettings(5).readMode == coli::aio::DirectIo::Auto);
    QVERIFY(!l.prefetch);
    b.setThreads(0);
    QCOMPARE(b.loadSettings(5).threads, 5); // automatic: the caller's default
    b.setCustomSampling(false);
    QVERIFY(!b.samplingOverrides().temperature); // the model's defaults
}

void TstAppSettings::themeChoiceAndSystemScheme() {
    AppSettings a(QString{});
    QCOMPARE(a.theme(), QStringLiteral("system"));
    QSignalSpy changed(&a, &AppSettings::themeChanged);
    a.setTheme(QStringLiteral("dark"));
    QVERIFY(a.dark());
    a.setTheme(QStringLiteral("light"));
    QVERIFY(!a.dark());
    QCOMPARE(changed.count(), 2);
    a.setTheme(QStringLiteral("bogus")); // stored but read back as "system"
    QCOMPARE(a.theme(), QStringLiteral("system"));
    // No session bus here (or no portal): the palette decides.
    QCOMPARE(a.systemThemeSource(), QStringLiteral("palette"));
}

void TstAppSettings::portalValues() {
    QCOMPARE(darkFromPortalValue(1), std::optional<bool>(true));
    QCOMPARE(darkFromPortalValue(2), std::optional<bool>(false));
    QCOMPARE(darkFromPortalValue(0), std::optional<bool>()); // no preference: the palette
    QCOMPARE(darkFromPortalValue(7), std::optional<bool>());
    QPalette dark, light;
    dark.setColor(QPalette::Window, QColor("#202124"));
    light.setColor(QPalette::Window, QColor("#efefef"));
    QVERIFY(paletteIsDark(dark));
    QVERIFY(!paletteIsDark(light));
}

void TstAppSettings::reloadNeededForThreadsAndDirectIo() {
    AppSettings a(QString{});
    QVERIFY(!a.reloadNeeded());
    a.setRamBudgetMiB(512); // applied at the next load or live: no reload asked
    a.setPrefetch(false);
    QVERIFY(!a.reloadNeeded());
    a.setThreads(2);
    QVERIFY(a.reloadNeeded());
    a.modelLoadEnded(QStringLiteral("/m"), true);
    QVERIFY(!a.reloadNeeded());
    a.setReadMode(QStringLiteral("direct"));
    QVERIFY(a.reloadNeeded());
}

void TstAppSettings::olderDirectIoSwitchReadsAsDirect() {
    {
        QSettings s(QStringLiteral("Colibri"), QStringLiteral("Colibri Desktop"));
        s.setValue(QStringLiteral("engine/directIo"), true); // as the switch saved it
    }
    AppSettings a(QString{});
    QCOMPARE(a.readMode(), QStringLiteral("direct"));
    QVERIFY(a.loadSettings(1).readMode == coli::aio::DirectIo::On);
    a.setReadMode(QStringLiteral("buffered")); // the new key wins from now on
    QCOMPARE(AppSettings(QString{}).readMode(), QStringLiteral("buffered"));
}

void TstAppSettings::recentModelsAndStartFolder() {
    QTemporaryDir tmp;
    const QString def = tmp.path() + "/default", one = tmp.path() + "/one",
                  two = tmp.path() + "/two";
    for (const QString& d : {def, one, two})
        QVERIFY(QDir().mkpath(d));
    QFile f(one + "/config.json");
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray(1000, 'x'));
    f.close();
    AppSettings a(def);
    QCOMPARE(a.models().size(), 1); // the default alone
    QVERIFY(a.models().first().toMap().value("isDefault").toBool());
    a.modelLoadEnded(one, true); // from the command line: listed, not the start folder
    QString notice;
    QCOMPARE(a.startupModelDir(&notice), def);
    a.modelChosen(two);
    a.modelLoadEnded(two, true); // chosen in the window: the start folder
    QCOMPARE(a.startupModelDir(&notice), two);
    QVERIFY(notice.isEmpty());
    const QVariantList rows = a.models();
    QCOMPARE(rows.size(), 3);
    QCOMPARE(rows[1].toMap().value("path").toString(), two); // most recent first
    QCOMPARE(rows[2].toMap().value("name").toString(), QStringLiteral("one"));
    QVERIFY2(rows[2].toMap().value("sizeText").toString() ==
                 QLocale::system().formattedDataSize(1000, 1, QLocale::DataSizeIecFormat),
             qPrintable(rows[2].toMap().value("sizeText").toString()));
    QVERIFY(a.isModelFolder(one));
    QVERIFY(!a.isModelFolder(two));
    a.forgetModel(two);
    QCOMPARE(a.models().size(), 2);
    QCOMPARE(a.startupModelDir(&notice), def);
}

void TstAppSettings::failedFolderIsNotReopened() {
    QTemporaryDir tmp;
    const QString def = tmp.path() + "/default", m = tmp.path() + "/m";
    QVERIFY(QDir().mkpath(m));
    {
        AppSettings a(def);
        a.modelChosen(m);
        a.modelLoadEnded(m, true);
        QString notice;
        QCOMPARE(a.startupModelDir(&notice), m);
        // Next start: the remembered folder is loaded and fails.
        a.modelLoadEnded(m, false);
    }
    AppSettings b(def);
    QString notice;
    QCOMPARE(b.startupModelDir(&notice), def); // the default, not the failing folder again
    QVERIFY2(notice.contains(m) && notice.contains("could not be loaded"), qPrintable(notice));
    b.modelLoadEnded(def, true); // said once
    notice.clear();
    QCOMPARE(b.startupModelDir(&notice), def);
    QVERIFY(notice.isEmpty());
    // A remembered folder that is gone: the default, with its own notice.
    b.modelChosen(m);
    b.modelLoadEnded(m, true);
    QVERIFY(QDir(m).removeRecursively());
    QCOMPARE(b.startupModelDir(&notice), def);
    QVERIFY2(notice.contains("no longer exists"), qPrintable(notice));
}

void TstAppSettings::commandLineWinsOverSettings() {
    AppSettings a(QString{});
    a.setCustomSampling(true);
    a.setTemperature(0.5);
    a.setTopK(11);
    a.setMaxNewTokens(99);
    AppOptions opt = parseAppOptions({"colibri", "--temp", "0", "--seed", "7"});
    QVERIFY(opt.error.isEmpty());
    SamplingOverrides s = mergedSampling(opt, a);
    QCOMPARE(*s.temperature, 0.0f); // the flag
    QCOMPARE(*s.topK, 11);          // the setting
    QCOMPARE(*s.seed, uint64_t(7));
    QCOMPARE(mergedParams(opt, a).maxNewTokens, 99);
    opt = parseAppOptions({"colibri", "-n", "5"});
    QCOMPARE(mergedParams(opt, a).maxNewTokens, 5);
}

void TstAppSettings::forgetUsageDeletesHeatAndPins() {
    QTemporaryDir tmp;
    const QString db = tmp.path() + "/usage.db";
    QVERIFY(AppSettings::forgetUsageOn(db, kModel).contains("Nothing to forget"));
    {
        auto s = storage::Storage::open(db.toStdString());
        QVERIFY(s.isOk());
        auto identity = storage::modelIdentity(kModel.toStdString(), s.value().get());
        QVERIFY2(identity.isOk(), identity.status().message().c_str());
        auto id = s.value()->modelId(identity.value(), kModel.toStdString());
        QVERIFY(id.isOk());
        QVERIFY(s.value()->saveHeat(id.value(), {{0, 1, 2.5}, {1, 3, 1.0}}, 10).isOk());
        QVERIFY(s.value()->setPins(id.value(), {{0, 1, storage::PinTier::Ram}}).isOk());
    }
    // Through the real path: a thread of its own, the answer back on this thread.
    AppSettings a(QString{});
    a.setUsageDatabase(db);
    QSignalSpy done(&a, &AppSettings::usageForgotten);
    a.forgetUsage(kModel);
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 20000);
    const QString msg = done.first().first().toString();
    QVERIFY2(msg.contains("Forgot the learned usage of qwen3moe (3 records deleted)"),
             qPrintable(msg));
    auto s = storage::Storage::open(db.toStdString());
    QVERIFY(s.isOk());
    auto identity = storage::modelIdentity(kModel.toStdString(), s.value().get());
    auto id = s.value()->findModel(identity.value());
    QVERIFY(id.isOk() && id.value());
    QVERIFY(s.value()->loadHeat(*id.value()).value().empty());
    QVERIFY(s.value()->getPins(*id.value()).value().empty());
}

int main(int argc, char** argv) {
    QTemporaryDir home; // keep the user's settings out of it
    qputenv("XDG_CONFIG_HOME", home.path().toLocal8Bit());
    QCoreApplication app(argc, argv);
    TstAppSettings t;
    return QTest::qExec(&t, argc, argv);
}
#include "tst_app_settings.moc"
