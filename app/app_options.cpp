#include "app_options.h"

#include "user_messages.h"

#include <QDir>
#include <QFileInfo>

#include <QCommandLineParser>
#include <QRegularExpression>

#include <algorithm>
#include <cstdlib>
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
    p.addPositionalArgument(QStringLiteral("model"),
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
    for (const auto& opt :
         {help, version, model, threads, maxTokens, temp, topK, topP, minP, repeat, seed})
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

    auto toInt = [&](const QCommandLineOption& opt, int* out) {
        bool ok = false;
        const int v = p.value(opt).toInt(&ok);
        if (!ok)
            o.error =
                QStringLiteral("--%1: not an integer: %2").arg(opt.names().last(), p.value(opt));
        else
            *out = v;
    };
    auto toFloat = [&](const QCommandLineOption& opt, float* out) {
        bool ok = false;
        const float v = p.value(opt).toFloat(&ok);
        if (!ok)
            o.error =
                QStringLiteral("--%1: not a number: %2").arg(opt.names().last(), p.value(opt));
        else
            *out = v;
    };
    toInt(threads, &o.threads);
    toInt(maxTokens, &o.params.maxNewTokens);
    auto optFloat = [&](const QCommandLineOption& opt, std::optional<float>* out) {
        if (!p.isSet(opt)) return;
        float v = 0;
        toFloat(opt, &v);
        *out = v;
    };
    optFloat(temp, &o.sampling.temperature);
    if (p.isSet(topK)) {
        int k = 0;
        toInt(topK, &k);
        o.sampling.topK = k;
    }
    optFloat(topP, &o.sampling.topP);
    optFloat(minP, &o.sampling.minP);
    optFloat(repeat, &o.sampling.repeatPenalty);
    bool ok = false;
    const qulonglong s = p.value(seed).toULongLong(&ok);
    if (!ok) o.error = QStringLiteral("--seed: not a non-negative integer: %1").arg(p.value(seed));
    o.sampling.seed = s;
    if (o.error.isEmpty() && o.params.maxNewTokens < 1)
        o.error = QStringLiteral("--max-tokens: must be >= 1");
    if (o.error.isEmpty() && o.threads < 0) o.error = QStringLiteral("--threads: must be >= 0");
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
