// The Atlas view in a real window under Xvfb (the CTest command starts xvfb-run; Quick 3D draws
// nothing under the offscreen platform): a synthetic 75 x 256 atlas (the topic probe's data for
// the default model does not exist yet) drawn from two camera angles in light and dark at two
// window sizes (screenshots/atlas_*.png), pixel checks that points drew and that the angles
// differ; CPU picking agrees with Quick 3D's own projection and a real click selects the point
// under it; experts routed between two telemetry samples flash (their pixels change) and the
// instance table rewrites exactly the changed entries; topic toggles and find-by-(layer, expert).
#include "app_window.h"
#include "atlas/atlas_model.h"
#include "engine_controller.h"
#include "gui_test_support.h"
#include "storage/atlas_store.h"

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

struct View {
    std::unique_ptr<EngineController> controller;
    std::unique_ptr<AtlasModel> atlas;
    std::unique_ptr<QQmlApplicationEngine> engine;
    QQuickWindow* window = nullptr;

    explicit View(int w = 1280, int h = 800) {
        controller = std::make_unique<EngineController>(WorkerOptions{.threads = 1});
        atlas = std::make_unique<AtlasModel>();
        atlas->setManualClock(true); // the test steps time: flashes at known ages
        engine = std::make_unique<QQmlApplicationEngine>();
        engine->addImportPath(QStringLiteral(COLI_QML_IMPORT_DIR));
        engine->setInitialProperties(
            {{QStringLiteral("controller"), QVariant::fromValue<QObject*>(controller.get())},
             {QStringLiteral("atlas"), QVariant::fromValue<QObject*>(atlas.get())}});
        engine->loadData(
            QStringLiteral("import QtQuick\nimport QtQuick.Controls\nimport Colibri\n"
                           "ApplicationWindow { id: w; property QtObject controller; "
                           "property QtObject atlas; property bool dark: false; "
                           "width: %1; height: %2; visible: true; color: Theme.background; "
                           "Binding { target: Theme; property: 'dark'; value: w.dark } "
                           "AtlasView { anchors.fill: parent; controller: w.controller; "
                           "atlas: w.atlas } }")
                .arg(w)
                .arg(h)
                .toUtf8());
        if (!engine->rootObjects().isEmpty())
            window = qobject_cast<QQuickWindow*>(engine->rootObjects().first());
    }
    ~View() {
        controller->shutdown();
        engine.reset();
    }
    QQuickItem* find(const QString& name) const {
        QList<QQuickItem*> items;
        collectItems(window->contentItem(), name, &items);
        return items.isEmpty() ? nullptr : items.first();
    }
    QQuickItem* scene() const { return find(QStringLiteral("atlasScene")); }
    // A frame with the latest table on screen.
    QImage grab() {
        window->update();
        QTest::qWait(50);
        return window->grabWindow();
    }
    // The scene's rectangle in the grabbed image (device pixels).
    QRect sceneRect() const {
        QQuickItem* s = scene();
        const qreal dpr = window->devicePixelRatio();
        const QPointF tl = s->mapToScene(QPointF(0, 0));
        return QRect(int(tl.x() * dpr), int(tl.y() * dpr), int(s->width() * dpr),
                     int(s->height() * dpr));
    }
    QPointF toWindow(QPointF inScene) const { return scene()->mapToScene(inScene); }
};

int colourDistance(QRgb a, QRgb b) {
    return std::abs(qRed(a) - qRed(b)) + std::abs(qGreen(a) - qGreen(b)) +
           std::abs(qBlue(a) - qBlue(b));
}

// Pixels of the scene area that are not the scene's background colour (the corner pixel).
int drawnPixels(const QImage& img, const QRect& r) {
    const QRgb bg = img.pixel(r.left() + 3, r.top() + 3);
    int n = 0;
    for (int y = r.top(); y < r.bottom(); y += 2)
        for (int x = r.left(); x < r.right(); x += 2)
            if (colourDistance(img.pixel(x, y), bg) > 30) ++n;
    return n;
}

