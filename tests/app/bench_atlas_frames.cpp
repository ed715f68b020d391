// Benchmark (not a test; docs/performance.md "Atlas view"): the Atlas view's frame time with
// live updates, and the GUI thread's cost per telemetry update. A synthetic atlas of L x E
// experts (10 topics) in the real view at 1280x800; a synthetic router routes 8 experts per
// layer at 10 tokens/s (one ExpertMap per token, as the engine publishes them) while the window
// redraws continuously (each frameSwapped requests the next frame). Prints per size: frames,
// median and 95th-percentile frame interval, the mean and worst applyExperts() (telemetry ->
// changed entries) and tick (rewrite changed entries + one commit) on the GUI thread.
// Run: xvfb-run -a -s "-screen 0 1280x800x24" tests/app/bench_atlas_frames [seconds [LxE...]]
#include "atlas/atlas_model.h"
#include "engine_controller.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QQmlApplicationEngine>
#include <QQuickWindow>
#include <QTimer>

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <memory>

using namespace coli;
using namespace coli::app;

namespace {

struct Figures {
    int frames = 0;
    double medianMs = 0, p95Ms = 0, applyMeanMs = 0, applyMaxMs = 0, tickMeanMs = 0, tickMaxMs = 0;
    int tokens = 0;
    double cpuPerFrameMs =
        0; // the process's CPU time (all threads: GUI, render, llvmpipe) per frame
};

double cpuSeconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double percentile(std::vector<double> v, double q) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, size_t(q * double(v.size())))];
}

Figures run(int layers, int experts, double seconds) {
    EngineController controller(WorkerOptions{.threads = 1});
    AtlasModel atlas;
    QQmlApplicationEngine engine;
    engine.addImportPath(QStringLiteral(COLI_QML_IMPORT_DIR));
    engine.setInitialProperties(
        {{QStringLiteral("controller"), QVariant::fromValue<QObject*>(&controller)},
         {QStringLiteral("atlas"), QVariant::fromValue<QObject*>(&atlas)}});
    engine.loadData("import QtQuick\nimport QtQuick.Controls\nimport Colibri\n"
                    "ApplicationWindow { id: w; property QtObject controller; property QtObject "
                    "atlas; width: 1280; height: 800; visible: true; AtlasView { anchors.fill: "
                    "parent; controller: w.controller; atlas: w.atlas } }");
    auto* window = qobject_cast<QQuickWindow*>(engine.rootObjects().value(0));
    if (!window) return {};
    atlas.loadSynthetic(layers, experts, 10);
    atlas.setManualClock(true); // ticks timed here, once per frame
    tiers::ExpertMap map;
    map.nLayers = layers;
    map.nExperts = experts;
    map.state.assign(size_t(layers) * experts, uint8_t(tiers::ExpertState::Disk));
    map.hits.assign(size_t(layers) * experts, 0);
    atlas.applyExperts(map);

    Figures f;
    std::vector<double> intervals, applies, ticks;
    QElapsedTimer clock, frameClock;
    uint64_t rng = 11;
    QTimer tokenTimer;
    tokenTimer.setInterval(100); // 10 tokens/s
    QObject::connect(&tokenTimer, &QTimer::timeout, [&] {
        atlas::routeSyntheticToken(atlas.atlas(), f.tokens % 10, 8, rng, map.hits);
        QElapsedTimer t;
        t.start();
        atlas.applyExperts(map);
        applies.push_back(double(t.nsecsElapsed()) / 1e6);
        ++f.tokens;
    });
    qint64 lastTick = 0;
    // COLI_BENCH_ORBIT=1: the camera turns every frame. Quick 3D renders the scene again only
    // when it changed: without telemetry and without a turning camera a frame is the 2D only.
    const bool orbit = qgetenv("COLI_BENCH_ORBIT") == "1";
    QObject::connect(window, &QQuickWindow::frameSwapped, window, [&] {
        if (frameClock.isValid()) intervals.push_back(double(frameClock.nsecsElapsed()) / 1e6);
        frameClock.start();
        // The frame tick: advance flashes by the real time since the last one.
        const qint64 now = clock.elapsed();
        QElapsedTimer t;
        t.start();
        atlas.advance(int(now - lastTick));
        ticks.push_back(double(t.nsecsElapsed()) / 1e6);
        lastTick = now;
        if (orbit) atlas.orbit(2, 0); // a turning camera: the 3D scene renders every frame
        window->update();
    });
    // Warm-up: the first frames compile shaders and upload the table.
    QElapsedTimer warm;
    warm.start();
    clock.start();
    window->update();
    while (warm.elapsed() < 1500)
        QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
    intervals.clear();
    ticks.clear();
    const double cpu0 = cpuSeconds();
    // COLI_BENCH_STATIC=1: no telemetry (the same redraws without table uploads), to separate
    // drawing from updating.
    if (qgetenv("COLI_BENCH_STATIC") != "1") tokenTimer.start();
    QElapsedTimer total;
    total.start();
    while (total.elapsed() < qint64(seconds * 1000))
        QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
    tokenTimer.stop();
    const double cpu = cpuSeconds() - cpu0;
    controller.shutdown();
    f.frames = int(intervals.size());
    f.cpuPerFrameMs = f.frames ? 1000.0 * cpu / f.frames : 0;
    f.medianMs = percentile(intervals, 0.5);
    f.p95Ms = percentile(intervals, 0.95);
    for (double a : applies)
        f.applyMeanMs += a / double(applies.size());
    f.applyMaxMs = percentile(applies, 1.0);
    for (double t : ticks)
        f.tickMeanMs += t / double(ticks.size());
    f.tickMaxMs = percentile(ticks, 1.0);
    return f;
}

