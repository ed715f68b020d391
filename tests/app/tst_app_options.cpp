// colibri's command line, the model-folder choice at start, and the remembered folder.
#include "app_options.h"
#include "app_settings.h"
#include "app_window.h"
#include "engine_controller.h"

#include <QDir>
#include <QFile>
#include <QRegularExpression>
#include <QSettings>
#include <QTemporaryDir>
#include <QTest>

using namespace coli;
using namespace coli::app;

class TstAppOptions : public QObject {
    Q_OBJECT
private slots:
    void defaults();
    void modelAndSampling();
    void usageErrors();
    void syntheticTelemetry();
    void outOfRangeNumbers_data();
    void outOfRangeNumbers();
    void modelDirPrecedence();
    void installedShippedModelIsTheDefault();
    void failedFolderIsNotRemembered();
    void helpNamesTheArgumentAsItsUsageLine();
    void displayDetection();
};

static AppOptions parse(QStringList args) {
    args.prepend(QStringLiteral("colibri"));
    return parseAppOptions(args);
}

void TstAppOptions::defaults() {
    const AppOptions o = parse({});
    QVERIFY2(o.error.isEmpty(), qPrintable(o.error));
    QVERIFY(o.modelArg.isEmpty());
    QCOMPARE(o.threads, 0);
    QCOMPARE(o.params.maxNewTokens, 512);
    QVERIFY(!o.sampling.temperature.has_value()); // the model's defaults apply
    QCOMPARE(o.sampling.seed, uint64_t(0));       // fixed seed: reproducible answers
    QVERIFY(o.helpText.startsWith("Usage: colibri"));
    QVERIFY(defaultEngineThreads() >= 1);
}

void TstAppOptions::modelAndSampling() {
    AppOptions o =
        parse({"--model", "/m", "--temp", "0", "--top-k", "5", "--top-p", "0.5", "--min-p", "0.1",
               "--repeat-penalty", "1.2", "--seed", "99", "-n", "7", "--threads", "3"});
    QVERIFY2(o.error.isEmpty(), qPrintable(o.error));
    QCOMPARE(o.modelArg, QString("/m"));
    QCOMPARE(*o.sampling.temperature, 0.0f);
    QCOMPARE(*o.sampling.topK, 5);
    QCOMPARE(*o.sampling.topP, 0.5f);
    QCOMPARE(*o.sampling.minP, 0.1f);
    QCOMPARE(*o.sampling.repeatPenalty, 1.2f);
    QCOMPARE(o.sampling.seed, uint64_t(99));
    QCOMPARE(o.params.maxNewTokens, 7);
    QCOMPARE(o.threads, 3);
    o = parse({"/positional/dir"});
    QCOMPARE(o.modelArg, QString("/positional/dir"));

    // Resolution as `coli generate`: model defaults first, then what the user gave.
    GenerationConfig gc;
    gc.hasSamplingDefaults = true;
    gc.defaults.temperature = 0.6f;
    gc.defaults.topK = 20;
    SamplingOverrides s;
    s.topK = 3;
    s.seed = 5;
    const SamplerParams p = resolveSampling(s, gc);
    QCOMPARE(p.temperature, 0.6f);
    QCOMPARE(p.topK, 3);
    QCOMPARE(p.seed, uint64_t(5));
    QCOMPARE(resolveSampling({}, GenerationConfig{}).temperature, SamplerParams{}.temperature);
    // Layering: the values set on top win, the others stay; the seed is the caller's.
    SamplingOverrides base, top;
    base.temperature = 0.7f;
    base.topK = 20;
    base.seed = 5;
    top.topK = 3;
    top.repeatLastN = 32;
    top.seed = 9;
    const SamplingOverrides layered = overlaySampling(base, top);
    QCOMPARE(layered.temperature, std::optional<float>(0.7f));
    QCOMPARE(layered.topK, std::optional<int>(3));
    QCOMPARE(layered.repeatLastN, std::optional<int>(32));
    QCOMPARE(layered.seed, std::optional<uint64_t>(5));
}

void TstAppOptions::usageErrors() {
    QVERIFY(parse({"--bogus"}).error.contains("bogus"));
    QVERIFY(parse({"--temp", "abc"}).error.contains("--temp"));
    // The flag the user typed is named, not the engine's field name.
    QVERIFY2(parse({"--temp", "-1"}).error.startsWith("--temp must be in [0, 100]"),
             qPrintable(parse({"--temp", "-1"}).error));
    QVERIFY(!parse({"--temp", "-1"}).error.contains("temperature"));
    QVERIFY(parse({"--top-p", "2"}).error.startsWith("--top-p must be"));
    QVERIFY(parse({"--repeat-penalty", "0"}).error.startsWith("--repeat-penalty must be"));
    QVERIFY(parse({"-n", "0"}).error.contains("--max-tokens"));
    QVERIFY(parse({"--seed", "-3"}).error.contains("--seed"));
    QVERIFY(parse({"a", "b"}).error.contains("unexpected"));
}

