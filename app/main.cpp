// colibri: the desktop chat window. See docs/app.md.
#include "app_options.h"
#include "app_settings.h"
#include "app_window.h"
#include "atlas_probe_glue.h"
#include "engine_controller.h"
#include "session_manager.h"
#include "startup/omp_defaults.h"
#include "synthetic_driver.h"
#include "turn_stats_model.h"

#include <QApplication>
#include <QQmlApplicationEngine>
#include <QQuickWindow>

#include <QTimer>

#include <csignal>
#include <cstdio>
#include <memory>

#ifndef COLI_DEFAULT_MODEL_DIR
#define COLI_DEFAULT_MODEL_DIR ""
#endif
#ifndef COLI_SHIPPED_MODEL_NAME
#define COLI_SHIPPED_MODEL_NAME ""
#endif
#ifndef COLI_VERSION
#define COLI_VERSION "0"
#endif

using namespace coli::app;

namespace {
// Ctrl+C / SIGTERM from a terminal quit through the normal path (cancel the answer, join the
// engine thread). The handler only sets a flag (async-signal-safe); a timer polls it.
volatile std::sig_atomic_t g_quitSignal = 0;
extern "C" void onQuitSignal(int) {
    g_quitSignal = 1;
}
} // namespace

int main(int argc, char* argv[]) {
    coli::startup::applyOmpDefaults(argv,
                                    coli::startup::OmpWaitMode::Passive); // before OpenMP starts
    QStringList args;
    for (int i = 0; i < argc; ++i)
        args << QString::fromLocal8Bit(argv[i]);
    const AppOptions opt = parseAppOptions(args);
    if (!opt.error.isEmpty()) {
        std::fprintf(stderr, "colibri: %s\n\n%s", qPrintable(opt.error), qPrintable(opt.helpText));
        return kExitUsage;
    }
    if (opt.showHelp) {
        std::fputs(qPrintable(opt.helpText), stdout);
        return 0;
    }
    if (opt.showVersion) {
        std::printf("colibri %s\n", COLI_VERSION);
        return 0;
    }
    // QApplication aborts with an obscure message when no platform plugin can connect: say what
    // to do instead, before constructing it.
    if (!displayAvailable()) {
        std::fputs(noDisplayMessage(), stderr);
        return kExitNoDisplay;
    }

    QApplication app(argc, argv); // QApplication, not QGuiApplication: Qt Charts views need Widgets
    QApplication::setOrganizationName(QStringLiteral("Colibri"));
    QApplication::setApplicationName(QStringLiteral("Colibri Desktop"));
    QApplication::setApplicationVersion(QStringLiteral(COLI_VERSION));

    // Settings (QSettings) give the defaults; the command line wins over them for this run.
    AppSettings settings(defaultModelDir(QCoreApplication::applicationDirPath(),
                                         QStringLiteral(COLI_SHIPPED_MODEL_NAME),
                                         QStringLiteral(COLI_DEFAULT_MODEL_DIR)));
    QString notice;
    const QString modelDir =
        opt.modelArg.isEmpty() ? settings.startupModelDir(&notice) : opt.modelArg;

    WorkerOptions wo;
    wo.threads = defaultEngineThreads();
    EngineController controller(wo);
    connectSettings(&settings, &controller, 0);
    if (opt.threads > 0) {
        LoadSettings l = controller.loadSettings();
        l.threads = opt.threads;
        controller.setLoadSettings(l);
    }
    controller.setGenerateParams(mergedParams(opt, settings), mergedSampling(opt, settings));
    // Saved chats and learned usage: the storage thread opens the usage database.
    StorageWorkerOptions so;
    so.path = settings.effectiveUsageDatabase().toStdString();
    SessionManager sessions(&controller, so);
    TurnStatsModel turnStats(&sessions, &controller);
    // The topic probe's default set and newest stored run per model, and saving new runs.
    AtlasProbeGlue atlasProbes(&controller, sessions.worker(),
                               QCoreApplication::applicationDirPath());
    settings.setForgetRunner(
        [&sessions](const QString& dir, auto done) { sessions.forgetUsage(dir, std::move(done)); });
    // Quit mid-answer: cancel and join the engine thread, then save what the answer had and
    // let the storage thread finish its writes, before the QML engine and the window go away.
    QObject::connect(&app, &QCoreApplication::aboutToQuit, &controller, [&] {
        controller.shutdown();
        sessions.shutdown();
    });

    QQmlApplicationEngine engine;
    QString error;
    QQuickWindow* window =
        createMainWindow(engine, &controller, {}, &error, &settings, &sessions, &turnStats);
    if (!window) {
        std::fprintf(stderr, "colibri: %s\n", qPrintable(error));
        return kExitQml;
    }
    // --synthetic-telemetry: the Brain shows a synthetic model at 10 tokens/s (the chat still
    // uses the real model).
    std::unique_ptr<SyntheticDriver> synthetic;
    if (opt.synthetic) {
        synthetic = std::make_unique<SyntheticDriver>(controller.brain(), *opt.synthetic);
        synthetic->start();
        QMetaObject::invokeMethod(window, "showView", Q_ARG(QVariant, QStringLiteral("brain")));
    }
    if (!modelDir.isEmpty()) controller.loadModel(modelDir);
    if (!notice.isEmpty()) controller.showNotice(notice); // after loadModel, which clears it

    std::signal(SIGINT, onQuitSignal);
    std::signal(SIGTERM, onQuitSignal);
    QTimer signalPoll;
    QObject::connect(&signalPoll, &QTimer::timeout, &app, [] {
        if (g_quitSignal) QCoreApplication::quit();
    });
    signalPoll.start(100);
    return app.exec();
}