int differingPixels(const QImage& a, const QImage& b, const QRect& r) {
    int n = 0;
    for (int y = r.top(); y < r.bottom(); y += 2)
        for (int x = r.left(); x < r.right(); x += 2)
            if (colourDistance(a.pixel(x, y), b.pixel(x, y)) > 30) ++n;
    return n;
}

// Points whose projection has no other visible point within `px` pixels: a click or a pixel
// sample there can only be that point (the nearest one drawn on top or not).
std::vector<int> isolatedPoints(const AtlasModel& m, double w, double h, double px, int limit) {
    std::vector<QPointF> p(size_t(m.count()));
    for (int i = 0; i < m.count(); ++i)
        p[size_t(i)] = m.projectPoint(i, w, h);
    std::vector<int> out;
    for (int i = 0; i < m.count() && int(out.size()) < limit; i += m.count() > 5000 ? 7 : 1) {
        const QPointF q = p[size_t(i)];
        if (q.x() < 40 || q.y() < 40 || q.x() > w - 40 || q.y() > h - 40) continue;
        bool alone = true;
        for (int j = 0; j < m.count() && alone; ++j)
            if (j != i && std::abs(p[size_t(j)].x() - q.x()) < px &&
                std::abs(p[size_t(j)].y() - q.y()) < px)
                alone = false;
        if (alone) out.push_back(i);
    }
    return out;
}

} // namespace