// --synthetic-telemetry LxE: the Brain's synthetic model; a bad shape is a usage error naming
// the flag and what is wrong.
void TstAppOptions::syntheticTelemetry() {
    QVERIFY(!parse({}).synthetic);
    const AppOptions o = parse({"--synthetic-telemetry", "75x256"});
    QVERIFY2(o.error.isEmpty(), qPrintable(o.error));
    QVERIFY(o.synthetic);
    QCOMPARE(o.synthetic->nLayers, 75);
    QCOMPARE(o.synthetic->nExperts, 256);
    QCOMPARE(o.synthetic->topK, 8);
    QCOMPARE(o.synthetic->tokensPerSecond, 10.0);
    const QString bad = parse({"--synthetic-telemetry", "75"}).error;
    QVERIFY2(bad.startsWith("--synthetic-telemetry: '75' is not a shape"), qPrintable(bad));
    QVERIFY(parse({"--synthetic-telemetry", "75x4"}).error.contains("experts per layer"));
    QVERIFY(parse({"--synthetic-telemetry", "0x256"}).error.contains("layers must be"));
    QVERIFY(o.helpText.contains("--synthetic-telemetry <LxE>"));
}

// Every numeric flag: a value its type cannot hold, or outside the flag's range, is refused by
// name with the range, as `coli` does (core/number_text.h); nothing wraps or saturates.
void TstAppOptions::outOfRangeNumbers_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("error");
    const QString u64max = QStringLiteral("18446744073709551615");
    QTest::newRow("seed 2^64") << QStringList{"--seed", "18446744073709551616"}
                               << "--seed: 18446744073709551616 is out of range (0 to " + u64max +
                                      ")";
    QTest::newRow("seed huge") << QStringList{"--seed", QString(40, '9')}
                               << "--seed: " + QString(40, '9') + " is out of range (0 to " +
                                      u64max + ")";
    QTest::newRow("seed negative")
        << QStringList{"--seed", "-1"} << "--seed: -1 is out of range (0 to " + u64max + ")";
    QTest::newRow("threads huge") << QStringList{"--threads", "99999999999"}
                                  << QStringLiteral(
                                         "--threads: 99999999999 is out of range (0 to 4096)");
    QTest::newRow("threads negative")
        << QStringList{"--threads", "-1"}
        << QStringLiteral("--threads: -1 is out of range (0 to 4096)");
    QTest::newRow("max-tokens beyond int")
        << QStringList{"-n", "3000000000"}
        << QStringLiteral("--max-tokens: 3000000000 is out of range (1 to 100000000)");
    QTest::newRow("top-k beyond int")
        << QStringList{"--top-k", "99999999999"}
        << QStringLiteral("--top-k: 99999999999 is out of range (0 to 2147483647)");
    QTest::newRow("temp beyond double")
        << QStringList{"--temp", "1e400"} << QStringLiteral("--temp: 1e400 is out of range");
    QTest::newRow("top-p not a number")
        << QStringList{"--top-p", "0.5x"} << QStringLiteral("--top-p: '0.5x' is not a number");
}

void TstAppOptions::outOfRangeNumbers() {
    QFETCH(QStringList, args);
    QFETCH(QString, error);
    const AppOptions o = parse(args);
    QVERIFY2(o.error.startsWith(error), qPrintable(o.error));
}

void TstAppOptions::modelDirPrecedence() {
    QTemporaryDir remembered;
    const QString kept = remembered.path();
    QString notice;
    QCOMPARE(chooseModelDir("/cli", kept, "/default", &notice), QString("/cli"));
    QCOMPARE(chooseModelDir("", kept, "/default", &notice), kept);
    QCOMPARE(chooseModelDir("", "", "/default", &notice), QString("/default"));
    QVERIFY(notice.isEmpty());
    // The remembered folder was moved or deleted: the default opens, with a notice naming it.
    const QString gone = kept + "/deleted-model";
    QCOMPARE(chooseModelDir("", gone, "/default", &notice), QString("/default"));
    QVERIFY2(notice.contains(gone), qPrintable(notice));
    QCOMPARE(chooseModelDir("", gone, "/default"), QString("/default")); // notice optional
    // The command line still wins over a missing remembered folder, silently.
    QString none;
    QCOMPARE(chooseModelDir("/cli", gone, "/default", &none), QString("/cli"));
    QVERIFY(none.isEmpty());
}

