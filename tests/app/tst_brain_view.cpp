// The Brain view in the real window under Xvfb (the CTest command starts xvfb-run), issue 12:
// 1. the default model after a generation: the Brain (Ctrl+5) draws its cells in both modes,
//    screenshots brain-default-{cumulative,turn}.png with pixel checks (cells drew, more than
//    one hue);
// 2. the synthetic 75 x 256 model stepped by the test itself on a frozen clock: one token's
//    routed experts flash (their pixels change) and every other cell's pixels stay; the item
//    rewrote exactly the cells whose state, heat or flash changed (far fewer than 19,200);
//    screenshots brain-synthetic-*.png in both themes, both modes, at 1280x800 and 900x600;
// 3. a click on a cell asks for a user pin of that (layer, expert); the synthetic generator pins
//    it and the cell gets its mark; hover names it.
#include "app_window.h"
#include "brain_item.h"
#include "engine_controller.h"
#include "gui_test_support.h"
#include "synthetic_driver.h"
#include "viz/palette.h"

#include <QApplication>
#include <QDir>
#include <QImage>
#include <QQmlApplicationEngine>
#include <QQuickItem>
#include <QQuickWindow>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <memory>
#include <set>

using namespace coli;
using namespace coli::app;

namespace {
const QString kShots = QStringLiteral(COLI_BINARY_DIR "/screenshots");

struct Window {
    QTemporaryDir config;
    std::unique_ptr<EngineController> controller;
    std::unique_ptr<QQmlApplicationEngine> engine;
    QQuickWindow* window = nullptr;

    Window() {
        qputenv("XDG_CONFIG_HOME", config.path().toLocal8Bit());
        qputenv("XDG_DATA_HOME", config.path().toLocal8Bit());
        controller = std::make_unique<EngineController>(WorkerOptions{.threads = 1});
        GenerateParams p;
        p.maxNewTokens = 48;
        p.ignoreEos = true;
        SamplingOverrides s;
        s.temperature = 0;
        controller->setGenerateParams(p, s);
        engine = std::make_unique<QQmlApplicationEngine>();
        QString error;
        window = createMainWindow(*engine, controller.get(), {QStringLiteral(COLI_QML_IMPORT_DIR)},
                                  &error);
        if (!window) qWarning("%s", qPrintable(error));
    }
    ~Window() {
        controller->shutdown();
        engine.reset();
    }
    BrainItem* cells() const {
        QList<QQuickItem*> found;
        collectItems(window->contentItem(), QStringLiteral("brainCells"), &found);
        return found.isEmpty() ? nullptr : qobject_cast<BrainItem*>(found.first());
    }
    QQuickItem* item(const char* name) const {
        QList<QQuickItem*> found;
        collectItems(window->contentItem(), QString::fromLatin1(name), &found);
        return found.isEmpty() ? nullptr : found.first();
    }
    void setTheme(const QString& theme) {
        window->property("appSettings").value<QObject*>()->setProperty("theme", theme);
    }
    // Renders a frame and returns it: grabWindow runs the sync, where BrainItem advances its
    // cells to the (test's) clock; update() makes sure the item takes part in it.
    QImage grab() {
        if (BrainItem* c = cells()) c->update();
        return window->grabWindow();
    }
};

QPoint centre(BrainItem* item, int layer, int expert) {
    const QRectF r = item->cellRect(layer, expert);
    return item->mapToScene(r.center()).toPoint();
}

// Waits until the window has rendered at `size` and the sheet's place in it has stopped moving
// (the same in two frames in a row): a resize reaches the layout and the renderer
// asynchronously, and on a loaded machine a grab or a cell position read too early belongs to
// the previous size.
bool settleAt(Window& w, BrainItem* cells, QSize size) {
    QRectF last;
    for (int i = 0; i < 100; ++i) {
        QSignalSpy swapped(w.window, &QQuickWindow::frameSwapped);
        cells->update();
        if (!swapped.wait(500)) continue;
        const QRectF sheet = cells->mapRectToScene(cells->sheetRect());
        const bool inside = w.window->size() == size &&
                            QRectF(QPointF(0, 0), QSizeF(size)).contains(sheet) && !sheet.isEmpty();
        if (inside && sheet == last) return true;
        last = sheet;
    }
    return false;
}

// Moves the mouse onto `at` until the hover panel shows. Alternates between `at` and the pixel
// beside it: Qt drops a move to the position the mouse already has, and a hover computed before
// the layout settled may have hidden the panel with the mouse already there.
bool hoverUntilShown(Window& w, QPoint at, const char* panel) {
    for (int i = 0; i < 50; ++i) {
        QTest::mouseMove(w.window, at + QPoint(i % 2, 0));
        if (QTest::qWaitFor([&] { return w.item(panel)->isVisible(); }, 100)) return true;
    }
    return false;
}

// Pixels inside the cells item that are not the sheet's background, and how many distinct hues
// (30-degree buckets of saturated pixels) they have.
std::pair<int, int> drawnPixels(const QImage& shot, BrainItem* item) {
    const QColor bg = item->sheetColor();
    const QRectF r = item->mapRectToScene(item->sheetRect());
    int drawn = 0;
    std::set<int> hues;
    for (int y = int(r.top()); y < int(r.bottom()); ++y)
        for (int x = int(r.left()); x < int(r.right()); ++x) {
            const QColor c = shot.pixelColor(x, y);
            if (std::abs(c.red() - bg.red()) + std::abs(c.green() - bg.green()) +
                    std::abs(c.blue() - bg.blue()) >
                24)
                ++drawn;
            if (c.hsvSaturation() > 60 && c.value() > 60) hues.insert(c.hsvHue() / 30);
        }
    return {drawn, int(hues.size())};
}

bool save(const QImage& shot, const QString& name) {
    QDir().mkpath(kShots);
    return shot.save(kShots + "/" + name);
}
} // namespace