class TestAtlasView : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        g_previous = qInstallMessageHandler(recordWarnings);
        QDir().mkpath(kShots);
    }

    void drawsTheGalaxyFromTwoAngles_data() {
        QTest::addColumn<bool>("dark");
        QTest::addColumn<QSize>("size");
        QTest::newRow("light-1280x800") << false << QSize(1280, 800);
        QTest::newRow("dark-1280x800") << true << QSize(1280, 800);
        QTest::newRow("light-900x600") << false << QSize(900, 600);
        QTest::newRow("dark-900x600") << true << QSize(900, 600);
    }
    void drawsTheGalaxyFromTwoAngles() {
        QFETCH(bool, dark);
        QFETCH(QSize, size);
        g_warnings.clear();
        View v(size.width(), size.height());
        QVERIFY(v.window);
        v.window->setProperty("dark", dark);
        QVERIFY(QTest::qWaitForWindowExposed(v.window));
        v.atlas->loadSynthetic(75, 256, 10);
        QCOMPARE(v.atlas->count(), 19200);
        v.atlas->advance(0);
        QVERIFY(v.scene() && v.scene()->isVisible());
        // A few hot experts, so the shot shows heat as well.
        tiers::ExpertMap map;
        map.nLayers = 75;
        map.nExperts = 256;
        map.state.assign(19200, uint8_t(tiers::ExpertState::Disk));
        uint64_t rng = 7;
        for (int t = 0; t < 200; ++t)
            atlas::routeSyntheticToken(v.atlas->atlas(), t % 3, 8, rng, map.hits);
        v.atlas->applyExperts(map);
        v.atlas->advance(0);

        const QString tag = QStringLiteral("%1_%2x%3")
                                .arg(dark ? "dark" : "light")
                                .arg(size.width())
                                .arg(size.height());
        v.atlas->setCameraAngles(30, -20);
        const QImage a = v.grab();
        v.atlas->setCameraAngles(130, 45);
        const QImage b = v.grab();
        QVERIFY(a.save(kShots + "/atlas_" + tag + "_angle1.png"));
        QVERIFY(b.save(kShots + "/atlas_" + tag + "_angle2.png"));
        const QRect r = v.sceneRect();
        const int area = (r.width() / 2) * (r.height() / 2);
        const int drawnA = drawnPixels(a, r), drawnB = drawnPixels(b, r);
        QVERIFY2(drawnA > area / 50 && drawnB > area / 50,
                 qPrintable(QStringLiteral("points drew on %1 and %2 of %3 samples")
                                .arg(drawnA)
                                .arg(drawnB)
                                .arg(area)));
        const int diff = differingPixels(a, b, r);
        QVERIFY2(diff > area / 100,
                 qPrintable(QStringLiteral("the angles differ on %1 samples").arg(diff)));
        QVERIFY2(g_warnings.isEmpty(), qPrintable(g_warnings.join("\n")));
    }

    void pickingMatchesQuick3dAndAClickSelects() {
        View v;
        QVERIFY(v.window);
        QVERIFY(QTest::qWaitForWindowExposed(v.window));
        v.atlas->loadSynthetic(75, 256, 10);
        v.atlas->advance(0);
        v.grab();
        QQuickItem* scene = v.scene();
        const double w = scene->width(), h = scene->height();
        // The model's view-projection is Quick 3D's: View3D.mapFrom3DScene agrees to a pixel.
        for (int i : {0, 4711, 19199}) {
            const auto& e = v.atlas->atlas().experts[size_t(i)];
            QVector3D q;
            QVERIFY(QMetaObject::invokeMethod(scene, "mapFrom3DScene", Q_RETURN_ARG(QVector3D, q),
                                              Q_ARG(QVector3D, QVector3D(e.x, e.y, e.z))));
            const QPointF mine = v.atlas->projectPoint(i, w, h);
            QVERIFY2(std::abs(mine.x() - q.x()) < 1.0 && std::abs(mine.y() - q.y()) < 1.0,
                     qPrintable(QStringLiteral("point %1: model (%2, %3), Quick 3D (%4, %5)")
                                    .arg(i)
                                    .arg(mine.x())
                                    .arg(mine.y())
                                    .arg(q.x())
                                    .arg(q.y())));
        }
        // A real click on an isolated point's projection selects it; the panel names it.
        const std::vector<int> alone = isolatedPoints(*v.atlas, w, h, 4, 3);
        QVERIFY(!alone.empty());
        for (int i : alone) {
            const QPointF at = v.toWindow(v.atlas->projectPoint(i, w, h));
            QTest::mouseClick(v.window, Qt::LeftButton, {}, at.toPoint());
            QTRY_COMPARE(v.atlas->selected(), i);
            const auto& e = v.atlas->atlas().experts[size_t(i)];
            auto* title = v.find(QStringLiteral("atlasDetailsTitle"));
            QVERIFY(title);
            QTRY_COMPARE(title->property("text").toString(),
                         QStringLiteral("Layer %1 · expert %2").arg(e.layer).arg(e.expert));
        }
        // A click on empty space clears the selection.
        QTest::mouseClick(v.window, Qt::LeftButton, {}, v.toWindow(QPointF(3, 3)).toPoint());
        QTRY_COMPARE(v.atlas->selected(), -1);
        QVERIFY(v.grab().save(kShots + "/atlas_picked.png"));
    }

    void routedExpertsFlashAndOnlyChangedEntriesAreRewritten() {
        View v;
        QVERIFY(v.window);
        v.window->setProperty("dark", true);
        QVERIFY(QTest::qWaitForWindowExposed(v.window));
        // Fewer points than the 19,200 above, so that most routed ones have the screen around them
        // to themselves and their pixels can be sampled.
        v.atlas->loadSynthetic(24, 64, 10);
        v.atlas->advance(0);
        tiers::ExpertMap map;
        map.nLayers = 24;
        map.nExperts = 64;
        map.state.assign(24 * 64, uint8_t(tiers::ExpertState::Disk));
        map.hits.assign(24 * 64, 0);
        v.atlas->applyExperts(map); // the baseline: nothing grew
        QCOMPARE(v.atlas->advance(16), 0);

        // One synthetic token: 8 experts per layer routed.
        uint64_t rng = 3;
        const std::vector<uint32_t> before = map.hits;
        atlas::routeSyntheticToken(v.atlas->atlas(), 2, 8, rng, map.hits);
        std::vector<int> routed;
        for (int i = 0; i < 24 * 64; ++i)
            if (map.hits[size_t(i)] != before[size_t(i)]) routed.push_back(i);
        QCOMPARE(int(routed.size()), 24 * 8);
        v.grab(); // the panel's width settles once the legend is filled
        const QSizeF sz(v.scene()->width(), v.scene()->height());
        const std::vector<int> alone = isolatedPoints(*v.atlas, sz.width(), sz.height(), 8, 4000);
        std::set<int> aloneSet(alone.begin(), alone.end());
        std::vector<int> probes; // routed points nobody else covers on screen
        for (int i : routed)
            if (aloneSet.count(i)) probes.push_back(i);
        QVERIFY2(probes.size() >= 10, qPrintable(QString::number(probes.size())));
        const QImage calm = v.grab();

        v.atlas->applyExperts(map);
        QCOMPARE(v.atlas->flashing(), 192);
        QCOMPARE(v.atlas->advance(16), 192); // exactly the routed entries
        const QImage flash = v.grab();
        QVERIFY(flash.save(kShots + "/atlas_flash.png"));
        // The flashed points' pixels changed (brighter and bigger).
        const qreal dpr = v.window->devicePixelRatio();
        int changed = 0;
        for (int i : probes) {
            const QPointF p = v.toWindow(v.atlas->projectPoint(i, sz.width(), sz.height())) * dpr;
            if (colourDistance(calm.pixel(p.toPoint()), flash.pixel(p.toPoint())) > 40) ++changed;
        }
        QVERIFY2(changed * 10 >= int(probes.size()) * 8,
                 qPrintable(QStringLiteral("%1 of %2 flashed points changed colour")
                                .arg(changed)
                                .arg(probes.size())));
        // The fade rewrites the flashing entries at each of its steps (not at every tick), then
        // once more when it ends.
        QCOMPARE(v.atlas->advance(16), 0); // 32 ms: still the first step
        QCOMPARE(v.atlas->advance(500), 192);
        QCOMPARE(v.atlas->advance(600), 192); // 1,116 ms: ended
        QCOMPARE(v.atlas->flashing(), 0);
        QCOMPARE(v.atlas->advance(16), 0);
        const QImage after = v.grab();
        int back = 0;
        for (int i : probes) {
            const QPointF p = v.toWindow(v.atlas->projectPoint(i, sz.width(), sz.height())) * dpr;
            if (colourDistance(after.pixel(p.toPoint()), flash.pixel(p.toPoint())) > 40) ++back;
        }
        QVERIFY2(back * 10 >= int(probes.size()) * 8, "the flash did not fade");
        // The same hits again: nothing changes, nothing is rewritten.
        v.atlas->applyExperts(map);
        QCOMPARE(v.atlas->advance(16), 0);
    }

    void topicTogglesHideFromDrawingAndPicking() {
        View v;
        QVERIFY(v.window);
        QVERIFY(QTest::qWaitForWindowExposed(v.window));
        v.atlas->loadSynthetic(75, 256, 10);
        v.atlas->advance(0);
        int topic0 = 0;
        for (const auto& e : v.atlas->atlas().experts)
            topic0 += e.topic == 0;
        QVERIFY(topic0 > 0);
        auto* toggle = v.find(QStringLiteral("atlasTopic_0"));
        QVERIFY(toggle);
        const QImage shown = v.grab();
        QTest::mouseClick(
            v.window, Qt::LeftButton, {},
            toggle->mapToScene(QPointF(toggle->width() / 2, toggle->height() / 2)).toPoint());
        QTRY_VERIFY(!v.atlas->legend().first().toMap().value("visible").toBool());
        QCOMPARE(v.atlas->advance(0), topic0); // exactly the hidden topic's entries
        const QImage hidden = v.grab();
        QVERIFY(hidden.save(kShots + "/atlas_topic_hidden.png"));
        QVERIFY(differingPixels(shown, hidden, v.sceneRect()) > 0);
        // No topic-0 point can be picked, even at its own projection.
        const double w = v.scene()->width(), h = v.scene()->height();
        for (int i = 0; i < v.atlas->count(); i += 97)
            if (v.atlas->atlas().experts[size_t(i)].topic == 0) {
                const QPointF p = v.atlas->projectPoint(i, w, h);
                QVERIFY(v.atlas->pick(p.x(), p.y(), w, h) != i);
            }
        // Nor found by (layer, expert).
        for (const auto& e : v.atlas->atlas().experts)
            if (e.topic == 0) {
                QVERIFY(!v.atlas->findExpert(e.layer, e.expert));
                break;
            }
    }

    void toggleRewritesOnlyThatTopic() {
        AtlasModel m;
        m.setManualClock(true);
        m.loadSynthetic(75, 256, 10);
        m.advance(0);
        int topic3 = 0;
        for (const auto& e : m.atlas().experts)
            topic3 += e.topic == 3;
        m.setTopicVisible(3, false);
        QCOMPARE(m.advance(0), topic3);
        m.setTopicVisible(3, true);
        QCOMPARE(m.advance(0), topic3);
        QCOMPARE(m.advance(0), 0);
    }

    // Only entries that really change count: experts whose hits grew while the view was hidden
    // (no flash) and whose size is already at its cap keep the same entry.
    void unchangedEntriesAreNotRewritten() {
        AtlasModel m;
        m.setManualClock(true);
        m.loadSynthetic(10, 32, 4);
        m.advance(0);
        tiers::ExpertMap map;
        map.nLayers = 10;
        map.nExperts = 32;
        map.state.assign(320, uint8_t(tiers::ExpertState::Disk));
        map.hits.assign(320, 100000); // far beyond the size cap
        m.applyExperts(map);
        QCOMPARE(m.advance(0), 320); // every point grew to the cap
        m.setActive(false);
        for (int i = 0; i < 320; i += 3)
            ++map.hits[size_t(i)];
        m.applyExperts(map);
        QCOMPARE(m.advance(0), 0); // hits grew, nothing drawn changed
        map.hits[5] = 0;           // a smaller size (a new load's counts): this one changes
        m.applyExperts(map);
        QCOMPARE(m.advance(0), 1);
    }

    void findCentresTheExpert() {
        View v;
        QVERIFY(v.window);
        QVERIFY(QTest::qWaitForWindowExposed(v.window));
        v.atlas->loadSynthetic(75, 256, 10);
        v.atlas->advance(0);
        auto* layer = v.find(QStringLiteral("atlasFindLayer"));
        auto* expert = v.find(QStringLiteral("atlasFindExpert"));
        auto* button = v.find(QStringLiteral("atlasFindButton"));
        QVERIFY(layer && expert && button);
        auto type = [&](QQuickItem* field, const QString& text) {
            QTest::mouseClick(
                v.window, Qt::LeftButton, {},
                field->mapToScene(QPointF(field->width() / 2, field->height() / 2)).toPoint());
            for (QChar c : text)
                QTest::keyClick(v.window, c.toLatin1());
        };
        type(layer, "41");
        type(expert, "200");
        QTest::mouseClick(
            v.window, Qt::LeftButton, {},
            button->mapToScene(QPointF(button->width() / 2, button->height() / 2)).toPoint());
        const int i = v.atlas->indexOf(41, 200);
        QTRY_COMPARE(v.atlas->selected(), i);
        const double w = v.scene()->width(), h = v.scene()->height();
        const QPointF p = v.atlas->projectPoint(i, w, h);
        QVERIFY(std::abs(p.x() - w / 2) < 1 && std::abs(p.y() - h / 2) < 1);
        auto* ring = v.find(QStringLiteral("atlasSelectionRing")); // marks it on screen
        QVERIFY(ring);
        QTRY_VERIFY(ring->isVisible());
        const QPointF ringCentre =
            ring->mapToItem(v.scene(), QPointF(ring->width() / 2, ring->height() / 2));
        QVERIFY(std::abs(ringCentre.x() - p.x()) < 1 && std::abs(ringCentre.y() - p.y()) < 1);
        QVERIFY(v.grab().save(kShots + "/atlas_found.png"));
        // An expert that does not exist: a message, the selection stays.
        layer->setProperty("text", "");
        type(layer, "99");
        QTest::mouseClick(
            v.window, Qt::LeftButton, {},
            button->mapToScene(QPointF(button->width() / 2, button->height() / 2)).toPoint());
        auto* msg = v.find(QStringLiteral("atlasFindMessage"));
        QTRY_VERIFY(msg->property("text").toString().contains("No expert 200 in layer 99"));
        QCOMPARE(v.atlas->selected(), i);
    }

    // The default model with its real probe atlas (tests/app/data/atlas_default_model.json, made
    // by `coli atlas resources/models/colibri-moe-tiny --json ...`): the model's own telemetry
    // during an answer reaches the view through the TierMonitor (heat grows, experts flash).
    void defaultModelAtlasLightsUpDuringAnAnswer() {
        View v;
        QVERIFY(v.window);
        v.window->setProperty("dark", true);
        QVERIFY(QTest::qWaitForWindowExposed(v.window));
        QVERIFY2(v.atlas->loadFile(
                     QStringLiteral(COLI_SOURCE_DIR "/tests/app/data/atlas_default_model.json")),
                 qPrintable(v.atlas->lastError()));
        QCOMPARE(v.atlas->source(), QStringLiteral("probe"));
        QCOMPARE(v.atlas->count(), 6 * 16);
        v.atlas->setTiers(v.controller->tiers());
        GenerateParams p;
        p.maxNewTokens = 40;
        p.ignoreEos = true;
        v.controller->setGenerateParams(p, {});
        v.controller->loadModel(QStringLiteral(COLI_SHIPPED_MODEL_DIR));
        QTRY_COMPARE_WITH_TIMEOUT(v.controller->loadState(), QStringLiteral("ready"), 60000);
        v.atlas->advance(0);
        v.atlas->setCameraAngles(30, -20);
        const QImage before = v.grab();
        QVERIFY(before.save(kShots + "/atlas_default_model_angle1.png"));
        const QRect r = v.sceneRect();
        QVERIFY(drawnPixels(before, r) > 0);
        v.atlas->setCameraAngles(130, 45);
        const QImage other = v.grab();
        QVERIFY(other.save(kShots + "/atlas_default_model_angle2.png"));
        QVERIFY(differingPixels(before, other, r) > 0);
        v.atlas->setCameraAngles(30, -20);
        v.grab();

        QSignalSpy done(v.controller.get(), &EngineController::answerFinished);
        QVERIFY(v.controller->send(QStringLiteral("Tell me a fortune.")));
        QVERIFY(done.wait(60000));
        QTest::qWait(100); // the last telemetry sample (~30 Hz)
        // The manual clock held every flash: the experts routed during the answer flash now.
        QVERIFY2(v.controller->tiers()->status().experts.nExperts == 16,
                 "the engine's per-expert map (TierStatus::experts) is empty");
        QVERIFY2(v.atlas->flashing() > 0, "no expert flashed during the answer");
        uint64_t hits = 0;
        for (int i = 0; i < v.atlas->count(); ++i)
            hits += v.atlas->hits(i);
        QVERIFY(hits > 0);
        QCOMPARE(v.atlas->advance(16), v.atlas->flashing());
        const QImage lit = v.grab();
        QVERIFY(lit.save(kShots + "/atlas_default_model_flash.png"));
        QVERIFY(differingPixels(before, lit, r) > 0);
    }

    // The app's wiring (createMainWindow): the controller's newest stored probe of the loaded
    // model (what the topic probe's glue hands over after a load or a run) becomes the Atlas's
    // data, shares = slots / (topic tokens x top-k); its removal falls back to "none"; the
    // probe's button is live once a model is ready.
    void storedProbeOfTheLoadedModelIsShown() {
        EngineController controller(WorkerOptions{.threads = 1});
        QQmlApplicationEngine engine;
        QString error;
        QQuickWindow* window =
            createMainWindow(engine, &controller, {QStringLiteral(COLI_QML_IMPORT_DIR)}, &error);
        QVERIFY2(window, qPrintable(error));
        auto* atlas = qobject_cast<AtlasModel*>(window->property("atlas").value<QObject*>());
        QVERIFY(atlas);
        controller.loadModel(QStringLiteral(COLI_SHIPPED_MODEL_DIR));
        QTRY_COMPARE_WITH_TIMEOUT(controller.loadState(), QStringLiteral("ready"), 60000);
        QTRY_COMPARE(atlas->source(), QStringLiteral("none")); // the shipped model has no file

        auto probe = std::make_shared<storage::AtlasProbe>();
        probe->nLayers = 6;
        probe->nExperts = 16;
        probe->topK = 2;
        probe->topics = {{"a", "Alpha", 20, 1000}, {"b", "Beta", 20, 500}};
        probe->counts = {{3, 7, 0, 1200}, {3, 7, 1, 100}};
        probe->positions = {{3, 7, 1.0, 2.0, 3.0, 0, true}, {0, 0, -1.0, 0.0, 0.5, {}, false}};
        controller.setAtlasProbe(controller.modelDir(), probe);
        QCOMPARE(atlas->source(), QStringLiteral("probe"));
        QCOMPARE(atlas->count(), 2);
        const int i = atlas->indexOf(3, 7);
        QVERIFY(i >= 0);
        atlas->select(i);
        const QVariantMap d = atlas->details();
        QCOMPARE(d.value("topic").toString(), QStringLiteral("Alpha"));
        QVERIFY(d.value("specialist").toBool());
        const QVariantList shares = d.value("shares").toList();
        QCOMPARE(shares.size(), 2);
        QCOMPARE(float(shares[0].toMap().value("share").toDouble()), 1200.0f / 2000.0f);
        QCOMPARE(float(shares[1].toMap().value("share").toDouble()), 100.0f / 1000.0f);
        QCOMPARE(atlas->atlas().experts[size_t(atlas->indexOf(0, 0))].topic, -1);
        // The Brain's hover names the same probe's topics: (3, 7)'s profile 0.6 : 0.1 of Alpha
        // and Beta, normalised to sum to 1.
        BrainMonitor* brain = controller.brain();
        QTRY_VERIFY(brain->topicsAvailable());
        const QVariantList topics = brain->cellInfo(3, 7).value("topics").toList();
        QCOMPARE(topics.size(), 2);
        QCOMPARE(topics[0].toMap().value("label").toString(), QStringLiteral("Alpha"));
        QCOMPARE(float(topics[0].toMap().value("share").toDouble()), float(0.6 / 0.7));
        QVERIFY(brain->cellInfo(0, 0).value("topics").toList().isEmpty()); // never routed

        QList<QQuickItem*> run;
        collectItems(window->contentItem(), QStringLiteral("atlasRunProbe"), &run);
        QCOMPARE(run.size(), 1);
        QVERIFY(run.first()->isEnabled()); // the controller has runTopicProbe, a model is ready

        controller.setAtlasProbe(controller.modelDir(), nullptr);
        QCOMPARE(atlas->source(), QStringLiteral("none"));
        QVERIFY(!brain->topicsAvailable());
        controller.shutdown();
    }

    void withoutProbeDataTheViewSaysSo() {
        View v(900, 600);
        QVERIFY(v.window);
        QVERIFY(QTest::qWaitForWindowExposed(v.window));
        QCOMPARE(v.atlas->source(), QStringLiteral("none"));
        auto* empty = v.find(QStringLiteral("atlasEmpty"));
        QVERIFY(empty && empty->isVisible());
        QVERIFY(!v.scene()->isVisible());
        auto* run = v.find(QStringLiteral("atlasRunProbe"));
        QVERIFY(run && run->isVisible());
        QVERIFY(v.grab().save(kShots + "/atlas_no_data.png"));
    }
};

int main(int argc, char** argv) {
    // The window's settings (theme, size) come from a temporary folder, not the user's.
    QTemporaryDir config;
    qputenv("XDG_CONFIG_HOME", config.path().toLocal8Bit());
    QApplication app(argc, argv);
    TestAtlasView t;
    return QTest::qExec(&t, argc, argv);
}

#include "tst_atlas_view.moc"