// The model's own work without drawing: 10 s of simulated time, a token every 100 ms, a frame
// tick every 33 ms; returns {mean applyExperts ms per token, mean tick ms}.
std::pair<double, double> modelOnly(int layers, int experts) {
    AtlasModel atlas;
    atlas.setManualClock(true);
    atlas.loadSynthetic(layers, experts, 10);
    tiers::ExpertMap map;
    map.nLayers = layers;
    map.nExperts = experts;
    map.state.assign(size_t(layers) * experts, uint8_t(tiers::ExpertState::Disk));
    map.hits.assign(size_t(layers) * experts, 0);
    atlas.applyExperts(map);
    atlas.advance(0);
    uint64_t rng = 11;
    double apply = 0, tick = 0;
    int tokens = 0, ticks = 0;
    QElapsedTimer t;
    for (int ms = 0; ms < 10000; ms += 33) {
        if (ms / 100 > tokens) {
            atlas::routeSyntheticToken(atlas.atlas(), tokens % 10, 8, rng, map.hits);
            t.start();
            atlas.applyExperts(map);
            apply += double(t.nsecsElapsed()) / 1e6;
            ++tokens;
        }
        t.start();
        atlas.advance(33);
        tick += double(t.nsecsElapsed()) / 1e6;
        ++ticks;
    }
    return {apply / tokens, tick / ticks};
}

} // namespace

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    const double seconds = argc > 1 ? std::atof(argv[1]) : 10.0;
    std::printf("model only (no drawing, 30 Hz ticks, 10 tokens/s):\n");
    for (auto [l, e] : {std::pair{75, 256}, std::pair{80, 500}}) {
        const auto [apply, tick] = modelOnly(l, e);
        std::printf("  %d experts: applyExperts %.3f ms per token, tick %.3f ms\n", l * e, apply,
                    tick);
    }
    std::printf("experts  frames  median_ms  p95_ms  tokens  apply_mean_ms  apply_max_ms  "
                "tick_mean_ms  tick_max_ms  cpu_per_frame_ms\n");
    // Sizes as LxE arguments after the seconds (default: 75x256 and 80x500).
    std::vector<std::pair<int, int>> sizes;
    for (int i = 2; i < argc; ++i) {
        int l = 0, e = 0;
        if (std::sscanf(argv[i], "%dx%d", &l, &e) == 2 && l > 0 && e > 0) sizes.push_back({l, e});
    }
    if (sizes.empty()) sizes = {{75, 256}, {80, 500}};
    for (auto [l, e] : sizes) {
        const Figures f = run(l, e, seconds);
        std::printf("%7d  %6d  %9.1f  %6.1f  %6d  %13.3f  %12.3f  %12.3f  %11.3f  %16.1f\n", l * e,
                    f.frames, f.medianMs, f.p95Ms, f.tokens, f.applyMeanMs, f.applyMaxMs,
                    f.tickMeanMs, f.tickMaxMs, f.cpuPerFrameMs);
        std::fflush(stdout);
    }
    return 0;
}