void TstAppOptions::installedShippedModelIsTheDefault() {
    QTemporaryDir prefix; // a fake install prefix: bin/ and share/colibri/models/<name>/
    const QString bin = prefix.path() + "/bin";
    QVERIFY(QDir().mkpath(bin));
    // Not installed: the compiled-in folder.
    QCOMPARE(defaultModelDir(bin, "tiny", "/src/resources/models/tiny"),
             QString("/src/resources/models/tiny"));
    const QString installed = prefix.path() + "/share/colibri/models/tiny";
    QVERIFY(QDir().mkpath(installed));
    // A folder without config.json is not a model.
    QCOMPARE(defaultModelDir(bin, "tiny", "/compiled"), QString("/compiled"));
    QFile cfg(installed + "/config.json");
    QVERIFY(cfg.open(QIODevice::WriteOnly));
    cfg.close();
    QCOMPARE(defaultModelDir(bin, "tiny", "/compiled"), installed);
    QCOMPARE(defaultModelDir(bin, "", "/compiled"), QString("/compiled"));
}

// A folder chosen in the window that fails to load is not remembered (it used to be reopened
// with the same error at every start); the error names the folder in plain words.
void TstAppOptions::failedFolderIsNotRemembered() {
    QTemporaryDir dir;
    EngineController c;
    AppSettings settings(QStringLiteral("/default/model"));
    connectSettings(&settings, &c, 0);
    const QString bad = dir.path() + "/model-x";
    QVERIFY(QDir().mkpath(bad));
    settings.modelChosen(bad);
    c.openModelFolder(QUrl::fromLocalFile(bad));
    QCOMPARE(c.modelDir(), bad);
    QCOMPARE(c.loadState(), QString("loading"));
    QTRY_COMPARE(c.loadState(), QString("error"));
    const QSettings s(QStringLiteral("Colibri"), QStringLiteral("Colibri Desktop"));
    QVERIFY(s.value(AppSettings::keyLastDir()).toString().isEmpty());
    QString notice;
    QCOMPARE(settings.startupModelDir(&notice), QStringLiteral("/default/model"));
    // A folder without config.json: said to be no model folder, and what one holds.
    QVERIFY2(c.errorText().contains(bad + " is not a model folder: a model folder holds "
                                          "config.json, *.safetensors and tokenizer.json"),
             qPrintable(c.errorText()));
    // Worded for users: no engine status name ("Not found: ...", "Invalid argument: ...").
    QVERIFY2(!c.errorText().contains(QRegularExpression("(Not found|Invalid argument|Malformed|Io"
                                                        "|Unsupported): ")),
             qPrintable(c.errorText()));
}

void TstAppOptions::helpNamesTheArgumentAsItsUsageLine() {
    const QString help = parse({"--help"}).helpText;
    QVERIFY2(help.contains("[MODEL_DIR]"), qPrintable(help));
    // "Arguments:" lists the positional argument under the same name as the usage line.
    const QRegularExpression arg(QStringLiteral("Arguments:\\s*\\n\\s+MODEL_DIR\\s"));
    QVERIFY2(arg.match(help).hasMatch(), qPrintable(help));
}

void TstAppOptions::displayDetection() {
    const QByteArray d = qgetenv("DISPLAY"), w = qgetenv("WAYLAND_DISPLAY"),
                     q = qgetenv("QT_QPA_PLATFORM");
    qunsetenv("DISPLAY");
    qunsetenv("WAYLAND_DISPLAY");
    qunsetenv("QT_QPA_PLATFORM");
    QVERIFY(!displayAvailable());
    QVERIFY(QByteArray(noDisplayMessage()).contains("xvfb-run -a colibri"));
    qputenv("WAYLAND_DISPLAY", "wayland-0");
    QVERIFY(displayAvailable());
    qunsetenv("WAYLAND_DISPLAY");
    qputenv("DISPLAY", ":5");
    QVERIFY(displayAvailable());
    qunsetenv("DISPLAY");
    qputenv("QT_QPA_PLATFORM", "offscreen");
    QVERIFY(displayAvailable());
    auto restore = [](const char* name, const QByteArray& v) {
        if (v.isNull())
            qunsetenv(name);
        else
            qputenv(name, v);
    };
    restore("DISPLAY", d);
    restore("WAYLAND_DISPLAY", w);
    restore("QT_QPA_PLATFORM", q);
}

int main(int argc, char** argv) {
    QTemporaryDir config; // keep the user's QSettings untouched
    qputenv("XDG_CONFIG_HOME", config.path().toLocal8Bit());
    QCoreApplication app(argc, argv);
    TstAppOptions t;
    return QTest::qExec(&t, argc, argv);
}
#include "tst_app_options.moc"
