// bench_brain: the Brain view's frame time and GUI-thread cost with live updates at 10 tokens/s
// (docs/performance.md, "Brain view"). Not a test: it prints figures.
//
//   xvfb-run -a -s "-screen 0 1280x800x24" build/release/tests/app/bench_brain [--seconds S]
//       [--shapes 75x256,100x400]
//
// For each shape (default 19,200 and 40,000 cells): the real window (1280 x 800) on the Brain
// view, fed by the synthetic generator at 10 tokens/s (SyntheticDriver, live), measured for S
// seconds (default 10) after a 2 s warm-up. Reported:
//   frame     interval between two frames on screen (QQuickWindow::frameSwapped); with a token
//             every 100 ms and 1 s fades the view animates all the time, so this is the frame time;
//   apply     GUI thread: BrainMonitor::apply of one snapshot (diff of states and hits);
//   sync      GUI thread blocked: BrainItem::updatePaintNode (advance the cells, rewrite the
//             changed cells' vertices) per frame;
//   rewritten cells whose vertices were rewritten per frame;
//   step      the generator's own step (not part of the view: the engine's work in a real run).
#include "app_window.h"
#include "brain_item.h"
#include "engine_controller.h"
#include "gui_test_support.h"
#include "synthetic_driver.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QQmlApplicationEngine>
#include <QQuickWindow>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <numeric>
#include <vector>

using namespace coli;
using namespace coli::app;

namespace {
struct Stats {
    double mean = 0, p50 = 0, p95 = 0, max = 0;
};
Stats stats(std::vector<double> v) {
    Stats s;
    if (v.empty()) return s;
    std::sort(v.begin(), v.end());
    s.mean = std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
    s.p50 = v[v.size() / 2];
    s.p95 = v[std::min(v.size() - 1, size_t(double(v.size()) * 0.95))];
    s.max = v.back();
    return s;
}

int run(const SyntheticOptions& opt, double seconds) {
    QTemporaryDir config;
    qputenv("XDG_CONFIG_HOME", config.path().toLocal8Bit());
    qputenv("XDG_DATA_HOME", config.path().toLocal8Bit());
    EngineController controller(WorkerOptions{.threads = 1});
    QQmlApplicationEngine engine;
    QString error;
    QQuickWindow* window =
        createMainWindow(engine, &controller, {QStringLiteral(COLI_QML_IMPORT_DIR)}, &error);
    if (!window) {
        std::fprintf(stderr, "bench_brain: %s\n", qPrintable(error));
        return 1;
    }
    window->resize(1280, 800);
    if (!QTest::qWaitForWindowExposed(window)) {
        std::fprintf(stderr, "bench_brain: the window was never exposed\n");
        return 1;
    }
    QMetaObject::invokeMethod(window, "showView", Q_ARG(QVariant, QStringLiteral("brain")));
    BrainMonitor* brain = controller.brain();
    SyntheticDriver driver(brain, opt);
    QList<QQuickItem*> found;
    collectItems(window->contentItem(), QStringLiteral("brainCells"), &found);
    auto* cells = found.isEmpty() ? nullptr : qobject_cast<BrainItem*>(found.first());
    if (!cells) {
        std::fprintf(stderr, "bench_brain: no brainCells item\n");
        return 1;
    }

    std::vector<double> frames, applies, syncs, rewritten;
    bool measuring = false;
    QElapsedTimer clock;
    clock.start();
    qint64 lastSwap = -1;
    QObject::connect(
        window, &QQuickWindow::frameSwapped, &driver,
        [&] {
            const qint64 now = clock.nsecsElapsed();
            if (measuring && lastSwap >= 0) frames.push_back(double(now - lastSwap) * 1e-6);
            lastSwap = now;
        },
        Qt::QueuedConnection);
    QObject::connect(brain, &BrainMonitor::changed, &driver, [&] {
        if (measuring) applies.push_back(double(brain->lastApplyNanos()) * 1e-3);
    });
    QObject::connect(cells, &BrainItem::framed, &driver, [&] {
        if (!measuring) return;
        syncs.push_back(double(cells->lastSyncNanos()) * 1e-3);
        rewritten.push_back(double(cells->lastRewritten()));
    });
    driver.start();
    QTest::qWait(2000); // warm-up: the first full draw, fades under way
    measuring = true;
    lastSwap = -1;
    QTest::qWait(int(seconds * 1000));
    measuring = false;
    driver.stop();

    // The generator's own cost per token (outside the view).
    SyntheticTelemetry gen(opt);
    QElapsedTimer st;
    st.start();
    for (int i = 0; i < 100; ++i)
        gen.step();
    const double stepUs = double(st.nsecsElapsed()) * 1e-3 / 100;

    const Stats f = stats(frames), a = stats(applies), s = stats(syncs), r = stats(rewritten);
    std::printf("%dx%d (%d cells): %zu frames in %.0f s (%.1f fps)\n", opt.nLayers, opt.nExperts,
                opt.nLayers * opt.nExperts, frames.size(), seconds,
                double(frames.size()) / seconds);
    std::printf("  frame      mean %.1f ms, p50 %.1f, p95 %.1f, max %.1f\n", f.mean, f.p50, f.p95,
                f.max);
    std::printf("  apply      mean %.0f us, p95 %.0f, max %.0f (%zu snapshots)\n", a.mean, a.p95,
                a.max, applies.size());
    std::printf("  sync       mean %.0f us, p95 %.0f, max %.0f\n", s.mean, s.p95, s.max);
    std::printf("  rewritten  mean %.0f cells per frame, p95 %.0f, max %.0f\n", r.mean, r.p95,
                r.max);
    std::printf("  step       %.0f us per token (generator, not the view)\n", stepUs);
    std::fflush(stdout);
    controller.shutdown();
    return 0;
}
} // namespace

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    double seconds = 10;
    QStringList shapes = {QStringLiteral("75x256"), QStringLiteral("100x400")};
    const QStringList args = app.arguments();
    for (int i = 1; i + 1 < args.size(); ++i) {
        if (args[i] == QLatin1String("--seconds")) seconds = args[i + 1].toDouble();
        if (args[i] == QLatin1String("--shapes")) shapes = args[i + 1].split(',');
    }
    for (const QString& shape : shapes) {
        std::string why;
        const std::optional<SyntheticOptions> opt = parseSyntheticShape(shape.toStdString(), &why);
        if (!opt) {
            std::fprintf(stderr, "bench_brain: --shapes: %s\n", why.c_str());
            return 2;
        }
        if (const int rc = run(*opt, seconds); rc != 0) return rc;
    }
    return 0;
}
