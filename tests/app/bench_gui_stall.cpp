// bench_gui_stall: the GUI thread's longest stall while an answer streams into the real window
// (docs/performance.md, "GUI thread stalls"). Not a test: it prints figures.
//
//   xvfb-run -a -s "-screen 0 1280x800x24" build/release/tests/app/bench_gui_stall [--runs N]
//       [--model DIR] [--replay FILE] [--threads N] [--cases model,replay,burst]
//
// Cases, each run N times (default 5) in a fresh window and chat:
//   model   a 400-token answer of the model (default: the shipped one) to a short prompt, with
//           --ignore-eos semantics (GenerateParams::ignoreEos), the app's default sampling;
//   replay  the recorded 2,000-token Markdown answer with its recorded timing;
//   burst   the same recording with no delays: pieces as fast as the ring takes them.
// Run 1 of the first case is the first answer of the process (QML types and fonts not yet
// loaded), as a user's first answer after starting the app.
// A 1 ms precise QTimer on the GUI thread (tests/app/stall_probe.h) records the gaps between its
// ticks from send() to 300 ms after the end of the answer; the longest gap is the longest stall.
// The longest event deliveries by kind say where it went (QEvent types: 1 Timer, 43 MetaCall, 77
// UpdateRequest, i.e. a frame: polish, then waiting for the render thread to sync).
#include "app_options.h"
#include "app_window.h"
#include "engine_controller.h"
#include "stall_probe.h"
#include "startup/omp_defaults.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QHash>
#include <QQmlApplicationEngine>
#include <QQuickWindow>
#include <QTemporaryDir>
#include <QTimer>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

using namespace coli;
using namespace coli::app;

namespace {

// Where the GUI thread's time goes: the longest delivery of each kind of event (receiver class
// and event type), e.g. the flush timer (QTimer, Timer), the ring's wake-up (MetaCall), a frame
// (the window's UpdateRequest: polish, then blocked while the render thread syncs).
class TimingApp : public QApplication {
public:
    using QApplication::QApplication;
    bool notify(QObject* receiver, QEvent* e) override {
        if (!recording) return QApplication::notify(receiver, e);
        QElapsedTimer t;
        t.start();
        const bool r = QApplication::notify(receiver, e);
        const double ms = double(t.nsecsElapsed()) / 1e6;
        if (ms >= 1.0) {
            const QString key = QString::fromLatin1(receiver->metaObject()->className()) + " " +
                                QString::number(int(e->type()));
            double& worst = longest[key];
            worst = std::max(worst, ms);
        }
        return r;
    }
    bool recording = false;
    QHash<QString, double> longest; // key -> longest delivery in ms (>= 1 ms only)
};

QString topEvents(const QHash<QString, double>& longest, int n) {
    QList<std::pair<double, QString>> v;
    for (auto it = longest.begin(); it != longest.end(); ++it)
        v.append({it.value(), it.key()});
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    QStringList out;
    for (int i = 0; i < std::min(n, int(v.size())); ++i)
        out << QStringLiteral("%1 %2 ms").arg(v[i].second).arg(v[i].first, 0, 'f', 1);
    return out.join(QStringLiteral(", "));
}

QString loadAverage() {
    QFile f(QStringLiteral("/proc/loadavg"));
    if (!f.open(QIODevice::ReadOnly)) return QStringLiteral("?");
    return QString::fromLatin1(f.readAll()).section(' ', 0, 2);
}

bool waitFor(const std::function<bool()>& done, int timeoutMs) {
    QElapsedTimer t;
    t.start();
    while (!done()) {
        if (t.elapsed() > timeoutMs) return false;
        QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
    }
    return true;
}

struct Figures {
    bool ok = false;
    int tokens = 0;
    double seconds = 0, longest = 0, p99 = 0, rate = 0;
    int over16 = 0, over50 = 0, frames = 0, ticks = 0;
    QString events; // the longest event deliveries by kind
};

Figures runOnce(const WorkerOptions& wo, const QString& modelDir, const GenerateParams& params,
                const QString& prompt) {
    Figures f;
    EngineController c(wo);
    c.setGenerateParams(params, {});
    QQmlApplicationEngine engine;
    QString error;
    QQuickWindow* w = createMainWindow(engine, &c, {QStringLiteral(COLI_QML_IMPORT_DIR)}, &error);
    if (!w) {
        std::fprintf(stderr, "bench_gui_stall: %s\n", qPrintable(error));
        return f;
    }
    w->resize(1000, 760);
    w->show();
    c.loadModel(modelDir);
    if (!waitFor([&] { return c.loadState() != "loading"; }, 120000) || c.loadState() != "ready") {
        std::fprintf(stderr, "bench_gui_stall: %s: %s\n", qPrintable(modelDir),
                     qPrintable(c.errorText()));
        return f;
    }
    waitFor([] { return false; }, 300); // let the window settle
    int frames = 0, ticks = 0;
    QObject::connect(w, &QQuickWindow::frameSwapped, w, [&] { ++frames; });
    QObject::connect(&c, &EngineController::piecesFlushed, w, [&] { ++ticks; });
    bool finished = false;
    QObject::connect(&c, &EngineController::answerFinished, w, [&] { finished = true; });
    auto* app = static_cast<TimingApp*>(QCoreApplication::instance());
    app->longest.clear();
    app->recording = true;
    StallProbe probe;
    probe.start();
    if (!c.send(prompt)) return f;
    waitFor([&] { return finished; }, 600000);
    waitFor([] { return false; }, 300); // the last flush's layout and frames belong to the answer
    probe.stop();
    app->recording = false;
    f.events = topEvents(app->longest, 4);
    const ChatModel::Message a = c.chatModel()->at(1);
    f.ok = finished && a.error.isEmpty();
    f.tokens = a.tokens;
    f.rate = a.tokensPerSecond;
    f.seconds = probe.durationSeconds();
    f.longest = probe.longestMs();
    f.p99 = probe.quantileMs(0.99);
    f.over16 = probe.gapsOver(16.7);
    f.over50 = probe.gapsOver(50);
    f.frames = frames;
    f.ticks = ticks;
    c.shutdown();
    return f;
}

} // namespace