class TestBrainView : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { g_previous = qInstallMessageHandler(recordWarnings); }

    void defaultModelAfterAGeneration() {
        Window w;
        QVERIFY(w.window);
        w.window->resize(1280, 800);
        QVERIFY(QTest::qWaitForWindowExposed(w.window));
        w.controller->loadModel(QStringLiteral(COLI_SHIPPED_MODEL_DIR));
        QTRY_COMPARE_WITH_TIMEOUT(w.controller->loadState(), QStringLiteral("ready"), 60000);
        // Two answers: "this answer" counts the second one's routings only.
        for (const char* prompt : {"Tell me a fortune.", "Quote the Bible."}) {
            QSignalSpy done(w.controller.get(), &EngineController::answerFinished);
            QVERIFY(w.controller->send(QString::fromLatin1(prompt)));
            QVERIFY(done.wait(60000));
        }
        QTest::keyClick(w.window, Qt::Key_5, Qt::ControlModifier);
        QTRY_COMPARE(w.item("viewStack")->property("currentName").toString(),
                     QStringLiteral("brain"));
        BrainMonitor* brain = w.controller->brain();
        QTRY_VERIFY2_WITH_TIMEOUT(brain->available(),
                                  "the engine reported no per-expert states (TierStatus::experts "
                                  "is empty: ExpertCache::telemetry does not fill it)",
                                  5000);
        BrainItem* cells = w.cells();
        QVERIFY(cells);
        QTest::mouseMove(w.window, QPoint(5, w.window->height() - 5)); // no hover panel
        bool turnBelowTotal = false;
        for (int c = 0; c < brain->cells().cellCount(); ++c)
            turnBelowTotal |= brain->cells().turnHits(c) > 0 &&
                              brain->cells().turnHits(c) < brain->cells().totalHits(c);
        QVERIFY2(turnBelowTotal, "the second answer's routings are not apart from the first's");
        QImage shots[2];
        int n = 0;
        for (const QString& mode : {QStringLiteral("cumulative"), QStringLiteral("turn")}) {
            auto* button = w.item(qPrintable("brainMode_" + mode));
            QVERIFY(button);
            QTest::mouseClick(w.window, Qt::LeftButton, {},
                              button->mapToScene(QPointF(button->width() / 2, 8)).toPoint());
            QTRY_COMPARE(brain->mode(), mode);
            QTest::qWait(1200); // the last flashes fade
            const QImage shot = w.grab();
            QVERIFY(save(shot, "brain-default-" + mode + ".png"));
            const auto [drawn, hues] = drawnPixels(shot, cells);
            // Every expert of every layer has a cell of some pixels; the routed ones are lit.
            QVERIFY2(drawn >= brain->nLayers() * brain->nExperts() * 2,
                     qPrintable(QString("%1 pixels drew").arg(drawn)));
            QVERIFY2(hues > 1, qPrintable(QString("%1 hues").arg(hues)));
            shots[n++] = shot.copy(cells->mapRectToScene(cells->sheetRect()).toRect());
        }
        QVERIFY2(shots[0] != shots[1], "the two modes drew the same cells");

        // A click on a cell pins it in the engine (at once while idle): the pin message shows
        // and the next tier status carries the user-pin flag, drawn as the cell's mark.
        const QPoint at = centre(cells, 1, 5);
        QTest::mouseMove(w.window, at);
        QTest::mouseClick(w.window, Qt::LeftButton, {}, at);
        QTRY_VERIFY_WITH_TIMEOUT(
            brain->cells().state(1 * brain->nExperts() + 5) & tiers::kUserPinFlag, 10000);
        QTRY_COMPARE(w.item("brainPinMessage")->property("text").toString(),
                     QStringLiteral("Pinned layer 1 expert 5."));
        QTest::mouseMove(w.window, QPoint(5, w.window->height() - 5));
        QTRY_COMPARE(w.grab().pixelColor(at), brain->userPinMark(cells->dark()));
        QVERIFY(save(w.grab(), "brain-default-user-pin.png"));
    }

    // The engine's 30 Hz tier-status sample reaches the Brain through the TierMonitor (no
    // engine needed: the sample is applied as EngineController's timer applies it); once the
    // synthetic generator drives the Brain, the engine's samples no longer do.
    void tierSampleFeedsTheBrain() {
        EngineController controller(WorkerOptions{.threads = 1});
        BrainMonitor* brain = controller.brain();
        QVERIFY(!brain->available());
        SyntheticOptions opt;
        opt.nLayers = 6;
        opt.nExperts = 16;
        opt.pinnedPerLayer = 2;
        opt.cacheExperts = 24;
        SyntheticTelemetry gen(opt);
        TierStatus s = gen.step();
        s.serial = 1000; // the engine's own counter
        controller.tiers()->apply(s);
        QVERIFY(brain->available());
        QCOMPARE(brain->nLayers(), 6);
        QCOMPARE(brain->nExperts(), 16);
        QCOMPARE(brain->snapshots(), 1);
        const QVariantMap info = brain->cellInfo(2, 3);
        QCOMPARE(info.value("layer").toInt(), 2);
        QCOMPARE(info.value("bytes").toDouble(), double(opt.expertBytes));
        SyntheticDriver driver(brain, opt); // takes over
        const int snapshots = brain->snapshots();
        s = gen.step();
        s.serial = 1001;
        controller.tiers()->apply(s);
        QCOMPARE(brain->snapshots(), snapshots);
    }

    // Experts in VRAM (the GPU tier): the hover names the place, and the legend's swatch and the
    // cells use the palette's sixth state colour (viz/palette.h), apart from the cached one.
    void vramCellsAreNamedAndColoured() {
        EngineController controller(WorkerOptions{.threads = 1});
        BrainMonitor* brain = controller.brain();
        SyntheticOptions opt;
        opt.nLayers = 6;
        opt.nExperts = 16;
        opt.pinnedPerLayer = 2;
        opt.cacheExperts = 24;
        opt.vramExperts = 20;
        SyntheticTelemetry gen(opt);
        TierStatus s;
        for (int t = 0; t < 20; ++t)
            s = gen.step();
        s.serial = 2000;
        controller.tiers()->apply(s);
        QCOMPARE(s.residency.vramExperts, 20);
        int cell = -1;
        for (size_t c = 0; c < s.experts.state.size() && cell < 0; ++c)
            if ((s.experts.state[c] & tiers::kExpertStateMask) == uint8_t(tiers::ExpertState::Vram))
                cell = int(c);
        QVERIFY(cell >= 0);
        const QVariantMap info = brain->cellInfo(cell / 16, cell % 16);
        QCOMPARE(info.value("state").toString(), QStringLiteral("vram"));
        QCOMPARE(info.value("stateName").toString(), QStringLiteral("In VRAM (GPU)"));
        for (const bool dark : {false, true}) {
            const viz::Rgba8 want = viz::brainPalette(dark ? viz::Theme::Dark : viz::Theme::Light)
                                        .states[int(tiers::ExpertState::Vram)];
            QCOMPARE(brain->swatch("vram", 1, 0, dark), QColor(want.r, want.g, want.b));
            QVERIFY(brain->swatch("vram", 1, 0, dark) != brain->swatch("cached", 1, 0, dark));
        }
        // The Tiers view's VRAM row follows the same status.
        QVERIFY(controller.tiers()->vramAvailable());
        QCOMPARE(controller.tiers()->vramExperts(), 20);
    }

    void syntheticTokenFlashesOnlyItsExperts() {
        Window w;
        QVERIFY(w.window);
        w.window->resize(1280, 800);
        QVERIFY(QTest::qWaitForWindowExposed(w.window));
        BrainMonitor* brain = w.controller->brain();
        double clock = 100.0; // seconds, frozen between the test's own steps
        brain->setClock([&clock] { return clock; });
        SyntheticDriver driver(brain, SyntheticOptions{}); // 75 x 256, not started: stepped here
        for (int t = 0; t < 60; ++t) {
            driver.step();
            clock += 0.1;
        }
        QTest::keyClick(w.window, Qt::Key_5, Qt::ControlModifier);
        BrainItem* cells = w.cells();
        QVERIFY(cells);
        QTRY_VERIFY(cells->isVisible() && cells->frames() > 0);
        QTest::mouseMove(w.window, QPoint(5, w.window->height() - 5));
        QVERIFY(!w.item("brainHover")->isVisible());
        QCOMPARE(brain->nLayers() * brain->nExperts(), 19200);

        // Quiet: every flash has faded.
        clock += 2.0;
        w.grab();
        QCOMPARE(brain->cells().fadingCells(), 0);
        for (int attempt = 0;; ++attempt) { // a step that keeps the heat scale (deterministic)
            QVERIFY(attempt < 10);
            const int ceiling = brain->cells().heatCeiling();
            const tiers::ExpertMap before = driver.generator().status().experts;
            const QImage shotBefore = w.grab();
            cells->resetCounters();
            driver.step();
            const QImage shotAfter = w.grab();
            if (brain->cells().heatCeiling() != ceiling) {
                clock += 2.0;
                w.grab();
                continue;
            }
            const tiers::ExpertMap& after = driver.generator().status().experts;
            std::vector<int> routed, untouched;
            int changedCells = 0;
            for (size_t c = 0; c < after.state.size(); ++c) {
                const bool hit = after.hits[c] != before.hits[c];
                if (hit) routed.push_back(int(c));
                if (hit || after.state[c] != before.state[c])
                    ++changedCells;
                else
                    untouched.push_back(int(c));
            }
            QCOMPARE(int(routed.size()), 75 * 8);
            // The adapter rewrote exactly the changed cells, once each.
            QCOMPARE(int(cells->rewrittenCells()), changedCells);
            QVERIFY(changedCells < 19200 / 10);
            const int E = after.nExperts;
            for (const int c : routed) {
                const QPoint p = centre(cells, c / E, c % E);
                QVERIFY2(
                    shotBefore.pixel(p) != shotAfter.pixel(p),
                    qPrintable(QString("routed cell %1/%2 did not flash").arg(c / E).arg(c % E)));
            }
            for (const int c : untouched) {
                const QPoint p = centre(cells, c / E, c % E);
                QVERIFY2(shotBefore.pixel(p) == shotAfter.pixel(p),
                         qPrintable(QString("cell %1/%2 changed").arg(c / E).arg(c % E)));
            }
            QVERIFY(save(shotAfter, "brain-synthetic-flash.png"));
            break;
        }
        // Half a second later the flashed cells are dimmer than at once, and brighter than faded.
        cells->resetCounters();
        clock += 0.5;
        w.grab();
        QCOMPARE(int(cells->rewrittenCells()), 75 * 8);
        clock += 0.6;
        w.grab();
        QCOMPARE(brain->cells().fadingCells(), 0);
        QCOMPARE(cells->geometryBuilds(), 0); // no rebuild for colour changes
    }

    void screenshotsInBothThemesModesAndSizes() {
        Window w;
        QVERIFY(w.window);
        BrainMonitor* brain = w.controller->brain();
        double clock = 0;
        brain->setClock([&clock] { return clock; });
        SyntheticDriver driver(brain, SyntheticOptions{});
        w.window->resize(1280, 800);
        QVERIFY(QTest::qWaitForWindowExposed(w.window));
        QTest::keyClick(w.window, Qt::Key_5, Qt::ControlModifier);
        // Mid-answer: 100 tokens, the last few still fading.
        for (int t = 0; t < 100; ++t) {
            driver.step();
            clock += 0.1;
        }
        BrainItem* cells = w.cells();
        QVERIFY(cells);
        driver.generator().toggleUserPin(40, 7);
        driver.generator().toggleUserPin(41, 200);
        brain->apply(driver.generator().status());
        for (const QString& theme : {QStringLiteral("light"), QStringLiteral("dark")}) {
            w.setTheme(theme);
            for (const QSize size : {QSize(1280, 800), QSize(900, 600)}) {
                w.window->resize(size);
                QVERIFY(settleAt(w, cells, size));
                for (const QString& mode : {QStringLiteral("cumulative"), QStringLiteral("turn")}) {
                    brain->setMode(mode);
                    // Hover a cell: the details panel shows.
                    QVERIFY(hoverUntilShown(w, centre(cells, 30, 100), "brainHover"));
                    const QImage shot = w.grab();
                    QCOMPARE(shot.size(), size);
                    QVERIFY(save(shot, QString("brain-synthetic-%1-%2-%3x%4.png")
                                           .arg(theme, mode)
                                           .arg(size.width())
                                           .arg(size.height())));
                    const auto [drawn, hues] = drawnPixels(shot, cells);
                    QVERIFY(drawn > 19200);
                    QVERIFY(hues > 1);
                }
            }
        }
        QVERIFY2(g_warnings.isEmpty(), qPrintable(g_warnings.join('\n')));
    }

    void clickPinsAndHoverNamesTheCell() {
        Window w;
        QVERIFY(w.window);
        BrainMonitor* brain = w.controller->brain();
        SyntheticDriver driver(brain, SyntheticOptions{});
        w.window->resize(1280, 800);
        QVERIFY(QTest::qWaitForWindowExposed(w.window));
        QTest::keyClick(w.window, Qt::Key_5, Qt::ControlModifier);
        driver.step();
        BrainItem* cells = w.cells();
        QVERIFY(cells);
        QTRY_VERIFY(cells->frames() > 0);
        QSignalSpy pins(brain, &BrainMonitor::userPinRequested);
        const tiers::ExpertMap& map = driver.generator().status().experts;
        QVERIFY(!(map.state[size_t(12 * 256 + 34)] & tiers::kUserPinFlag));
        const QPoint at = centre(cells, 12, 34);
        QTest::mouseMove(w.window, at);
        QTRY_VERIFY(w.item("brainHover")->isVisible());
        QCOMPARE(w.item("brainHoverTitle")->property("text").toString(),
                 QStringLiteral("Layer 12 · expert 34"));
        QVERIFY(w.item("brainHoverTopics")->property("text").toString().contains("no topic probe"));
        QTest::mouseClick(w.window, Qt::LeftButton, {}, at);
        QCOMPARE(pins.count(), 1);
        QCOMPARE(pins.first().at(0).toInt(), 12);
        QCOMPARE(pins.first().at(1).toInt(), 34);
        QVERIFY(map.state[size_t(12 * 256 + 34)] & tiers::kUserPinFlag);
        QTRY_VERIFY(w.item("brainHoverState")->property("text").toString().contains("user pin"));
        // The pinned cell carries the user-pin mark in its middle (the hover outline is around
        // the cell, not on it).
        const QImage shot = w.grab();
        QCOMPARE(shot.pixelColor(at), brain->userPinMark(cells->dark()));
        // Topic shares once a probe ran: the hover shows the top three.
        std::vector<float> shares(size_t(19200) * 4, 0.f);
        shares[size_t(12 * 256 + 34) * 4 + 0] = 0.1f;
        shares[size_t(12 * 256 + 34) * 4 + 1] = 0.5f;
        shares[size_t(12 * 256 + 34) * 4 + 2] = 0.15f;
        shares[size_t(12 * 256 + 34) * 4 + 3] = 0.25f;
        QVERIFY(brain->setTopicShares(shares, {"code", "law", "poetry", "maths"}));
        QVERIFY(!brain->setTopicShares(std::vector<float>(7), {"code"}));
        QTest::mouseMove(w.window, at + QPoint(0, 1));
        QTRY_COMPARE(w.item("brainHoverTopics")->property("text").toString(),
                     QStringLiteral("Topics: law 50 %, maths 25 %, poetry 15 %"));
    }
};

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    TestBrainView t;
    return QTest::qExec(&t, argc, argv);
}
#include "tst_brain_view.moc"
