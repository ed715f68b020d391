#include "app_options.h"

#include "user_messages.h"

#include "core/number_text.h"

#include <QDir>
#include <QFileInfo>

#include <QCommandLineParser>
#include <QRegularExpression>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <thread>

namespace coli::app {

namespace {
bool envSet(const char* name) {
    const char* v = std::getenv(name);
    return v && *v;
}
} // namespace

AppOptions parseAppOptions(const QStringList& args) {
    AppOptions o;
    o.params.maxNewTokens = 512;
    QCommandLineParser p;
    p.setApplicationDescription(
        QStringLiteral("Colibri Desktop: chat with a Mixture-of-Experts model."));
    // The same name in "Arguments:" as in the usage line.
    p.addPositionalArgument(QStringLiteral("MODEL_DIR"),
                            QStringLiteral("Model folder (same as --model)."),
                            QStringLiteral("[MODEL_DIR]"));
    const QCommandLineOption help({QStringLiteral("h"), QStringLiteral("help")},
                                  QStringLiteral("Show this help."));
    const QCommandLineOption version(QStringLiteral("version"),
                                     QStringLiteral("Show the version."));
    const QCommandLineOption model({QStringLiteral("m"), QStringLiteral("model")},
                                   QStringLiteral("Hugging Face model folder to open."),
                                   QStringLiteral("DIR"));
    const QCommandLineOption threads(
        QStringLiteral("threads"),
        QStringLiteral("Threads for the forward pass (0 = all cores but one)."),
        QStringLiteral("N"), QStringLiteral("0"));
    const QCommandLineOption maxTokens({QStringLiteral("n"), QStringLiteral("max-tokens")},
                                       QStringLiteral("Most new tokens per answer."),
                                       QStringLiteral("N"), QStringLiteral("512"));
    const QCommandLineOption temp(QStringLiteral("temp"),
                                  QStringLiteral("Temperature (0 = greedy)."), QStringLiteral("T"));
    const QCommandLineOption topK(QStringLiteral("top-k"), QStringLiteral("Top-k (0 = off)."),
                                  QStringLiteral("K"));
    const QCommandLineOption topP(QStringLiteral("top-p"), QStringLiteral("Top-p (1 = off)."),
                                  QStringLiteral("P"));
    const QCommandLineOption minP(QStringLiteral("min-p"), QStringLiteral("Min-p (0 = off)."),
                                  QStringLiteral("P"));
    const QCommandLineOption repeat(QStringLiteral("repeat-penalty"),
                                    QStringLiteral("Repetition penalty (1 = off)."),
                                    QStringLiteral("R"));
    const QCommandLineOption seed(QStringLiteral("seed"), QStringLiteral("Sampling seed."),
                                  QStringLiteral("S"), QStringLiteral("0"));
    const QCommandLineOption synthetic(
        QStringLiteral("synthetic-telemetry"),
        QStringLiteral(
            "Feed the Brain view from a synthetic model of LAYERSxEXPERTS routed experts "
            "(e.g. 75x256) at 10 tokens/s instead of the engine."),
        QStringLiteral("LxE"));
    for (const auto& opt : {help, version, model, threads, maxTokens, temp, topK, topP, minP,
                            repeat, seed, synthetic})
        p.addOption(opt);
    // Qt names the program after the QCoreApplication, which does not exist yet: name it here.
    o.helpText = p.helpText().replace(QRegularExpression(QStringLiteral("^Usage: \\S+")),
                                      QStringLiteral("Usage: colibri"));
    if (!p.parse(args)) {
        o.error = p.errorText();
        return o;
    }
    o.showHelp = p.isSet(help);
    o.showVersion = p.isSet(version);
    const QStringList pos = p.positionalArguments();
    if (p.isSet(model))
        o.modelArg = p.value(model);
    else if (!pos.isEmpty())
        o.modelArg = pos.first();
    if (pos.size() > (p.isSet(model) ? 0 : 1)) {
        o.error = QStringLiteral("unexpected argument: %1").arg(pos.last());
        return o;
    }

    // The same parsers and messages as coli's flags (core/number_text.h): a value out of range is
    // refused by name, never wrapped ("--seed: 18446744073709551616 is out of range (0 to ...)").
    // The first problem wins.
    auto fail = [&](const QCommandLineOption& opt, const std::string& why) {
        if (o.error.isEmpty())
            o.error =
                QStringLiteral("--%1: %2").arg(opt.names().last(), QString::fromStdString(why));
    };
    auto toInt = [&](const QCommandLineOption& opt, int lo, int hi, int* out) {
        int64_t v = 0;
        const std::string why = parseInteger(p.value(opt).toStdString(), lo, hi, &v);
        if (why.empty())
            *out = int(v);
        else
            fail(opt, why);
    };
    auto optFloat = [&](const QCommandLineOption& opt, std::optional<float>* out) {
        if (!p.isSet(opt)) return;
        double v = 0;
        const std::string why =
            parseDecimal(p.value(opt).toStdString(), -std::numeric_limits<double>::infinity(),
                         std::numeric_limits<double>::infinity(), &v);
        if (why.empty())
            *out = float(v); // beyond float's range: inf, refused by validate() below
        else
            fail(opt, why);
    };
    if (p.isSet(synthetic)) {
        std::string why;
        o.synthetic = parseSyntheticShape(p.value(synthetic).toStdString(), &why);
        if (!o.synthetic) fail(synthetic, why);
    }
    toInt(threads, 0, 4096, &o.threads);
    toInt(maxTokens, 1, 100000000, &o.params.maxNewTokens);
    o.maxTokensGiven = p.isSet(maxTokens);
    optFloat(temp, &o.sampling.temperature);
    if (p.isSet(topK)) {
        int k = 0;
        toInt(topK, 0, std::numeric_limits<int>::max(), &k);
        o.sampling.topK = k;
    }
    optFloat(topP, &o.sampling.topP);
    optFloat(minP, &o.sampling.minP);
    optFloat(repeat, &o.sampling.repeatPenalty);
    uint64_t s = 0;
    if (const std::string why =
            parseUnsigned(p.value(seed).toStdString(), 0, std::numeric_limits<uint64_t>::max(), &s);
        !why.empty())
        fail(seed, why);
    o.sampling.seed = s;
    if (o.error.isEmpty()) {
        // Range checks now (the model's defaults are merged in when a model is loaded).
        const Status st = validate(resolveSampling(o.sampling, GenerationConfig{}));
        if (!st.isOk()) o.error = QString::fromStdString(samplingErrorForUser(st.message()));
    }
    return o;
}

int defaultEngineThreads() {
    const int cores = int(std::thread::hardware_concurrency());
    return std::max(1, cores - 1);
}

QString chooseModelDir(const QString& commandLine, const QString& remembered,
                       const QString& compiledDefault, QString* notice) {
    if (!commandLine.isEmpty()) return commandLine;
    if (!remembered.isEmpty()) {
        if (QFileInfo(remembered).isDir()) return remembered;
        // Moved or deleted since it was chosen: opening it would only show an error.
        if (notice)
            *notice = QStringLiteral("The model folder used last time, %1, no longer exists: "
                                     "opened the default model instead.")
                          .arg(QDir::toNativeSeparators(remembered));
    }
    return compiledDefault;
}

QString defaultModelDir(const QString& appDir, const QString& shippedName,
                        const QString& compiledDefault) {
    if (!shippedName.isEmpty()) {
        const QString installed =
            QDir(appDir).filePath(QStringLiteral("../share/colibri/models/") + shippedName);
        if (QFileInfo::exists(installed + QStringLiteral("/config.json")))
            return QDir::cleanPath(installed);
    }
    return compiledDefault;
}

bool displayAvailable() {
    return envSet("DISPLAY") || envSet("WAYLAND_DISPLAY") || envSet("QT_QPA_PLATFORM");
}

const char* noDisplayMessage() {
    return "colibri: no display found: run under a desktop session or `xvfb-run -a colibri`\n"
           "(set DISPLAY or WAYLAND_DISPLAY, or choose a Qt platform with QT_QPA_PLATFORM)\n";
}

} // namespace coli::app