int main(int argc, char** argv) {
    // As the app: OpenMP threads wait passively (may re-execute the program once).
    coli::startup::applyOmpDefaults(argv, coli::startup::OmpWaitMode::Passive);
    QTemporaryDir home; // keep the user's settings out of it
    qputenv("XDG_CONFIG_HOME", home.path().toLocal8Bit());
    TimingApp app(argc, argv);
    int runs = 5, threads = 0;
    QStringList only; // --cases model,replay: run only these
    QString model = QStringLiteral(COLI_SHIPPED_MODEL_DIR);
    QString replay = QStringLiteral(COLI_SOURCE_DIR "/tests/app/data/markdown_answer.replay");
    const QStringList args = app.arguments();
    for (int i = 1; i + 1 < args.size(); i += 2) {
        if (args[i] == "--runs")
            runs = args[i + 1].toInt();
        else if (args[i] == "--model")
            model = args[i + 1];
        else if (args[i] == "--replay")
            replay = args[i + 1];
        else if (args[i] == "--threads")
            threads = args[i + 1].toInt();
        else if (args[i] == "--cases")
            only = args[i + 1].split(',');
        else {
            std::fprintf(stderr, "usage: bench_gui_stall [--runs N] [--model DIR] [--replay FILE] "
                                 "[--threads N] [--cases model,replay,burst]\n");
            return 2;
        }
    }
    if (runs < 1) runs = 1;

    std::printf("bench_gui_stall: load average at start %s; %d runs per case\n",
                qPrintable(loadAverage()), runs);
    std::printf("%-7s %4s %7s %7s %8s %8s %8s %6s %6s %7s %6s\n", "case", "run", "tokens", "tok/s",
                "seconds", "longest", "p99", ">16.7", ">50", "frames", "ticks");
    struct Case {
        const char* name;
        WorkerOptions wo;
        GenerateParams params;
    };
    WorkerOptions modelWo;
    modelWo.threads = threads > 0 ? threads : defaultEngineThreads();
    GenerateParams modelParams;
    modelParams.maxNewTokens = 400;
    modelParams.ignoreEos = true;
    WorkerOptions replayWo = modelWo;
    replayWo.replayFile = replay.toStdString();
    WorkerOptions burstWo = replayWo;
    burstWo.replaySpeed = 0;
    GenerateParams replayParams;
    replayParams.maxNewTokens = 100000;
    const Case cases[] = {{"model", modelWo, modelParams},
                          {"replay", replayWo, replayParams},
                          {"burst", burstWo, replayParams}};
    int failures = 0;
    for (const Case& k : cases) {
        if (!only.isEmpty() && !only.contains(QString::fromLatin1(k.name))) continue;
        std::vector<double> longest;
        for (int r = 1; r <= runs; ++r) {
            const Figures f = runOnce(k.wo, model, k.params, QStringLiteral("Tell me a fortune."));
            if (!f.ok) {
                std::printf("%-7s %4d failed\n", k.name, r);
                ++failures;
                continue;
            }
            longest.push_back(f.longest);
            std::printf("%-7s %4d %7d %7.0f %8.2f %8.1f %8.1f %6d %6d %7d %6d\n", k.name, r,
                        f.tokens, f.rate, f.seconds, f.longest, f.p99, f.over16, f.over50, f.frames,
                        f.ticks);
            std::printf("        longest event deliveries (receiver, QEvent type): %s\n",
                        qPrintable(f.events));
            std::fflush(stdout);
        }
        if (!longest.empty()) {
            std::sort(longest.begin(), longest.end());
            std::printf("%-7s longest stall: median %.1f ms, min-max %.1f-%.1f ms (%d runs)\n",
                        k.name, longest[longest.size() / 2], longest.front(), longest.back(),
                        int(longest.size()));
        }
    }
    std::printf("load average at end %s (times in ms; >16.7 and >50: gaps longer than that)\n",
                qPrintable(loadAverage()));
    return failures == 0 ? 0 : 1;
}
